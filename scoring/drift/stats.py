"""Two-sample statistics on score distributions given as value counts.

A drift pass reads each series as a table of (value, count) per side rather than every score, so the
store sends thousands of rows instead of millions. Every statistic here is exact on such a table:
ranks become mid-ranks of tied values, the empirical distribution functions step at the values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]


def _special() -> Any:
    """scipy.special, imported on the first drift pass: scipy costs the service 16-45 MiB and half a
    second at start, which a service that never runs drift (or not yet) need not pay."""
    from scipy import special

    return special


@dataclass(frozen=True)
class Counts:
    """One side of a comparison: distinct values (ascending) and how often each occurred."""

    values: Floats
    counts: Floats

    @classmethod
    def of(cls, pairs: dict[float, int]) -> Counts:
        values = np.array(sorted(pairs), dtype=np.float64)
        return cls(values, np.array([pairs[v] for v in values], dtype=np.float64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def mean(self) -> float:
        return float(np.dot(self.values, self.counts) / self.counts.sum()) if self.n else math.nan

    @property
    def sd(self) -> float:
        """The sample standard deviation (n - 1 in the denominator)."""
        if self.n < 2:
            return math.nan
        deviation = self.values - self.mean
        return math.sqrt(float(np.dot(deviation * deviation, self.counts)) / (self.n - 1))

    @property
    def binary(self) -> bool:
        return bool(np.isin(self.values, (0.0, 1.0)).all())

    def share(self, passed: NDArray[np.bool_]) -> float:
        return float(self.counts[passed].sum() / self.counts.sum()) if self.n else math.nan


def _aligned(a: Counts, b: Counts) -> tuple[Floats, Floats, Floats]:
    """Both sides' counts over the union of their values (ascending)."""
    values = np.union1d(a.values, b.values)
    left = np.zeros(len(values))
    right = np.zeros(len(values))
    left[np.searchsorted(values, a.values)] = a.counts
    right[np.searchsorted(values, b.values)] = b.counts
    return values, left, right


def mann_whitney(baseline: Counts, window: Counts) -> float:
    """The two-sided p-value of the Mann-Whitney U test: normal approximation with the tie correction
    and a continuity correction (scipy's ``mannwhitneyu(method="asymptotic")`` on the expanded data)."""
    _, left, right = _aligned(baseline, window)
    n, m = left.sum(), right.sum()
    ties = left + right
    total = n + m
    midranks = np.cumsum(ties) - (ties - 1) / 2
    u = float(np.dot(right, midranks)) - m * (m + 1) / 2
    tie_term = float(np.sum(ties**3 - ties)) / (total * (total - 1))
    variance = n * m / 12 * ((total + 1) - tie_term)
    if variance <= 0:
        return 1.0  # every score is the same value: nothing can differ
    z = (abs(u - n * m / 2) - 0.5) / math.sqrt(variance)
    return float(min(1.0, 2 * _special().ndtr(-max(z, 0.0))))


def kolmogorov_smirnov(baseline: Counts, window: Counts) -> tuple[float, float]:
    """The two-sample KS distance and its asymptotic two-sided p-value (conservative when scores tie,
    as discrete scores do)."""
    _, left, right = _aligned(baseline, window)
    n, m = left.sum(), right.sum()
    distance = float(np.max(np.abs(np.cumsum(left) / n - np.cumsum(right) / m)))
    effective = n * m / (n + m)
    return distance, float(_special().kolmogorov(distance * math.sqrt(effective)))


