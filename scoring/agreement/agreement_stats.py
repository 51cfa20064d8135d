"""How well a scorer agrees with people: Cohen's kappa for labels, Spearman's rho and the mean absolute
error for values, each with a confidence interval, and one-sided tests of a drop between two windows.

- Kappa's interval uses the large-sample standard error of Fleiss, Cohen and Everitt (1969), as SAS
  PROC FREQ (``AGREE``) and statsmodels do; its drop test compares two independent kappas by their
  standard errors.
- Spearman's interval is Fisher's z with the variance 1.06 / (n - 3) of Fieller, Hartley and Pearson
  (1957) for rank correlations; its drop test compares the two z values.
- The mean absolute error's interval is Student's t over the absolute errors; its rise is Welch's test.

A measure with fewer than ``min_pairs`` pairs, or that the data cannot give (one label only, values
that never vary), is None: never a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SPEARMAN_VARIANCE = 1.06  # Fieller, Hartley and Pearson (1957): var(atanh(rho)) = 1.06 / (n - 3)
MIN_SPEARMAN_PAIRS = 4  # its interval needs n - 3 > 0


@dataclass(frozen=True)
class Estimate:
    """A measure, its standard error (on the scale its interval and tests use) and its interval."""

    value: float
    standard_error: float
    low: float
    high: float
    n: int


def _stats() -> Any:
    """scipy.stats, imported on the first agreement pass: it costs the service about 30 MiB at rest,
    which a service whose scorers have no labels (or not yet) need not pay (``memory_limit``)."""
    from scipy import stats

    return stats


def _z(confidence: float) -> float:
    return float(_stats().norm.ppf(0.5 + confidence / 2))


def cohens_kappa(first: Sequence[str], second: Sequence[str], confidence: float = 0.95) -> Estimate | None:
    """Cohen's kappa of two raters' labels of the same units, with its asymptotic interval; None when
    chance agreement is certain (a single label on both sides) or there are no pairs.

    >>> round(cohens_kappa(["y"] * 20 + ["n"] * 15 + ["y"] * 5 + ["n"] * 10,
    ...                    ["y"] * 20 + ["n"] * 15 + ["n"] * 5 + ["y"] * 10).value, 4)
    0.4
    """
    if len(first) != len(second):
        raise ValueError("both raters must label the same units")
    n = len(first)
    if n == 0:
        return None
    categories = sorted(set(first) | set(second))
    index = {label: i for i, label in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    np.add.at(table, ([index[a] for a in first], [index[b] for b in second]), 1)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    observed, expected = float(np.trace(p)), float(rows @ cols)
    if expected >= 1.0:
        return None
    kappa = (observed - expected) / (1 - expected)
    error = math.sqrt(max(_kappa_variance(p, rows, cols, kappa, expected), 0.0) / n)
    half = _z(confidence) * error
    return Estimate(kappa, error, kappa - half, kappa + half, n)


def _kappa_variance(
    p: np.ndarray, rows: np.ndarray, cols: np.ndarray, kappa: float, expected: float
) -> float:
    """n times kappa's large-sample variance (Fleiss, Cohen and Everitt 1969)."""
    agree = float(np.sum(np.diag(p) * (1 - (rows + cols) * (1 - kappa)) ** 2))
    off = p * (cols[:, None] + rows[None, :]) ** 2
    disagree = (1 - kappa) ** 2 * float(off.sum() - np.trace(off))
    chance = (kappa - expected * (1 - kappa)) ** 2
    return (agree + disagree - chance) / (1 - expected) ** 2


def spearman(first: Sequence[float], second: Sequence[float], confidence: float = 0.95) -> Estimate | None:
    """Spearman's rho with its Fisher-z interval; None with fewer than four pairs or a side that never
    varies (rho is undefined there)."""
    n = len(first)
    if n < MIN_SPEARMAN_PAIRS or len(set(first)) < 2 or len(set(second)) < 2:
        return None
    rho = float(_stats().spearmanr(first, second).statistic)
    error = math.sqrt(SPEARMAN_VARIANCE / (n - 3))
    z = math.atanh(min(max(rho, -1 + 1e-12), 1 - 1e-12))
    half = _z(confidence) * error
    return Estimate(rho, error, math.tanh(z - half), math.tanh(z + half), n)


def mean_absolute_error(
    first: Sequence[float], second: Sequence[float], confidence: float = 0.95
) -> Estimate | None:
    """The mean absolute difference with its Student-t interval (from below at 0); None without two
    pairs."""
    errors = np.abs(np.asarray(first, dtype=np.float64) - np.asarray(second, dtype=np.float64))
    n = len(errors)
    if n < 2:
        return None
    mae = float(errors.mean())
    error = float(errors.std(ddof=1)) / math.sqrt(n)
    half = float(_stats().t.ppf(0.5 + confidence / 2, n - 1)) * error
    return Estimate(mae, error, max(0.0, mae - half), mae + half, n)


def kappa_drop_p(before: Estimate, now: Estimate) -> float:
    """One-sided p-value that kappa is lower now than before (two independent samples)."""
    spread = math.hypot(before.standard_error, now.standard_error)
    if spread == 0:
        return 0.0 if now.value < before.value else 1.0
    return float(_stats().norm.sf((before.value - now.value) / spread))


def spearman_drop_p(before: Estimate, now: Estimate) -> float:
    """One-sided p-value that rho is lower now than before, on Fisher's z scale."""

    def fisher(rho: float) -> float:
        return math.atanh(min(max(rho, -1 + 1e-12), 1 - 1e-12))

    spread = math.hypot(before.standard_error, now.standard_error)
    return float(_stats().norm.sf((fisher(before.value) - fisher(now.value)) / spread))


def mae_rise_p(before: Sequence[float], now: Sequence[float]) -> float:
    """One-sided p-value (Welch) that the absolute errors are larger now than before; 1.0 when either
    side has fewer than two."""
    if len(before) < 2 or len(now) < 2:
        return 1.0
    if np.ptp(before) == 0 and np.ptp(now) == 0:  # no spread to test against: the means decide
        return 0.0 if np.mean(now) > np.mean(before) else 1.0
    result = _stats().ttest_ind(now, before, equal_var=False, alternative="greater")
    return float(result.pvalue)
