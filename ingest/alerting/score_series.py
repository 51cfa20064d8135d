"""What a drift pass reads from the store and writes back.

Scores are read from ``scores_by_scorer`` and decisions from ``decisions_by_scorer`` (ordered by
scorer and span start, read through FINAL so a replayed score counts once), aggregated in the store:
per series, scorer version and side, the count of each distinct score (rounded to 1e-3) and the
per-bucket means for the streaming detector; per series the decision counts. For the few series
whose span holds more than one version, a plain scan of their rows (no FINAL) says when each
version's scores were first and last written. Findings become ``score_drift`` rows; notifications
become ``drift_notifications`` rows.

A series is named by the scorer's id of today: rows stored under a prebuilt scorer's former id
(``toxicity-scorer``) belong to the series of its name (``toxicity``), so a baseline written before the
rename compares with a window written after it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from tracescore.ingest.alerting.score_hours import (
    CHECK,
    Catalog,
    Check,
    Hour,
    Totals,
    assemble,
    checks,
    chunk_seconds,
    hours_of,
    series_key,
    side_of,
)
from tracescore.ingest.store.clickhouse import Store
from tracescore.scoring.drift.detect import Finding, SeriesData, SeriesKey, State, Windows
from tracescore.scoring.drift.stats import Counts
from tracescore.scoring.drift.version_changes import VersionedKey, Written, changed_series
from tracescore.scoring.prebuilt.registry import former_ids, stored_ids

DRIFT_COLUMNS = (
    "CheckedAt", "ScorerId", "ServiceName", "AgentName", "BaselineStart", "BaselineEnd", "WindowStart",
    "WindowEnd", "BaselineN", "WindowN", "BaselineMean", "WindowMean", "BaselineSd", "WindowSd",
    "MeanShiftSd", "KsStatistic", "KsPValue", "MannWhitneyPValue", "Psi", "PsiPValue", "BaselinePassRate",
    "WindowPassRate", "PassRatePValue", "BaselineFailureRate", "WindowFailureRate", "FailureRatePValue",
    "Cusum", "CusumAlarm", "PValue", "Effect", "Drifted", "Severity", "State", "Reasons", "Kind",
    "ScorerVersion", "PreviousVersion", "VersionChangedAt",
)  # fmt: skip
NOTIFICATION_COLUMNS = ("SentAt", "Webhook", "Kind", "Series", "Attempts", "Delivered", "Error", "Payload")

# Which side of the comparison a span start falls in: 1 the window, 0 the baseline, -1 neither.
_SIDE = """multiIf(
    SpanStart >= {{w0:DateTime64(9)}} AND SpanStart < {{w1:DateTime64(9)}}, 1,
    SpanStart >= {{b0:DateTime64(9)}} AND SpanStart < {{b1:DateTime64(9)}}, 0, -1)"""
# The scorer id of today of a stored one (``scoring.prebuilt.registry.canonical_id``, in SQL).
_SCORER = "transform(ScorerId, {{formerly:Array(String)}}, {{now:Array(String)}}, ScorerId)"
_RANGE = """(SpanStart >= {{w0:DateTime64(9)}} AND SpanStart < {{w1:DateTime64(9)}})
    OR (SpanStart >= {{b0:DateTime64(9)}} AND SpanStart < {{b1:DateTime64(9)}})"""

# The distinct values of the sorted array ``{s}`` and how often each occurs (run-length encoding: a
# run starts where a value differs from the one before it; its length is the gap to the next start).
_RUNS = """arrayMap((v, p) -> v != p, {s}, arrayPopBack(arrayPushFront({s}, nan))) AS {s}Starts,
       arrayFilter((v, start) -> start, {s}, {s}Starts) AS {s}Values,
       arrayFilter((i, start) -> start, arrayEnumerate({s}), {s}Starts) AS {s}At,
       arrayMap((a, b) -> b - a, {s}At, arrayPopFront(arrayPushBack({s}At, length({s}) + 1))) AS {s}Counts"""

# Per (series, scorer version, chunk) of the chunks a pass reads (``{{ranges}}``, whole chunks): the
# count and sum of scores per bucket, and the count of each distinct score per side (rounded to
# 1e-3). Grouped by bucket, where each bucket keeps its scores of either side; each chunk's scores are
# then sorted and counted by value. (Grouping by value as well gives a hash table of every (series,
# side, value): twice the time of this in the store.) Each row is flat arrays, numbers the client
# turns into lists in bulk.
_SERIES_CHUNKS = f"""
SELECT ScorerId, ServiceName, AgentName, ScorerVersion, Chunk, {_RUNS.format(s="Baseline")},
       {_RUNS.format(s="Window")},
       arrayMap(x -> x.1, Buckets) AS BucketStarts, arrayMap(x -> x.2, Buckets) AS BucketSizes,
       arrayMap(x -> x.3, Buckets) AS BucketTotals
