"""What an agreement pass reads from the store and writes back.

Pairs: every human label (``annotations``, FINAL: a person's latest label of a unit) with the score of
the same trace, span and scorer id (``scores``, FINAL: a replayed score counts once) written in the
window or the one before it. Findings become ``judge_agreement`` rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.agreement_results import AgreementFinding, AgreementState
from tracescore.scoring.agreement.agreement_findings import Pairs

AGREEMENT_COLUMNS = (
    "CheckedAt", "ScorerId", "WindowStart", "WindowEnd", "Annotators", "LabelPairs", "Kappa", "KappaLow",
    "KappaHigh", "ScorePairs", "Spearman", "SpearmanLow", "SpearmanHigh", "Mae", "MaeLow", "MaeHigh",
    "PreviousLabelPairs", "PreviousKappa", "PreviousScorePairs", "PreviousSpearman", "PreviousMae",
    "DropPValue", "State", "Reasons",
)  # fmt: skip

# The annotations are the small side: the right of the join, held in memory; the scores are read in
# the time range only, and only for the names people labelled under.
_PAIRS = """
SELECT s.ScorerId AS ScorerId, s.Score AS Score, s.Label AS ScoreLabel, a.Value AS Value, a.Label AS Label,
       a.Annotator AS Annotator, s.Timestamp >= {{start:DateTime64(9)}} AS Recent
FROM (
    SELECT TraceId, SpanId, ScorerId, Score, Label, Timestamp
    FROM {database}.scores FINAL
    WHERE Timestamp >= {{before:DateTime64(9)}} AND Timestamp < {{end:DateTime64(9)}}
      AND ScorerId IN (SELECT DISTINCT Name FROM {database}.annotations)
) AS s
INNER JOIN (
    SELECT TraceId, SpanId, Name, Value, Label, Annotator FROM {database}.annotations FINAL
) AS a ON s.TraceId = a.TraceId AND s.SpanId = a.SpanId AND s.ScorerId = a.Name
"""

_LAST_STATES = """
SELECT ScorerId, argMax(State, CheckedAt) AS State FROM {database}.judge_agreement GROUP BY ScorerId
"""


@dataclass
class _Collected:
    """One scorer's pairs in one window, as the rows come."""

    scorer_labels: list[str] = field(default_factory=list)
    human_labels: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    human_values: list[float] = field(default_factory=list)
    annotators: set[str] = field(default_factory=set)

    def add(self, row: dict[str, Any]) -> None:
        self.annotators.add(row["Annotator"])
        # Labels compare without case or surrounding blanks: "Pass" from a person is the judge's "pass".
        scorer_label, human_label = row["ScoreLabel"].strip().lower(), row["Label"].strip().lower()
        if scorer_label and human_label:
            self.scorer_labels.append(scorer_label)
            self.human_labels.append(human_label)
        if row["Value"] is not None:
            self.scores.append(float(row["Score"]))
            self.human_values.append(float(row["Value"]))

    def pairs(self) -> Pairs:
        labels = (self.scorer_labels, self.human_labels)
        return Pairs(*labels, self.scores, self.human_values, frozenset(self.annotators))


async def read_pairs(
    store: Store, before: datetime, start: datetime, end: datetime
) -> tuple[dict[str, Pairs], dict[str, Pairs]]:
    """Each scorer's pairs in ``[start, end)`` and in ``[before, start)``, by when the score was written."""
    sql = _PAIRS.format(database=store.quoted_database)
    recent: dict[str, _Collected] = {}
    earlier: dict[str, _Collected] = {}
    for row in await store.query(sql, {"before": before, "start": start, "end": end}):
        side = recent if row["Recent"] else earlier
        side.setdefault(row["ScorerId"], _Collected()).add(row)
    return _done(recent), _done(earlier)


def _done(collected: dict[str, _Collected]) -> dict[str, Pairs]:
    return {scorer: pairs.pairs() for scorer, pairs in collected.items()}


async def write_findings(store: Store, findings: Sequence[AgreementFinding], checked_at: datetime) -> None:
    if findings:
        rows = [_row(finding, checked_at) for finding in findings]
        await store.insert("judge_agreement", rows, AGREEMENT_COLUMNS)


async def last_states(store: Store) -> dict[str, AgreementState]:
    """Each scorer's state at the last recorded pass."""
    rows = await store.query(_LAST_STATES.format(database=store.quoted_database))
    return {row["ScorerId"]: row["State"] for row in rows}


def _number(value: float | None) -> float:
    return value if value is not None else math.nan


def _row(finding: AgreementFinding, checked_at: datetime) -> list[Any]:
    r, before = finding.row, finding.previous
    return [
        checked_at, r.scorer_id, r.window_start, r.window_end, r.annotators, r.label_pairs,
        _number(r.kappa), _number(r.kappa_low), _number(r.kappa_high), r.score_pairs, _number(r.spearman),
        _number(r.spearman_low), _number(r.spearman_high), _number(r.mae), _number(r.mae_low),
        _number(r.mae_high), before.label_pairs if before else 0, _number(before.kappa if before else None),
        before.score_pairs if before else 0, _number(before.spearman if before else None),
        _number(before.mae if before else None), _number(finding.drop_p_value), finding.state,
        list(finding.reasons),
    ]  # fmt: skip
