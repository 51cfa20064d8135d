"""What a drift pass reads from the store and writes back.

Scores are read from ``scores_by_scorer`` and decisions from ``decisions_by_scorer`` (ordered by
scorer and span start, read through FINAL so a replayed score counts once), aggregated in the store:
per series and side, the count of each distinct score (rounded to 1e-3) and the per-bucket means for the
streaming detector, and the decision counts. Findings become ``score_drift`` rows; notifications
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

from tracescore.ingest.store.clickhouse import Store
from tracescore.scoring.drift.detect import Finding, SeriesData, SeriesKey, State, Windows
from tracescore.scoring.drift.stats import Counts
from tracescore.scoring.prebuilt.registry import former_ids

DRIFT_COLUMNS = (
    "CheckedAt", "ScorerId", "ServiceName", "AgentName", "BaselineStart", "BaselineEnd", "WindowStart",
    "WindowEnd", "BaselineN", "WindowN", "BaselineMean", "WindowMean", "BaselineSd", "WindowSd",
    "MeanShiftSd", "KsStatistic", "KsPValue", "MannWhitneyPValue", "Psi", "PsiPValue", "BaselinePassRate",
    "WindowPassRate", "PassRatePValue", "BaselineFailureRate", "WindowFailureRate", "FailureRatePValue",
    "Cusum", "CusumAlarm", "PValue", "Effect", "Drifted", "Severity", "State", "Reasons",
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

# One scan for both: the count and sum of scores per bucket over the whole span from the earlier start
# to the window's end, and the count of each distinct score per side (rounded to 1e-3). Grouped by
# bucket, where each bucket keeps its scores of either side; each series' scores are then sorted and
# counted by value. (Grouping by value as well, or in a grouping set of its own, gives a hash table of
# every (series, side, value): twice the time of this in the store.) Each series is one row of flat
# arrays, numbers the client turns into lists in bulk, where arrays of tuples cost it a Python tuple
# per element.
_SCORES = f"""
SELECT ScorerId, ServiceName, AgentName, {_RUNS.format(s="Baseline")}, {_RUNS.format(s="Window")},
       arrayMap(x -> x.1, Buckets) AS BucketStarts, arrayMap(x -> x.2, Buckets) AS BucketSizes,
       arrayMap(x -> x.3, Buckets) AS BucketTotals
