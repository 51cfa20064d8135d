"""The closed hours a drift pass keeps between passes, and how it tells whether one is still current.

A pass reads the week of scores in chunks of whole buckets (an hour with the default bucket). A chunk
that lies wholly on one side of the comparison (baseline, window, or neither) is kept after its read:
per series and scorer version its value counts, bucket sizes and sums, and per series its decision
counts. Versions are kept apart, so a change of version reads no chunk again: the pass picks each
series' current version from what it kept (``scoring.drift.version_changes``). The next pass checks every
chunk with one query without FINAL (per chunk, the count of stored row versions and a sum of their
hashes) and reads again, through FINAL, only the chunks whose check changed, the ones it has not kept
and the ones a side boundary cuts (the open hour, the window's and the baseline's edges). A merge that
drops a replaced row changes the count: that chunk is read again, which is slower, never wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from tracescore.scoring.drift.detect import SeriesData, SeriesKey, Windows
from tracescore.scoring.drift.stats import Counts
from tracescore.scoring.drift.version_changes import VersionedKey

# One table's count of stored row versions per chunk (bucket-aligned seconds since the epoch) and a
# sum of hashes of their numbers (span start, version, and the score); no FINAL, so it costs a plain
# scan. (Hashing the string columns too cost three times the FINAL read it saves.) An insert or a
# merge changes the count; an insert and a merge in one interval change the sum. Scores and decisions
# are added per chunk: a change to either changes the check.
_CHECK_TABLE = """
    SELECT toUnixTimestamp(toStartOfInterval(SpanStart, toIntervalSecond({{{{chunk:UInt32}}}}))) AS Chunk,
           count() AS N,
           sum(cityHash64(SpanStart, Version, {read})) AS Hash
    FROM {{database}}.{table}
    WHERE SpanStart >= {{{{first:DateTime64(9)}}}} AND SpanStart < {{{{w1:DateTime64(9)}}}}
    GROUP BY Chunk"""
CHECK = f"""
SELECT Chunk, sum(N) AS N, sum(Hash) AS Hash FROM (
    {_CHECK_TABLE.format(read="Score", table="scores_by_scorer")}
    UNION ALL
    {_CHECK_TABLE.format(read="toString(Decision)", table="decisions_by_scorer")}
)
GROUP BY Chunk
"""

Check = tuple[int, int]
Ints = np.ndarray[Any, np.dtype[np.int64]]
Floats = np.ndarray[Any, np.dtype[np.float64]]

# Above this many (side, series, value) cells a pass adds value counts by sorting their keys instead
# of counting into a dense table (64 MB of float64).
_DENSE_CELLS = 1 << 23


@dataclass
class Hour:
    """One chunk as read: what its check gave then (None: no rows), the side it lay on (None: cut by
    a side boundary), and per series its value counts, buckets and decisions, as flat arrays (one
    pass adds up a week of them in a few array operations, where objects per series and chunk cost
    Python time per object).

    Value counts are runs of (series, side, value code, count), sorted by series; a code indexes the
    monitor's table of distinct values. Buckets are (series, start, size, sum of scores) in time order
    per series; decisions (series, side, failed, scored or failed). A series of scores is one scorer
    version of a series (``Catalog.keys``); a series of decisions has none (``Catalog.decided``)."""

    check: Check | None
    side: int | None
    series: Ints
    sides: Ints
    codes: Ints
    counts: Ints
    bucket_series: Ints
    bucket_starts: Ints
    bucket_sizes: Ints
    bucket_totals: Floats
    decision_series: Ints
    decision_sides: Ints
    decisions: Ints  # rows of (failed, scored or failed)


@dataclass
class Catalog:
    """The series and distinct score values the kept chunks name by number: the series of scores by
    scorer version, those of decisions (which have none) apart, so that the value-count tables are as
    large as the series of scores."""

    keys: dict[VersionedKey, int] = field(default_factory=dict)
    decided: dict[SeriesKey, int] = field(default_factory=dict)
    codes: dict[float, int] = field(default_factory=dict)

    def series(self, keys: Iterable[VersionedKey]) -> Ints:
        """The numbers of ``keys`` (new ones added)."""
        return _numbered(self.keys, keys)

    def decision_series(self, keys: Iterable[SeriesKey]) -> Ints:
        """The numbers of the series ``keys`` of decisions (new ones added)."""
        return _numbered(self.decided, keys)

    def code(self, values: Floats) -> Ints:
        """The codes of ``values`` (a code per distinct value, new ones added)."""
        distinct, at = np.unique(values, return_inverse=True)
        codes = np.array([self.codes.setdefault(float(v), len(self.codes)) for v in distinct], dtype=np.int64)
        return codes[at].reshape(-1)


def _numbered(known: dict[Any, int], keys: Iterable[Any]) -> Ints:
    # One dict operation per key, no call: a cold pass names ~340,000 (series, chunk) pairs.
    return np.array([known.setdefault(key, len(known)) for key in keys], dtype=np.int64)


def chunk_seconds(bucket_seconds: int) -> int:
    """Whole buckets of about an hour, so no bucket straddles two chunks."""
    return bucket_seconds * max(1, 3_600 // bucket_seconds)


def side_of(windows: Windows, start: datetime, end: datetime) -> int | None:
    """The side every moment of [start, end) falls in (1 the window, 0 the baseline, -1 neither), or
    None when a side boundary cuts it."""
    edges = (windows.baseline_start, windows.baseline_end, windows.window_start, windows.window_end)
    if any(start < edge < end for edge in edges):
        return None
    if windows.window_start <= start and end <= windows.window_end:
        return 1
    if windows.baseline_start <= start and end <= windows.baseline_end:
        return 0
    return -1


def checks(rows: Sequence[Mapping[str, Any]]) -> dict[int, Check]:
    return {int(row["Chunk"]): (int(row["N"]), int(row["Hash"])) for row in rows}


def assemble(
    hours: Mapping[int, tuple[Hour, int | None]], catalog: Catalog, totals: Totals, baseline_end: float
) -> dict[VersionedKey, SeriesData]:
    """Each versioned series' inputs to the statistics from its chunks (by start, in time order, each with its
    side this pass): exactly what one read of the whole span gives, value counts added per value and
    buckets side by side."""
    keys, decided = list(catalog.keys), list(catalog.decided)
    tallies = _tally(hours, len(keys), catalog, totals)
    buckets = _buckets([hour for hour, _ in hours.values()], len(keys))
    decisions, decided_rows = _decisions(list(hours.values()), len(decided))
    series: dict[VersionedKey, SeriesData] = {}
    for i in np.flatnonzero(np.bincount(buckets[0], minlength=len(keys))).tolist():
        starts, sizes, totals_ = (part[buckets[4][i] : buckets[4][i + 1]] for part in buckets[1:4])
        series[keys[i]] = SeriesData(
            tallies(0, i),
            tallies(1, i),
            bucket_means=(totals_ / sizes).tolist(),
            bucket_sizes=sizes.astype(np.int64).tolist(),
            baseline_buckets=int(np.count_nonzero(starts < baseline_end)),
        )
    for j in np.flatnonzero(decided_rows).tolist():
        series[(*decided[j], None)] = SeriesData(
            _NO_COUNTS,
            _NO_COUNTS,
            baseline_decisions=(int(decisions[0, j, 0]), int(decisions[0, j, 1])),
            window_decisions=(int(decisions[1, j, 0]), int(decisions[1, j, 1])),
        )
    return dict(sorted(series.items(), key=lambda item: _order(item[0])))


def _order(key: VersionedKey) -> tuple[str, str, str, str]:
    """A versioned key in order (a series' decisions, of no version, first)."""
    scorer, service, agent, version = key
    return scorer, service, agent, "" if version is None else f"v{version}"


def _entry_sides(side: int | None, per_entry: Ints) -> Ints:
    """Each entry's side this pass: the chunk's (a whole chunk may have moved from the window to the
    baseline since it was read), or as read when a boundary cuts the chunk."""
    return per_entry if side is None else np.full(len(per_entry), side, dtype=np.int64)


@dataclass
class Totals:
    """The value counts of the whole chunks on a side, per (side, series, value rank) as a dense
    table, kept from pass to pass: a pass takes off the chunks that left, changed or moved side and
    adds the new ones, where adding up a week of chunks cost about a second a pass. Counts are whole
    numbers, exact in float64, so taking a chunk off leaves exactly the sums without it. A new series
    or value changes the layout: the table is then added up again from every chunk."""

    counted: dict[int, tuple[Hour, int]] = field(default_factory=dict)  # by chunk start, with its side
    table: Floats = field(default_factory=lambda: np.zeros(0))
    layout: tuple[int, int] = (0, 0)  # (series, values) the table is laid out for

    def update(self, counted: dict[int, tuple[Hour, int]], layout: tuple[int, int], rank: Ints) -> Floats:
        """The table of ``counted`` (the whole chunks of this pass on a side)."""
        if layout != self.layout:
            self.table = _dense(list(counted.values()), [], layout, rank)
        else:
            gone = [was for start, was in self.counted.items() if not _same(counted.get(start), was)]
            new = [now for start, now in counted.items() if not _same(self.counted.get(start), now)]
            if gone or new:
                self.table = self.table + _dense(new, gone, layout, rank)
        self.counted, self.layout = counted, layout
        return self.table


def _same(a: tuple[Hour, int] | None, b: tuple[Hour, int]) -> bool:
    return a is not None and a[0] is b[0] and a[1] == b[1]


def _dense(
    added: Sequence[tuple[Hour, int | None]],
    taken: Sequence[tuple[Hour, int]],
    layout: tuple[int, int],
    rank: Ints,
) -> Floats:
    """The value counts of ``added`` less those of ``taken``, per (side, series, value rank)."""
    n_series, n_values = layout
    keys, weights = _cells(added, n_series, n_values, rank)
    if taken:  # (a cold pass takes nothing: no copy of its ~9M cells then)
        taken_keys, taken_counts = _cells(taken, n_series, n_values, rank)
        keys, weights = np.concatenate([keys, taken_keys]), np.concatenate([weights, -taken_counts])
    # Float64 (weighted); asarray only tells the type checker, without a copy.
    return np.asarray(np.bincount(keys, weights=weights, minlength=2 * n_series * n_values), dtype=np.float64)


def _cells(
    hours: Sequence[tuple[Hour, int | None]], n_series: int, n_values: int, rank: Ints
) -> tuple[Ints, Ints]:
    """The value-count entries on a side of ``hours``, as keys ordered by (side, series, value rank)
    (ranks, not codes, so values come out ascending), with their counts."""
    # Whole chunks outside both sides are left out as chunks: an entry of a chunk a boundary cuts is
    # on the side it was read on, never outside (the read keeps only values on a side). So no mask
    # over the entries, each of which costs a pass and a copy of every array (a cold pass: ~9M).
    on_a_side = [(h, side) for h, side in hours if side is None or side >= 0]
    empty = [np.empty(0, np.int64)]
    keys = np.concatenate([_entry_sides(side, h.sides) for h, side in on_a_side] or empty)
    keys *= n_series
    keys += np.concatenate([h.series for h, _ in on_a_side] or empty)
    keys *= n_values
    keys += rank[np.concatenate([h.codes for h, _ in on_a_side] or empty)]
    return keys, np.concatenate([h.counts for h, _ in on_a_side] or empty)


def _tally(
    hours: Mapping[int, tuple[Hour, int | None]], n_series: int, catalog: Catalog, totals: Totals
) -> Callable[[int, int], Counts]:
    """Every chunk's value counts added per (side, series, value); gives one side of one series."""
    values = np.array(list(catalog.codes), dtype=np.float64)
    order = np.argsort(values, kind="stable")
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(len(values))
    n_values = max(len(values), 1)
    if 2 * n_series * n_values <= _DENSE_CELLS:
        whole = {start: (h, side) for start, (h, side) in hours.items() if side is not None and side >= 0}
        cut = [(h, side) for h, side in hours.values() if side is None]
        table = totals.update(whole, (n_series, n_values), rank) + _dense(cut, [], (n_series, n_values), rank)
        distinct = np.flatnonzero(table)
        sums = table[distinct]
    else:
        totals.counted, totals.layout = {}, (0, 0)
        keys, weights = _cells(list(hours.values()), n_series, n_values, rank)
        distinct, at = np.unique(keys, return_inverse=True)
        sums = np.asarray(np.bincount(at.reshape(-1), weights=weights, minlength=len(distinct)), np.float64)
    bounds = np.searchsorted(distinct, np.arange(2 * n_series + 1) * n_values)
    sorted_values = values[order]

    def side(which: int, i: int) -> Counts:
        a, b = bounds[which * n_series + i], bounds[which * n_series + i + 1]
        return Counts(sorted_values[distinct[a:b] % n_values], sums[a:b].astype(np.float64))

    return side


def _buckets(hours: Sequence[Hour], n_series: int) -> tuple[Ints, Ints, Floats, Floats, Ints]:
    """All buckets grouped by series, in time order within each (a stable sort of chunks in time
    order), and where each series' run starts."""
    series = np.concatenate([h.bucket_series for h in hours] or [np.empty(0, np.int64)])
    by_series = np.argsort(series, kind="stable")
    starts = np.concatenate([h.bucket_starts for h in hours] or [np.empty(0, np.int64)])[by_series]
    sizes = np.concatenate([h.bucket_sizes for h in hours] or [np.empty(0, np.int64)])[by_series]
    totals = np.concatenate([h.bucket_totals for h in hours] or [np.empty(0, np.float64)])[by_series]
    bounds = np.searchsorted(series[by_series], np.arange(n_series + 1))
    return series, starts, sizes.astype(np.float64), totals, bounds


def _decisions(hours: Sequence[tuple[Hour, int | None]], n_series: int) -> tuple[Ints, Ints]:
    """Per (side, series) the (failed, decided) sums, and per series how many decision rows it has on
    either side."""
    sides = np.concatenate(
        [_entry_sides(side, h.decision_sides) for h, side in hours] or [np.empty(0, np.int64)]
    )
    series = np.concatenate([h.decision_series for h, _ in hours] or [np.empty(0, np.int64)])
    pairs = np.concatenate([h.decisions for h, _ in hours] or [np.empty((0, 2), np.int64)])
    on_a_side = sides >= 0
    cells = sides[on_a_side] * n_series + series[on_a_side]
    sums = np.stack(
        [np.bincount(cells, weights=pairs[on_a_side, j], minlength=2 * n_series) for j in (0, 1)], axis=-1
    ).reshape(2, n_series, 2)
    rows = np.bincount(series[on_a_side], minlength=n_series)
    return sums.astype(np.int64), rows


def hours_of(
    scores: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    catalog: Catalog,
    found: Mapping[int, Check],
    spans: Mapping[int, int | None],
) -> dict[int, Hour]:
    """The chunks read (a row per chunk of the scores query and of the decisions query) as Hours."""
    by_chunk = {int(row["Chunk"]): row for row in scores}
    decided = {int(row["Chunk"]): row for row in decisions}
    return {
        start: _hour(by_chunk.get(start), decided.get(start), found.get(start), side, catalog)
        for start, side in spans.items()
    }


def _hour(
    scores: Mapping[str, Any] | None,
    decisions: Mapping[str, Any] | None,
    check: Check | None,
    side: int | None,
    catalog: Catalog,
) -> Hour:
    scores = scores or _NO_SCORES
    decisions = decisions or _NO_DECISIONS
    ids = _series_ids(scores, catalog)
    lengths = (ints(scores["BaselineLengths"]), ints(scores["WindowLengths"]))
    values = np.array(scores["BaselineValuesFlat"] + scores["WindowValuesFlat"], dtype=np.float64)
    return Hour(
        check, side, np.concatenate([np.repeat(ids, n) for n in lengths]),
        np.repeat([0, 1], [int(n.sum()) for n in lengths]).astype(np.int64), catalog.code(values),
        ints(scores["BaselineCountsFlat"] + scores["WindowCountsFlat"]),
        np.repeat(ids, ints(scores["BucketLengths"])), ints(scores["BucketStartsFlat"]),
        ints(scores["BucketSizesFlat"]), np.array(scores["BucketTotalsFlat"], dtype=np.float64),
        _decision_series_ids(decisions, catalog), ints(decisions["Sides"]),
        np.array([decisions["Failed"], decisions["Decided"]], dtype=np.int64).reshape(2, -1).T,
    )  # fmt: skip


def ints(values: Sequence[int]) -> Ints:
    return np.array(values, dtype=np.int64)


def _series_ids(row: Mapping[str, Any], catalog: Catalog) -> Ints:
    """The catalog numbers of a row's series of scores, by version."""
    keys = zip(row["Scorers"], row["Services"], row["Agents"], row["Versions"], strict=True)
    return catalog.series(keys)


def _decision_series_ids(row: Mapping[str, Any], catalog: Catalog) -> Ints:
    """The catalog numbers of a row's series of decisions."""
    return catalog.decision_series(zip(row["Scorers"], row["Services"], row["Agents"], strict=True))


_NO_SCORES: dict[str, list[Any]] = {
    name: []
    for name in (
        "Scorers", "Services", "Agents", "BaselineLengths", "BaselineValuesFlat", "BaselineCountsFlat",
        "WindowLengths", "WindowValuesFlat", "WindowCountsFlat", "BucketLengths", "BucketStartsFlat",
        "BucketSizesFlat", "BucketTotalsFlat", "Versions",
    )
}  # fmt: skip
_NO_COUNTS = Counts(np.zeros(0), np.zeros(0))
_NO_DECISIONS: dict[str, list[Any]] = {
    name: [] for name in ("Scorers", "Services", "Agents", "Sides", "Failed", "Decided")
}


def series_key(row: Mapping[str, Any]) -> SeriesKey:
    return (row["ScorerId"], row["ServiceName"], row["AgentName"])