FROM (
    SELECT Scorer AS ScorerId, ServiceName, AgentName, ScorerVersion, Chunk,
           arraySort(groupArray((Bucket, N, Total))) AS Buckets,
           arraySort(arrayFlatten(groupArray(BaselineScores))) AS Baseline,
           arraySort(arrayFlatten(groupArray(WindowScores))) AS Window
    FROM (
        SELECT Scorer, ServiceName, AgentName, ScorerVersion, Chunk, Bucket, count() AS N,
               sum(Score) AS Total,
               groupArrayIf(Value, Side = 0) AS BaselineScores, groupArrayIf(Value, Side = 1) AS WindowScores
        FROM (
            SELECT {_SCORER} AS Scorer, ServiceName, AgentName, ScorerVersion, Score,
                   round(Score, 3) AS Value,
                   {_SIDE} AS Side,
                   toUnixTimestamp(toStartOfInterval(SpanStart, toIntervalSecond({{{{bucket:UInt32}}}})))
                       AS Bucket,
                   toUnixTimestamp(toStartOfInterval(SpanStart, toIntervalSecond({{{{chunk:UInt32}}}})))
                       AS Chunk
            FROM {{database}}.scores_by_scorer FINAL
            WHERE SpanStart >= {{{{first:DateTime64(9)}}}} AND SpanStart < {{{{w1:DateTime64(9)}}}}
                AND ({{ranges}})
        )
        GROUP BY Scorer, ServiceName, AgentName, ScorerVersion, Chunk, Bucket
    )
    GROUP BY Scorer, ServiceName, AgentName, ScorerVersion, Chunk
)
"""

# One row per chunk, its series' arrays end to end (with each one's length): a week is ~170 rows the
# client converts in bulk, where a row per series and chunk costs it Python objects per row.
_SCORES = f"""
SELECT Chunk, groupArray(ScorerId) AS Scorers, groupArray(ServiceName) AS Services,
       groupArray(AgentName) AS Agents, groupArray(ScorerVersion) AS Versions,
       groupArray(length(BaselineValues)) AS BaselineLengths,
       arrayFlatten(groupArray(BaselineValues)) AS BaselineValuesFlat,
       arrayFlatten(groupArray(BaselineCounts)) AS BaselineCountsFlat,
       groupArray(length(WindowValues)) AS WindowLengths,
       arrayFlatten(groupArray(WindowValues)) AS WindowValuesFlat,
       arrayFlatten(groupArray(WindowCounts)) AS WindowCountsFlat,
       groupArray(length(BucketStarts)) AS BucketLengths,
       arrayFlatten(groupArray(BucketStarts)) AS BucketStartsFlat,
       arrayFlatten(groupArray(BucketSizes)) AS BucketSizesFlat,
       arrayFlatten(groupArray(BucketTotals)) AS BucketTotalsFlat
FROM ({_SERIES_CHUNKS})
GROUP BY Chunk
"""

_DECISIONS = f"""
SELECT Chunk, groupArray(Scorer) AS Scorers, groupArray(ServiceName) AS Services,
       groupArray(AgentName) AS Agents, groupArray(Side) AS Sides, groupArray(Failed) AS Failed,
       groupArray(Decided) AS Decided
FROM (
SELECT Scorer, ServiceName, AgentName, Chunk, Side, sum(Failed) AS Failed, sum(Decided) AS Decided
FROM (
    SELECT {_SCORER} AS Scorer, ServiceName, AgentName, {_SIDE} AS Side,
           toUnixTimestamp(toStartOfInterval(SpanStart, toIntervalSecond({{{{chunk:UInt32}}}}))) AS Chunk,
           countIf(Decision = 'failed') AS Failed, countIf(Decision IN ('scored', 'failed')) AS Decided
    FROM {{database}}.decisions_by_scorer FINAL
    WHERE ({_RANGE}) AND ({{ranges}})
    GROUP BY ScorerId, ServiceName, AgentName, Chunk, Side
)
GROUP BY Scorer, ServiceName, AgentName, Chunk, Side
HAVING Side >= 0
)
GROUP BY Chunk
"""

# When each version of the given scorers' series was first and last written in the pass's span. No
# FINAL: a replaced row was written before its replacement, so it moves neither end past the truth.
_WRITTEN = f"""
SELECT {_SCORER} AS Scorer, ServiceName, AgentName, ScorerVersion,
       toUnixTimestamp64Nano(min(Timestamp)) AS First, toUnixTimestamp64Nano(max(Timestamp)) AS Last
FROM {{database}}.scores_by_scorer
WHERE ScorerId IN {{{{stored:Array(String)}}}}
    AND SpanStart >= {{{{first:DateTime64(9)}}}} AND SpanStart < {{{{w1:DateTime64(9)}}}}