def psi(baseline: Counts, window: Counts, bins: int) -> tuple[float, float, int]:
    """The population stability index over the baseline's quantile bins, its p-value, and the number
    of bins used.

    Bins are the baseline's ``bins``-quantiles (distinct values each their own bin when there are
    fewer); half a count is added to every bin of both sides so an empty bin does not make the index
    infinite. PSI is a symmetrised Kullback-Leibler divergence, and on unchanged data
    ``PSI * n * m / (n + m)`` follows a chi-square distribution with ``bins - 1`` degrees of freedom,
    so its expected value is about ``(bins - 1) * (1/n + 1/m)``: a fixed threshold such as 0.1 alarms
    on unchanged data at small n. The p-value corrects for that.
    """
    values, left, right = _aligned(baseline, window)
    if len(values) <= bins:
        edges_index = np.arange(len(values))  # one bin per distinct value
    else:
        cumulative = np.cumsum(left) / left.sum()
        cuts = np.searchsorted(cumulative, np.arange(1, bins) / bins, side="left")
        edges_index = np.unique(np.concatenate(([0], cuts + 1)))
        edges_index = edges_index[edges_index < len(values)]
    b = np.add.reduceat(left, edges_index) + 0.5
    w = np.add.reduceat(right, edges_index) + 0.5
    k = len(edges_index)
    if k < 2:
        return 0.0, 1.0, k
    p, q = b / b.sum(), w / w.sum()
    index = float(np.sum((q - p) * np.log(q / p)))
    n, m = left.sum(), right.sum()
    return index, float(_special().chdtrc(k - 1, index * n * m / (n + m))), k


def two_proportions(x1: float, n1: float, x2: float, n2: float) -> float:
    """The two-sided p-value of a difference in proportions (pooled z-test; Fisher's exact test when a
    cell is expected to hold fewer than 5)."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    pooled = (x1 + x2) / (n1 + n2)
    if pooled in (0.0, 1.0):
        return 1.0
    expected = min(n1, n2) * min(pooled, 1 - pooled)
    if expected < 5:
        from scipy import stats

        table = [[int(x1), int(n1 - x1)], [int(x2), int(n2 - x2)]]
        return float(stats.fisher_exact(table).pvalue)
    z = (x2 / n2 - x1 / n1) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return float(2 * _special().ndtr(-abs(z)))


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the given order.

    (The scalar p-values above come from ``scipy.special``'s distribution functions rather than
    ``scipy.stats``' distribution objects: the same functions without their per-call overhead, which
    matters over thousands of series.)"""
    if not p_values:
        return []
    from scipy import stats

    return [float(q) for q in stats.false_discovery_control(np.array(p_values), method="bh")]


CUSUM_CEILING = 1.5


@dataclass(frozen=True)
class Cusum:
    value: float  # the larger of the upward and downward sums at the last bucket
    direction: int  # +1 upward, -1 downward, 0 none
    alarm: bool


def cusum(
    means: Floats, sizes: Floats, reference: float, sd: float, k: float, h: float, baseline_buckets: int
) -> Cusum:
    """A two-sided CUSUM over bucket means against the baseline's mean.

    Each bucket mean is standardised by its standard error under a random-effects model: the score
    variance over the bucket's size plus the between-bucket variance the baseline buckets show beyond
    that (real traffic varies hour to hour more than independent draws would), so ordinary hourly
    wobble does not accumulate. The sums restart at zero when they fall below it (Page's CUSUM), and
    stop at ``CUSUM_CEILING * h``, so after a series returns to its baseline the alarm clears within
    ``(CUSUM_CEILING - 1) * h / k`` buckets however large the drift was.
    """
    if len(means) == 0 or not sd > 0:
        return Cusum(0.0, 0, False)
    within = sd * sd / sizes
    base = slice(0, max(baseline_buckets, 0))
    between = 0.0
    if baseline_buckets >= 3:
        between = max(0.0, float(np.var(means[base], ddof=1) - np.mean(within[base])))
    z = (means - reference) / np.sqrt(within + between)
    up = down = 0.0
    ceiling = CUSUM_CEILING * h
    for value in z:
        up = min(ceiling, max(0.0, up + float(value) - k))
        down = min(ceiling, max(0.0, down - float(value) - k))
    value = max(up, down)
    direction = 0 if value == 0 else (1 if up >= down else -1)
    return Cusum(value, direction, value > h)
