"""Scores and scoring decisions: frozen values, validated at construction."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ScoreSource = Literal["live", "backfill", "offline"]
DecisionKind = Literal[
    "scored",
    "sampled_out",
    "filtered",
    "skipped_empty",
    "skipped_too_large",
    "gated",  # another rule's result on the unit held it (a cascade's ``when``)
    "budget_exceeded",
    "failed",
]

# Fixed namespace so a score id is the same on every replica and every replay.
_SCORE_ID_NAMESPACE = uuid.UUID("6f1c1f3e-3b7a-5c1e-9d2a-7a2b1e0c4d55")


def score_id(trace_id: str, span_id: str, scorer_id: str) -> str:
    """Deterministic id of the (span, scorer) pair: replays overwrite rather than duplicate."""
    return str(uuid.uuid5(_SCORE_ID_NAMESPACE, f"{trace_id}:{span_id}:{scorer_id}"))


def _now() -> datetime:
    return datetime.now(UTC)


class Score(BaseModel):
    """A scorer's verdict. ``value`` None means not scored; otherwise it lies in [0, scale]."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: float | None
    label: str | None = None
    reason: str | None = None
    scale: float = 1.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _in_range(self) -> Score:
        if self.value is not None and (not math.isfinite(self.value) or not 0.0 <= self.value <= self.scale):
            raise ValueError(f"score {self.value!r} of {self.name!r} is outside [0, {self.scale}]")
        return self


class ScoreRecord(BaseModel):
    """One row of the ``scores`` table; the live path builds it from a validated ``Score``."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    scorer_id: str
    score: float = Field(ge=0.0, allow_inf_nan=False)
    label: str = ""
    reason: str = ""
    step_results: dict[str, Any] = Field(default_factory=dict)
    judge_model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    sample_rate: float = 1.0
    scorer_version: str = ""
    source: ScoreSource = "live"
    agent_name: str = ""
    service_name: str = ""
    # When the scored span started: the same on every replay of the span, so reads ordered by
    # (scorer, time) can deduplicate on it (``scores_by_scorer``). None: ``created_at`` stands in.
    span_start: datetime | None = None
    # The conversation a session score is about (``target: session``); empty for every other unit.
    session_id: str = ""
    created_at: datetime = Field(default_factory=_now)

    @property
    def score_id(self) -> str:
        return score_id(self.trace_id, self.span_id, self.scorer_id)

    @classmethod
    def from_score(cls, score: Score, *, trace_id: str, span_id: str, **row: Any) -> ScoreRecord:
        """The row of ``score`` (its name is the scorer id) for the run's root span ``span_id``."""
        if score.value is None:
            raise ValueError(f"{score.name!r} did not score the run: there is no row to write")
        return cls.scored(
            score.name,
            score.value,
            label=score.label,
            reason=score.reason,
            metadata=score.metadata,
            trace_id=trace_id,
            span_id=span_id,
            **row,
        )

    @classmethod
    def scored(
        cls,
        scorer_id: str,
        value: float,
        *,
        label: str | None,
        reason: str | None,
        metadata: Mapping[str, Any],
        trace_id: str,
        span_id: str,
        **row: Any,
    ) -> ScoreRecord:
        """The row of a score ``value`` of ``scorer_id`` with its step results ``metadata``. The live
        path builds it straight from a scorer's result (``Scorer.run`` checked the value against the
        scale): an intermediate ``Score`` would only validate it once more, at a third of the row's cost."""
        return cls(
            trace_id=trace_id,
            span_id=span_id,
            scorer_id=scorer_id,
            score=value,
            label=label or "",
            reason=reason or "",
            step_results=_compact(dict(metadata)) if metadata else {},
            **row,
        )


# Step results may quote the run's whole texts (a check's "output"); the spans hold those already.
MAX_STEP_RESULT_CHARS = 1_000


def _compact(value: Any) -> Any:
    """``value`` with every string cut to ``MAX_STEP_RESULT_CHARS`` (the cut marked, its length told)."""
    if isinstance(value, str):
        if len(value) <= MAX_STEP_RESULT_CHARS:
            return value
        return f"{value[:MAX_STEP_RESULT_CHARS]}… [{len(value)} characters]"
    if isinstance(value, dict):
        return {key: _compact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_compact(item) for item in value]
    return value


class JudgeExchange(BaseModel):
    """One request to an LLM judge during a scorer run, as kept with ``scoring.record_judge_io``: the
    messages sent (after redaction) and the raw answer, or why there was none."""

    model_config = ConfigDict(frozen=True)

    model: str
    operation: str = "chat"  # chat, embeddings or moderation
    messages: tuple[dict[str, str], ...] = ()  # {"role": ..., "content": ...}
    answer: str | None = None
    error: str | None = None


class Decision(BaseModel):
    """One row of ``score_decisions``: why a (run, scorer) pair was or was not scored."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    scorer_id: str
    decision: DecisionKind
    detail: str = ""
    sample_rate: float = 1.0
    source: ScoreSource = "live"
    agent_name: str = ""
    service_name: str = ""
    span_start: datetime | None = None  # as ScoreRecord.span_start
    session_id: str = ""  # as ScoreRecord.session_id
    created_at: datetime = Field(default_factory=_now)
    # What the scorer's judges were sent and answered (scoring.record_judge_io); kept in judge_io.
    judge_io: tuple[JudgeExchange, ...] = ()