GROUP BY Scorer, ServiceName, AgentName, ScorerVersion
"""

_LAST_STATES = f"""
SELECT Scorer AS ScorerId, ServiceName, AgentName, argMax(State, CheckedAt) AS State
FROM (
    SELECT {_SCORER} AS Scorer, ServiceName, AgentName, State, CheckedAt FROM {{database}}.score_drift
    WHERE Kind = 'drift'
)
GROUP BY Scorer, ServiceName, AgentName
"""

# Per webhook, each series' last delivered notification of a kind (alerts: series names; version
# changes: series@version).
_LAST_TOLD = """
SELECT Webhook, arrayJoin(Series) AS Name, max(SentAt) AS Last
FROM {database}.drift_notifications
WHERE Kind = {{kind:String}} AND Delivered = 1 AND SentAt >= {{since:DateTime64(3)}}
GROUP BY Webhook, Name
"""


@dataclass(frozen=True)
class Notification:
    """One post to one webhook, as recorded."""

    sent_at: datetime
    webhook: str
    kind: str
    series: list[str]
    attempts: int
    delivered: bool
    error: str
    payload: str


class DriftStore:
    """The drift tables of one store, and the chunks of scores the last pass read (``score_hours``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._hours: dict[int, Hour] = {}  # by chunk start; only chunks of the last pass's span
        self._catalog = Catalog()
        self._totals = Totals()  # the kept chunks' value counts added up

    async def read(
        self, windows: Windows, bucket_seconds: int, thresholds: Mapping[str, tuple[float, str]]
    ) -> tuple[dict[VersionedKey, SeriesData], dict[VersionedKey, Written]]:
        """Every series with a score or decision in the baseline or the window, by scorer version
        (decisions: of no version), and when each version's scores were written: the kept chunks whose
        check is unchanged, the others read through FINAL."""
        chunk = chunk_seconds(bucket_seconds)
        first = min(windows.baseline_start, windows.window_start)
        sides = {"w0": windows.window_start, "w1": windows.window_end}
        sides |= {"b0": windows.baseline_start, "b1": windows.baseline_end}
        params = sides | _renamed() | {"first": first, "bucket": bucket_seconds, "chunk": chunk}
        found = checks(await self._store.query(CHECK.format(database=self._store.quoted_database), params))
        spans = _chunks(first, windows.window_end, chunk, windows)
        kept = {start: hour for start, hour in self._hours.items() if _current(hour, start, spans, found)}
        stale = {start: side for start, side in spans.items() if start not in kept}
        hours = kept | await self._read_chunks(stale, chunk, params, found)
        # Only chunks wholly on one side are kept: a boundary moves through the others every pass.
        self._hours = {start: hour for start, hour in hours.items() if hour.side is not None}
        this_pass = {start: (hours[start], side) for start, side in spans.items()}
        series = assemble(this_pass, self._catalog, self._totals, windows.baseline_end.timestamp())
        for (scorer, *_), data in series.items():
            data.threshold = thresholds.get(scorer)
        return series, await self._written(series, params)

    async def _written(
        self, series: Mapping[VersionedKey, SeriesData], params: dict[str, Any]
    ) -> dict[VersionedKey, Written]:
        """When each version of the series with more than one version was written (usually none)."""
        changed = changed_series(series)
        if not changed:
            return {}
        stored = sorted({stored for scorer, *_ in changed for stored in stored_ids(scorer)})
        sql = _WRITTEN.format(database=self._store.quoted_database)
        rows = await self._store.query(sql, params | {"stored": stored})
        found = {
            (row["Scorer"], row["ServiceName"], row["AgentName"], row["ScorerVersion"]): Written(
                int(row["First"]) / 1e9, int(row["Last"]) / 1e9
            )
            for row in rows
        }
        return {key: found[key] for key in changed if key in found}

    async def _read_chunks(
        self, spans: Mapping[int, int | None], chunk: int, params: dict[str, Any], found: Mapping[int, Check]
    ) -> dict[int, Hour]:
        """The given chunks through FINAL."""
        if not spans:
            return {}
        ranges, bounds = _ranges(list(spans), chunk)
        database = self._store.quoted_database
        scores = await self._store.query(_SCORES.format(database=database, ranges=ranges), params | bounds)
        decisions = await self._store.query(
            _DECISIONS.format(database=database, ranges=ranges), params | bounds
        )
        return hours_of(scores, decisions, self._catalog, found, spans)

    async def write(self, findings: Sequence[Finding], checked_at: datetime) -> None:
        if findings:
            await self._store.insert("score_drift", [_row(f, checked_at) for f in findings], DRIFT_COLUMNS)

    async def last_states(self) -> dict[SeriesKey, State]:
        sql = _LAST_STATES.format(database=self._store.quoted_database)
        rows = await self._store.query(sql, _renamed())
        return {series_key(row): row["State"] for row in rows}

    async def last_alerts(self, since: datetime) -> dict[str, dict[str, datetime]]:
        """Per webhook, when each series' last alert was delivered to it, if after ``since``."""
        return await self._last_told("alert", since)

    async def told_changes(self, since: datetime) -> dict[str, set[str]]:
        """Per webhook, the version changes (``series@version``) delivered to it after ``since``."""
        told = await self._last_told("version_change", since)
        return {webhook: set(names) for webhook, names in told.items()}

    async def _last_told(self, kind: str, since: datetime) -> dict[str, dict[str, datetime]]:
        sql = _LAST_TOLD.format(database=self._store.quoted_database)
        found: dict[str, dict[str, datetime]] = defaultdict(dict)
        for row in await self._store.query(sql, {"kind": kind, "since": since}):
            found[row["Webhook"]][row["Name"]] = _naive(row["Last"]).replace(tzinfo=UTC)
        return found

    async def record(self, notifications: Sequence[Notification]) -> None:
        if notifications:
            rows = [
                [n.sent_at, n.webhook, n.kind, n.series, n.attempts, int(n.delivered), n.error, n.payload]
                for n in notifications
            ]
            await self._store.insert("drift_notifications", rows, NOTIFICATION_COLUMNS)


def _chunks(first: datetime, end: datetime, chunk: int, windows: Windows) -> dict[int, int | None]:
    """The chunks from the one holding ``first`` to the one holding ``end`` (exclusive), each with the
    side it lies wholly in, or None when a side boundary cuts it."""
    start = int(first.timestamp()) // chunk * chunk
    spans: dict[int, int | None] = {}
    while start < end.timestamp():
        spans[start] = side_of(windows, _moment(start), _moment(start + chunk))
        start += chunk
    return spans


def _moment(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _current(hour: Hour, start: int, spans: Mapping[int, int | None], found: Mapping[int, Check]) -> bool:
    """Whether a kept chunk serves this pass: still in the span, wholly on one side, its check
    unchanged, and not kept from outside both sides (it has no value counts then) into one."""
    side, kept_side = spans.get(start), hour.side
    if side is None or kept_side is None:
        return False
    return hour.check == found.get(start) and not (kept_side < 0 <= side)


def _ranges(starts: Sequence[int], chunk: int) -> tuple[str, dict[str, datetime]]:
    """A condition on SpanStart for the given chunks, contiguous ones as one range (so the store
    prunes by its key), and its parameters."""
    runs: list[list[int]] = []
    for start in sorted(starts):
        if runs and runs[-1][1] == start:
            runs[-1][1] = start + chunk
        else:
            runs.append([start, start + chunk])
    conditions = [
        f"(SpanStart >= {{r{i}a:DateTime64(9)}} AND SpanStart < {{r{i}b:DateTime64(9)}})"
        for i in range(len(runs))
    ]
    bounds = {
        f"r{i}{end}": _moment(at) for i, run in enumerate(runs) for end, at in zip("ab", run, strict=True)
    }
    return " OR ".join(conditions), bounds


def _renamed() -> dict[str, list[str]]:
    """The parameters of ``_SCORER``: the former ids and the names they map to."""
    renamed = former_ids()
    return {"formerly": list(renamed), "now": list(renamed.values())}


def _counts(values: Sequence[float], counts: Sequence[int]) -> Counts:
    """One side's value counts, as the store sorted them (distinct values, ascending)."""
    return Counts(np.array(values, dtype=np.float64), np.array(counts, dtype=np.float64))


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _finite(value: float) -> float:
    return value if math.isfinite(value) else math.nan


def _row(f: Finding, checked_at: datetime) -> list[Any]:
    w = f.windows
    return [
        checked_at, f.scorer_id, f.service_name, f.agent_name, w.baseline_start, w.baseline_end,
        w.window_start, w.window_end, f.baseline_n, f.window_n, f.baseline_mean, f.window_mean,
        f.baseline_sd, f.window_sd, _finite(f.mean_shift_sd), f.ks_statistic, f.ks_p_value,
        f.mann_whitney_p_value, f.psi, f.psi_p_value, f.baseline_pass_rate, f.window_pass_rate,
        f.pass_rate_p_value, f.baseline_failure_rate, f.window_failure_rate, f.failure_rate_p_value,
        f.cusum, int(f.cusum_alarm), f.p_value, _finite(f.effect), int(f.drifted), f.severity, f.state,
        list(f.reasons), f.kind, f.version, f.previous_version, f.version_changed_at,
    ]  # fmt: skip
