"""Which scored units a person should label next (``tracescore annotate``): at random, the lowest
scores of a scorer, or where two scorers disagree most on the same units. Units someone already
labelled under the scorer's id are left out; scores are read through FINAL.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tracescore.ingest.store.clickhouse import Store

Pick = Literal["random", "lowest", "disagreement"]
PICKS: tuple[Pick, ...] = ("random", "lowest", "disagreement")

_UNLABELLED = """(TraceId, SpanId) NOT IN (
    SELECT TraceId, SpanId FROM {database}.annotations FINAL WHERE Name = {{scorer:String}})"""

_ONE_SCORER = """
SELECT TraceId, SpanId, Score, Label FROM {database}.scores FINAL
WHERE ScorerId = {{scorer:String}} AND Timestamp >= {{since:DateTime64(9)}} AND {unlabelled}
ORDER BY {order}
LIMIT {{limit:UInt32}}
"""

# Units both scored: those where their labels differ first, then by how far apart their scores are.
_TWO_SCORERS = """
SELECT a.TraceId AS TraceId, a.SpanId AS SpanId, a.Score AS Score, a.Label AS Label,
       b.Score AS OtherScore, b.Label AS OtherLabel
FROM (
    SELECT TraceId, SpanId, Score, Label FROM {database}.scores FINAL
    WHERE ScorerId = {{scorer:String}} AND Timestamp >= {{since:DateTime64(9)}} AND {unlabelled}
) AS a
INNER JOIN (
    SELECT TraceId, SpanId, Score, Label FROM {database}.scores FINAL
    WHERE ScorerId = {{other:String}} AND Timestamp >= {{since:DateTime64(9)}}
) AS b ON a.TraceId = b.TraceId AND a.SpanId = b.SpanId
ORDER BY (a.Label != '' AND b.Label != '' AND lower(a.Label) != lower(b.Label)) DESC,
         abs(a.Score - b.Score) DESC, a.TraceId
LIMIT {{limit:UInt32}}
"""

_ORDERS = {"random": "rand()", "lowest": "Score ASC, Timestamp DESC"}


class Candidate(BaseModel):
    """A unit to label, with what the scorer (and the other one) gave it."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    score: float
    label: str
    other_score: float | None = None
    other_label: str | None = None


async def pick_units(
    store: Store, pick: Pick, scorer: str, limit: int, since: datetime, other: str | None = None
) -> list[Candidate]:
    """Up to ``limit`` unlabelled units ``scorer`` scored since ``since``, picked as ``pick`` says
    (``disagreement`` needs ``other``)."""
    database = store.quoted_database
    unlabelled = _UNLABELLED.format(database=database)
    params: dict[str, object] = {"scorer": scorer, "since": since, "limit": limit}
    if pick == "disagreement":
        if not other:
            raise ValueError("--pick disagreement needs --other: the scorer to compare with")
        sql = _TWO_SCORERS.format(database=database, unlabelled=unlabelled)
        params["other"] = other
    else:
        sql = _ONE_SCORER.format(database=database, unlabelled=unlabelled, order=_ORDERS[pick])
    rows = await store.query(sql, params)
    return [
        Candidate(
            trace_id=row["TraceId"],
            span_id=row["SpanId"],
            score=row["Score"],
            label=row["Label"],
            other_score=row.get("OtherScore"),
            other_label=row.get("OtherLabel"),
        )
        for row in rows
    ]
