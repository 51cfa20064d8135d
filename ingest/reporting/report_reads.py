"""What the report shows, read from the store: every query of ``tracescore report`` and ``GET /report``.

A row belongs to the report's period by when its run (or span) started (``SpanStart``), as drift's
windows count it, so the charts and the drift findings share one time axis. Score and decision reads
go through ``FINAL`` (a replayed score counts once); every bound is a parameter.

Seams with what other parts add to the store, each read generically so that it shows as soon as the
store holds it:

- decisions of any kind, ``gated`` included, come from one ``GROUP BY Decision``: a gate's decisions
  appear in the decision mix and as judge calls avoided (``ReportData.calls_avoided``);
- version changes are the distinct ``ScorerVersion`` values of ``scores`` in the order each first
  appears (``ScorerVersionSpan``);
- agreement with human labels is the rows of an ``AgreementReader`` (``agreement_rows(store, since,
  until)``) when the store has an ``annotations`` table; without one, "no labels yet".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.durations import unix_nanos

HISTOGRAM_BINS = 20
SERIES_BUCKETS = 120  # points per scorer over the period, at most
GATED_DECISION = "gated"  # a rule held by another rule's result: a judge call avoided

# Reads the agreement of each scorer with human labels over [since, until): one mapping per row.
AgreementReader = Callable[[Store, datetime, datetime], Awaitable[Sequence[Mapping[str, Any]]]]

# Braces doubled: the queries are formatted once with the database name.
_PERIOD = (
    "SpanStart >= fromUnixTimestamp64Nano({{since:Int64}}) "
    "AND SpanStart < fromUnixTimestamp64Nano({{until:Int64}})"
)

_SUMMARY = f"""
SELECT ScorerId, count() AS n, avg(Score) AS mean, min(Score) AS low, max(Score) AS high,
       quantileExact(0.5)(Score) AS median
FROM {{database}}.scores FINAL WHERE {_PERIOD}
GROUP BY ScorerId ORDER BY ScorerId
"""

_SERIES = f"""
SELECT ScorerId,
       intDiv(toUnixTimestamp64Milli(SpanStart), {{{{bucket_ms:UInt64}}}}) * {{{{bucket_ms:UInt64}}}}
           AS BucketMs,
       avg(Score) AS mean, min(Score) AS low, max(Score) AS high, count() AS n
FROM {{database}}.scores FINAL WHERE {_PERIOD}
GROUP BY ScorerId, BucketMs ORDER BY ScorerId, BucketMs
"""

# Each scorer's scores in HISTOGRAM_BINS bins over [min(0, lowest), max(1, highest)].
_HISTOGRAM = f"""
SELECT ScorerId, lo, hi,
       least({HISTOGRAM_BINS - 1}, toUInt32(floor((Score - lo) / (hi - lo) * {HISTOGRAM_BINS}))) AS bin,
       count() AS n
FROM (
    SELECT ScorerId, Score, least(0, min(Score) OVER w) AS lo, greatest(1, max(Score) OVER w) AS hi
    FROM {{database}}.scores FINAL WHERE {_PERIOD}
    WINDOW w AS (PARTITION BY ScorerId)
)
GROUP BY ScorerId, lo, hi, bin ORDER BY ScorerId, bin
"""

_VERSIONS = f"""
SELECT ScorerId, ScorerVersion, min(SpanStart) AS first_seen, max(SpanStart) AS last_seen, count() AS n
FROM {{database}}.scores FINAL WHERE {_PERIOD}
GROUP BY ScorerId, ScorerVersion ORDER BY ScorerId, first_seen
"""

_DECISION_MIX = f"""
SELECT ScorerId, Decision, count() AS n
FROM {{database}}.score_decisions FINAL WHERE {_PERIOD}
GROUP BY ScorerId, Decision ORDER BY ScorerId, Decision
"""

# Why units were not scored, the same reasons grouped; failures first.
_REASONS = f"""
SELECT Decision, ScorerId, Detail, count() AS n, max(SpanStart) AS last_seen,
       argMax(TraceId, SpanStart) AS last_trace
FROM {{database}}.score_decisions FINAL WHERE {_PERIOD} AND Decision != 'scored'
GROUP BY Decision, ScorerId, Detail
ORDER BY Decision = 'failed' DESC, n DESC, ScorerId
LIMIT {{{{limit:UInt32}}}}
"""

_DRIFTED = """
SELECT CheckedAt, ScorerId, ServiceName, AgentName, Severity, Reasons, BaselineMean, WindowMean,
       BaselineN, WindowN, Effect, PValue
