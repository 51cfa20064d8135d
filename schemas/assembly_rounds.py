"""Assembly rounds: which items of a trace a batch of runs was built from, so their decisions can be
marked durably (the store's ``trace_done``) and a recovered round can find what was already decided."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Why the assembler released the trace: its root ended and it went quiet (idle), it waited too long
# for its root (max_wait), items came after an earlier round (late), it was found undecided in the
# store after a restart (recovered), or the service stopped or was asked to flush everything.
RoundReason = Literal["idle", "max_wait", "late", "recovered", "shutdown", "flush"]


@dataclass(frozen=True, slots=True)
class UnitOutcome:
    """What one rule came to on one unit: its decision kind, and its score and label when it scored.
    A cascade's gated rule reads it of its gate (``scoring.rules[].when``), live or from the store."""

    decision: str
    score: float | None = None
    label: str = ""


@dataclass(frozen=True)
class PriorOutcomes:
    """What an earlier attempt at a round already wrote, by (span id, scorer id)."""

    decided: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    # Score rows whose decision row was not written (a crash between the two inserts).
    scored_undecided: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    # Decisions of earlier scoring (a backfill reads them): a pair already scored is left alone, and
    # a pair routed to the same decision again is not written again.
    earlier: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # What each pair above came to (decision, score, label): a cascade's gate decided before a restart
    # is not judged again, and the rules it gates read its result here.
    outcomes: Mapping[tuple[str, str], UnitOutcome] = field(default_factory=dict)


class TraceRound(BaseModel):
    """One assembly round: the trace's items that arrived up to ``through_unix_nano`` (ns since the
    epoch, the span ledger's clock), of which those from ``since_unix_nano`` on are new."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    since_unix_nano: int
    through_unix_nano: int
    reason: RoundReason
    # An earlier attempt at this round may have written decisions or scores (before a crash): the
    # executor reuses them instead of judging again.
    resumed: bool = False
    # What that earlier attempt wrote, when it was read with the round (the assembler asks the store
    # once for a whole release); None: the executor asks for this round alone.
    prior: PriorOutcomes | None = Field(default=None, repr=False)
    # Nothing new since the last decided round (only re-sent copies): mark it decided, score nothing.
    unchanged: bool = False
