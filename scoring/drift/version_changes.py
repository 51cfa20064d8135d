"""Like with like: each series compared within its scorer's current version, and a change of version
reported as a finding of its own, never as drift.

A drift pass reads each (scorer, service, agent) series split by the scorer version of its scores
(``ScorerVersion``, derived from the scorer's prompts, options and judge model). The current version
is the one whose score was written last; drift compares only its scores, the baseline's with the
window's, so after an edit the baseline starts again, empty, and the series has no drift verdict
until it holds ``drift.min_baseline_n`` scores of the new version. Decisions carry no version: the
failure rate compares all of them.

When the pass's span holds scores of an earlier version too, the series also gets a
``version_change`` finding: the earlier version's scores (the last one written before the current,
over the pass's span: the hours up to the change) against the current version's (the hours since),
with the Mann-Whitney test drift uses for a shift in location, its p-value and the difference in
means. The same span of a scored run cannot hold both versions' scores of it: a rescore replaces the
row (ReplacingMergeTree), so the comparison is always of the hours before and after the change.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from tracescore.scoring.drift.detect import Finding, SeriesData, SeriesKey, Windows
from tracescore.scoring.drift.stats import Counts, mann_whitney

# A series and the scorer version of its scores; None for its decisions, which carry no version.
VersionedKey = tuple[str, str, str, str | None]


@dataclass(frozen=True)
class Written:
    """When the scores of one version of a series in the pass's span were written (unix seconds)."""

    first: float
    last: float


def changed_series(series: Iterable[VersionedKey]) -> list[VersionedKey]:
    """The versions of the series that have more than one (usually none): what ``by_version`` needs
    the ``Written`` of."""
    keys = [key for key in series if key[3] is not None]
    versions = Counter(key[:3] for key in keys)
    return [key for key in keys if versions[key[:3]] > 1]


def by_version(
    series: Mapping[VersionedKey, SeriesData], written: Mapping[VersionedKey, Written], windows: Windows
) -> tuple[dict[SeriesKey, SeriesData], list[Finding]]:
    """Each series' data of its current version (with its decisions), and a version-change finding
    for each series whose span also holds an earlier version's scores (``written``: of the versions
    of those series, ``changed_series``)."""
    versions: dict[SeriesKey, dict[str, SeriesData]] = {}
    decisions: dict[SeriesKey, SeriesData] = {}
    for (scorer, service, agent, version), data in series.items():
        key = (scorer, service, agent)
        if version is None:
            decisions[key] = data
        else:
            versions.setdefault(key, {})[version] = data
    current: dict[SeriesKey, SeriesData] = {}
    changes: list[Finding] = []
    for key in sorted(versions.keys() | decisions.keys()):
        scored = versions.get(key, {})
        decided = decisions.get(key)
        if not scored:  # decisions alone: the series is in ``decisions``
            current[key] = decisions[key]
            continue
        order = sorted(scored, key=lambda v: (written[(*key, v)].last, v)) if len(scored) > 1 else [*scored]
        now = order[-1]
        current[key] = data = scored[now]
        # The pass's own objects, made for it by the read: set in place (a copy per series costs a
        # pass of a thousand series tens of milliseconds).
        data.version = now
        if decided is not None:
            data.baseline_decisions, data.window_decisions = (
                decided.baseline_decisions,
                decided.window_decisions,
            )
        if len(order) > 1:
            before = order[-2]
            changed_at = written[(*key, now)].first
            changes.append(version_change(key, scored[before], before, scored[now], now, changed_at, windows))
    return current, changes


def version_change(
    key: SeriesKey,
    old: SeriesData,
    old_version: str,
    new: SeriesData,
    new_version: str,
    changed_at: float,
    windows: Windows,
) -> Finding:
    """The finding of a change from ``old_version`` to ``new_version``: each version's scores in the
    pass's span, the shift in means (in the old version's standard deviations) and the Mann-Whitney
    p-value of a shift in location (not adjusted with the drift tests: it raises no alarm)."""
    before, after = merged(old.baseline, old.window), merged(new.baseline, new.window)
    finding = Finding(
        *key,
        windows=windows,
        baseline_n=before.n,
        window_n=after.n,
        kind="version_change",
        state="version_changed",
        version=new_version,
        previous_version=old_version,
        version_changed_at=datetime.fromtimestamp(changed_at, UTC),
    )
    if before.n:
        finding.baseline_mean, finding.baseline_sd = before.mean, before.sd
    if after.n:
        finding.window_mean, finding.window_sd = after.mean, after.sd
    if before.n >= 2 and after.n >= 2:
        shift, sd = after.mean - before.mean, before.sd
        finding.mean_shift_sd = (
            shift / sd if sd > 0 else (0.0 if shift == 0 else math.copysign(math.inf, shift))
        )
        finding.effect = finding.mean_shift_sd
        finding.mann_whitney_p_value = finding.p_value = mann_whitney(before, after)
    return finding


def merged(a: Counts, b: Counts) -> Counts:
    """The value counts of both sides together."""
    values = np.union1d(a.values, b.values)
    counts = np.zeros(len(values))
    np.add.at(counts, np.searchsorted(values, a.values), a.counts)
    np.add.at(counts, np.searchsorted(values, b.values), b.counts)
    return Counts(values, counts)