FROM {database}.score_drift
WHERE State = 'drifted'
  AND CheckedAt >= fromUnixTimestamp64Nano({{since:Int64}})
  AND CheckedAt < fromUnixTimestamp64Nano({{until:Int64}})
ORDER BY CheckedAt, ScorerId
LIMIT {{limit:UInt32}}
"""

_JUDGE_COST = f"""
SELECT ScorerId, JudgeModel, count() AS n, sum(InputTokens) AS input_tokens,
       sum(OutputTokens) AS output_tokens, sum(CostUsd) AS cost_usd, avg(LatencyMs) AS latency_ms
FROM {{database}}.scores FINAL WHERE {_PERIOD} AND JudgeModel != ''
GROUP BY ScorerId, JudgeModel ORDER BY cost_usd DESC, ScorerId
"""

_LOWEST = f"""
SELECT TraceId, SpanId, ScorerId, Score, Label, Reason, AgentName, ServiceName, SpanStart
FROM {{database}}.scores FINAL WHERE {_PERIOD}
ORDER BY ScorerId, Score, SpanStart DESC
LIMIT {{{{per_scorer:UInt32}}}} BY ScorerId
"""

MAX_REASONS = 50
MAX_DRIFT_FINDINGS = 200


@dataclass(frozen=True)
class ScorerSummary:
    scorer_id: str
    n: int
    mean: float
    low: float
    high: float
    median: float


@dataclass(frozen=True)
class SeriesPoint:
    """The scores of one scorer in one time bucket."""

    at: datetime
    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Histogram:
    """One scorer's score counts in equal bins from ``low`` to ``high``."""

    low: float
    high: float
    counts: tuple[int, ...]


@dataclass(frozen=True)
class ScorerVersionSpan:
    """When one version of a scorer scored, in the period."""

    version: str
    first_seen: datetime
    last_seen: datetime
    n: int


@dataclass(frozen=True)
class DecisionReason:
    decision: str
    scorer_id: str
    detail: str
    n: int
    last_seen: datetime
    last_trace: str


@dataclass(frozen=True)
class DriftMark:
    """A drift pass that found a series drifted."""

    checked_at: datetime
    scorer_id: str
    service_name: str
    agent_name: str
    severity: str
    reasons: tuple[str, ...]
    baseline_mean: float
    window_mean: float
    baseline_n: int
    window_n: int
    p_value: float


@dataclass(frozen=True)
class JudgeCost:
    scorer_id: str
    judge_model: str
    n: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_ms: float


@dataclass(frozen=True)
class LowScore:
    """One of a scorer's lowest scores (what its scorer was given is in ``ReportData.seen``)."""

    trace_id: str
    span_id: str
    scorer_id: str
    score: float
    label: str
    reason: str
    agent_name: str
    service_name: str
    started: datetime


@dataclass(frozen=True)
class Agreement:
    """Agreement with human labels: the reader's rows, one per scorer with labelled units."""

    rows: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ReportData:
    """Everything the page shows, for one period. ``seen``: per lowest score (trace, span, scorer), the
    unit its scorer was given, as ``ingest.reporting.lowest_runs`` shows it."""

    since: datetime
    until: datetime
    store: str
    scorers: tuple[ScorerSummary, ...]
    series: dict[str, tuple[SeriesPoint, ...]]
    histograms: dict[str, Histogram]
    versions: dict[str, tuple[ScorerVersionSpan, ...]]
    decisions: dict[str, dict[str, int]]  # scorer -> decision kind -> count
    reasons: tuple[DecisionReason, ...]
    drift: tuple[DriftMark, ...]
    judge_costs: tuple[JudgeCost, ...]
    lowest: tuple[LowScore, ...]
    agreement: Agreement
    seen: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    @property
    def calls_avoided(self) -> int:
        """Units a gate held back from their rule: each one a scorer call not made."""
        return sum(kinds.get(GATED_DECISION, 0) for kinds in self.decisions.values())