FROM (
    SELECT Scorer AS ScorerId, ServiceName, AgentName,
           arraySort(groupArray((Bucket, N, Total))) AS Buckets,
           arraySort(arrayFlatten(groupArray(BaselineScores))) AS Baseline,
           arraySort(arrayFlatten(groupArray(WindowScores))) AS Window
    FROM (
        SELECT Scorer, ServiceName, AgentName, Bucket, count() AS N, sum(Score) AS Total,
               groupArrayIf(Value, Side = 0) AS BaselineScores, groupArrayIf(Value, Side = 1) AS WindowScores
        FROM (
            SELECT {_SCORER} AS Scorer, ServiceName, AgentName, Score, round(Score, 3) AS Value,
                   {_SIDE} AS Side,
                   toUnixTimestamp(toStartOfInterval(SpanStart, toIntervalSecond({{{{bucket:UInt32}}}})))
                       AS Bucket
            FROM {{database}}.scores_by_scorer FINAL
            WHERE SpanStart >= {{{{first:DateTime64(9)}}}} AND SpanStart < {{{{w1:DateTime64(9)}}}}
        )
        GROUP BY Scorer, ServiceName, AgentName, Bucket
    )
    GROUP BY Scorer, ServiceName, AgentName
)
"""

_DECISIONS = f"""
SELECT Scorer AS ScorerId, ServiceName, AgentName, Side, sum(Failed) AS Failed, sum(Decided) AS Decided
FROM (
    SELECT {_SCORER} AS Scorer, ServiceName, AgentName, {_SIDE} AS Side,
           countIf(Decision = 'failed') AS Failed, countIf(Decision IN ('scored', 'failed')) AS Decided
    FROM {{database}}.decisions_by_scorer FINAL
    WHERE {_RANGE}
    GROUP BY ScorerId, ServiceName, AgentName, Side
)
GROUP BY Scorer, ServiceName, AgentName, Side
"""

_LAST_STATES = f"""
SELECT Scorer AS ScorerId, ServiceName, AgentName, argMax(State, CheckedAt) AS State
FROM (SELECT {_SCORER} AS Scorer, ServiceName, AgentName, State, CheckedAt FROM {{database}}.score_drift)
GROUP BY Scorer, ServiceName, AgentName
"""

_LAST_ALERTS = """
SELECT Webhook, arrayJoin(Series) AS Name, max(SentAt) AS Last
FROM {database}.drift_notifications
WHERE Kind = 'alert' AND Delivered = 1 AND SentAt >= {{since:DateTime64(3)}}
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
    def __init__(self, store: Store) -> None:
        self._store = store

    async def read(
        self, windows: Windows, bucket_seconds: int, thresholds: Mapping[str, tuple[float, str]]
    ) -> dict[SeriesKey, SeriesData]:
        """Every series with a score or decision in the baseline or the window."""
        database = self._store.quoted_database
        sides = {"w0": windows.window_start, "w1": windows.window_end}
        sides |= {"b0": windows.baseline_start, "b1": windows.baseline_end}
        empty = Counts.of({})
        first = min(windows.baseline_start, windows.window_start)
        renamed = _renamed()
        params = sides | renamed | {"first": first, "bucket": bucket_seconds}
        baseline_end = windows.baseline_end.timestamp()
        series: dict[SeriesKey, SeriesData] = {}
        for row in await self._store.query(_SCORES.format(database=database), params):
            starts = np.array(row["BucketStarts"], dtype=np.float64)
            totals = np.array(row["BucketTotals"], dtype=np.float64)
            sizes = np.array(row["BucketSizes"], dtype=np.float64)
            series[_key(row)] = SeriesData(
                _counts(row["BaselineValues"], row["BaselineCounts"]),
                _counts(row["WindowValues"], row["WindowCounts"]),
                bucket_means=(totals / sizes).tolist(),
                bucket_sizes=[int(n) for n in row["BucketSizes"]],
                baseline_buckets=int(np.count_nonzero(starts < baseline_end)),
            )

        for row in await self._store.query(_DECISIONS.format(database=database), sides | renamed):
            if row["Side"] < 0:
                continue
            data = series.setdefault(_key(row), SeriesData(empty, empty))
            counts = (int(row["Failed"]), int(row["Decided"]))
            if row["Side"] == 1:
                data.window_decisions = counts
            else:
                data.baseline_decisions = counts
        for (scorer, _, _), data in series.items():
            data.threshold = thresholds.get(scorer)
        return series

    async def write(self, findings: Sequence[Finding], checked_at: datetime) -> None:
        if findings:
            await self._store.insert("score_drift", [_row(f, checked_at) for f in findings], DRIFT_COLUMNS)

    async def last_states(self) -> dict[SeriesKey, State]:
        sql = _LAST_STATES.format(database=self._store.quoted_database)
        rows = await self._store.query(sql, _renamed())
        return {_key(row): row["State"] for row in rows}

    async def last_alerts(self, since: datetime) -> dict[str, dict[str, datetime]]:
        """Per webhook, when each series' last alert was delivered to it, if after ``since``."""
        sql = _LAST_ALERTS.format(database=self._store.quoted_database)
        found: dict[str, dict[str, datetime]] = defaultdict(dict)
        for row in await self._store.query(sql, {"since": since}):
            found[row["Webhook"]][row["Name"]] = _naive(row["Last"]).replace(tzinfo=UTC)
        return found

    async def record(self, notifications: Sequence[Notification]) -> None:
        if notifications:
            rows = [
                [n.sent_at, n.webhook, n.kind, n.series, n.attempts, int(n.delivered), n.error, n.payload]
                for n in notifications
            ]
            await self._store.insert("drift_notifications", rows, NOTIFICATION_COLUMNS)


def _renamed() -> dict[str, list[str]]:
    """The parameters of ``_SCORER``: the former ids and the names they map to."""
    renamed = former_ids()
    return {"formerly": list(renamed), "now": list(renamed.values())}


def _counts(values: Sequence[float], counts: Sequence[int]) -> Counts:
    """One side's value counts, as the store sorted them (distinct values, ascending)."""
    return Counts(np.array(values, dtype=np.float64), np.array(counts, dtype=np.float64))


def _key(row: Mapping[str, Any]) -> SeriesKey:
    return (row["ScorerId"], row["ServiceName"], row["AgentName"])


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
        list(f.reasons),
    ]  # fmt: skip
