"""Two-sample statistics on score distributions given as value counts.

A drift pass reads each series as a table of (value, count) per side rather than every score, so the
store sends thousands of rows instead of millions. Every statistic here is exact on such a table:
ranks become mid-ranks of tied values, the empirical distribution functions step at the values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tracescore.scoring.drift.fisher import fisher_exact_two_sided

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

    # Cached: a pass asks each side for n and mean a dozen times, each a sum over its counts.
    @cached_property
    def n(self) -> int:
        return int(self.counts.sum())

    @cached_property
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


def two_proportions_many(x1: Floats, n1: Floats, x2: Floats, n2: Floats) -> Floats:
    """The two-sided p-value of a difference in proportions, ``x1`` of ``n1`` against ``x2`` of ``n2``,
    for each element (pooled z-test; Fisher's exact test when a cell is expected to hold fewer than 5).

    Every series' test in one go: the exact tests together (see ``fisher``), the z-tests as array
    operations, each the same operations on each element as one test alone would take."""
    p = np.ones(len(x1))
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = (x1 + x2) / (n1 + n2)
        testable = (n1 > 0) & (n2 > 0) & (pooled != 0.0) & (pooled != 1.0)
        expected = np.minimum(n1, n2) * np.minimum(pooled, 1 - pooled)
        exact = testable & (expected < 5)
        if exact.any():
            # the table of counts, as int() truncates them
            cells = (x1, n1 - x1, x2, n2 - x2)
            table = np.stack([np.trunc(cell[exact]) for cell in cells], axis=1).astype(np.int64)
            p[exact] = fisher_exact_two_sided(table)
        normal = testable & ~exact
        z = (x2 / n2 - x1 / n1) / np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    p[normal] = 2 * _special().ndtr(-np.abs(z[normal]))
    return p


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


def standardised(means: Floats, sizes: Floats, reference: float, sd: float, baseline_buckets: int) -> Floats:
    """The bucket means in standard errors from ``reference``, the baseline's mean; none without a
    spread.

    Each bucket mean is standardised by its standard error under a random-effects model: the score
    variance over the bucket's size plus the between-bucket variance the baseline buckets show beyond
    that (real traffic varies hour to hour more than independent draws would), so ordinary hourly
    wobble does not accumulate in the CUSUM."""
    if len(means) == 0 or not sd > 0:
        return np.zeros(0)
    within = sd * sd / sizes
    base = slice(0, max(baseline_buckets, 0))
    between = 0.0
    if baseline_buckets >= 3:
        between = max(0.0, float(np.var(means[base], ddof=1) - np.mean(within[base])))
    return (means - reference) / np.sqrt(within + between)


def cusums(series: list[Floats], k: float, h: float) -> list[Cusum]:
    """A two-sided CUSUM over each series' standardised bucket means.

    The sums restart at zero when they fall below it (Page's CUSUM), and stop at
    ``CUSUM_CEILING * h``, so after a series returns to its baseline the alarm clears within
    ``(CUSUM_CEILING - 1) * h / k`` buckets however large the drift was. They are a recursion over
    buckets, so they run bucket by bucket for all series at once (a column of a padded matrix per
    step) rather than series by series in Python: the same operations on each element, so the same
    sums."""
    length = max((len(z) for z in series), default=0)
    padded = np.zeros((len(series), length))
    present = np.zeros((len(series), length), dtype=bool)
    for row, z in enumerate(series):
        padded[row, : len(z)] = z
        present[row, : len(z)] = True
    up = np.zeros(len(series))
    down = np.zeros(len(series))
    ceiling = CUSUM_CEILING * h
    for step in range(length):
        z, there = padded[:, step], present[:, step]
        # fmin/fmax: Python's min and max, which pass over a NaN in second place
        up = np.where(there, np.fmin(ceiling, np.fmax(0.0, up + z - k)), up)
        down = np.where(there, np.fmin(ceiling, np.fmax(0.0, down - z - k)), down)
    found = []
    for u, d in zip(up.tolist(), down.tolist(), strict=True):
        value = max(u, d)
        direction = 0 if value == 0 else (1 if u >= d else -1)
        found.append(Cusum(value, direction, value > h))
    return found