async def read_report(
    store: Store,
    since: datetime,
    until: datetime,
    lowest_per_scorer: int = 3,
    agreement: AgreementReader | None = None,
) -> ReportData:
    """The report's rows for [since, until) (``seen`` is left to ``ingest.reporting.lowest_runs``)."""
    period = {"since": unix_nanos(since), "until": unix_nanos(until)}
    span_ms = max(1, (unix_nanos(until) - unix_nanos(since)) // 1_000_000)
    bucket_ms = max(1000, -(-span_ms // SERIES_BUCKETS))

    async def rows(sql: str, **more: Any) -> list[dict[str, Any]]:
        return await store.query(sql.format(database=store.quoted_database), {**period, **more})

    decisions: dict[str, dict[str, int]] = {}
    for row in await rows(_DECISION_MIX):
        decisions.setdefault(row["ScorerId"], {})[row["Decision"]] = int(row["n"])
    return ReportData(
        since=since,
        until=until,
        store=f"{store.description}, database {store.database}",
        scorers=tuple(ScorerSummary(**_fields(row, ScorerSummary)) for row in await rows(_SUMMARY)),
        series=_series(await rows(_SERIES, bucket_ms=bucket_ms)),
        histograms=_histograms(await rows(_HISTOGRAM)),
        versions=_versions(await rows(_VERSIONS)),
        decisions=decisions,
        reasons=tuple(
            DecisionReason(**_fields(r, DecisionReason)) for r in await rows(_REASONS, limit=MAX_REASONS)
        ),
        drift=tuple(_drift_mark(r) for r in await rows(_DRIFTED, limit=MAX_DRIFT_FINDINGS)),
        judge_costs=tuple(JudgeCost(**_fields(row, JudgeCost)) for row in await rows(_JUDGE_COST)),
        lowest=tuple(
            LowScore(**_fields(r, LowScore)) for r in await rows(_LOWEST, per_scorer=lowest_per_scorer)
        ),
        agreement=await _agreement(store, since, until, agreement),
    )


def _fields(row: Mapping[str, Any], kind: type[Any]) -> dict[str, Any]:
    """The row's values under the dataclass's field names (``ScorerId`` -> ``scorer_id``)."""
    by_name = {_snake(column): value for column, value in row.items()}
    return {f.name: by_name[f.name] for f in fields(kind) if f.name in by_name}


def _snake(column: str) -> str:
    """``ScorerId`` -> ``scorer_id``, ``SpanStart`` -> ``started``; lower-case names stay."""
    if column == "SpanStart":
        return "started"
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in column).lstrip("_")


def _series(rows: list[dict[str, Any]]) -> dict[str, tuple[SeriesPoint, ...]]:
    found: dict[str, list[SeriesPoint]] = {}
    for row in rows:
        at = datetime.fromtimestamp(int(row["BucketMs"]) / 1000, tz=UTC)
        point = SeriesPoint(at, float(row["mean"]), float(row["low"]), float(row["high"]), int(row["n"]))
        found.setdefault(row["ScorerId"], []).append(point)
    return {scorer: tuple(points) for scorer, points in found.items()}


def _histograms(rows: list[dict[str, Any]]) -> dict[str, Histogram]:
    counts: dict[str, list[int]] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for row in rows:
        bins = counts.setdefault(row["ScorerId"], [0] * HISTOGRAM_BINS)
        bins[int(row["bin"])] += int(row["n"])
        ranges[row["ScorerId"]] = (float(row["lo"]), float(row["hi"]))
    return {scorer: Histogram(*ranges[scorer], tuple(bins)) for scorer, bins in counts.items()}


def _versions(rows: list[dict[str, Any]]) -> dict[str, tuple[ScorerVersionSpan, ...]]:
    found: dict[str, list[ScorerVersionSpan]] = {}
    for row in rows:
        span = ScorerVersionSpan(row["ScorerVersion"], row["first_seen"], row["last_seen"], int(row["n"]))
        found.setdefault(row["ScorerId"], []).append(span)
    return {scorer: tuple(spans) for scorer, spans in found.items()}


def _drift_mark(row: Mapping[str, Any]) -> DriftMark:
    values = _fields(row, DriftMark)
    values["reasons"] = tuple(values["reasons"])
    return DriftMark(**values)


async def _agreement(
    store: Store, since: datetime, until: datetime, reader: AgreementReader | None
) -> Agreement:
    rows = await reader(store, since, until) if reader is not None else ()
    return Agreement(rows=tuple(rows))
