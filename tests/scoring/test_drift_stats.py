"""The drift statistics on value-count tables agree with scipy's on the expanded samples."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from tracescore.scoring.drift.fisher import fisher_exact_two_sided
from tracescore.scoring.drift.stats import (
    Counts,
    Cusum,
    benjamini_hochberg,
    cusums,
    kolmogorov_smirnov,
    mann_whitney,
    psi,
    standardised,
    two_proportions_many,
)


def counts(sample: np.ndarray) -> Counts:
    return Counts.of(dict(Counter(float(v) for v in sample)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mann_whitney_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.round(rng.normal(0.8, 0.1, 400), 2)  # rounded: many ties, as real scores have
    b = np.round(rng.normal(0.78, 0.1, 90), 2)
    expected = stats.mannwhitneyu(b, a, method="asymptotic", use_continuity=True).pvalue
    assert mann_whitney(counts(a), counts(b)) == pytest.approx(expected, rel=1e-9)


def test_mann_whitney_of_identical_constants_is_one() -> None:
    same = Counts.of({1.0: 50})
    assert mann_whitney(same, Counts.of({1.0: 20})) == 1.0


@pytest.mark.parametrize("seed", [4, 5])
def test_kolmogorov_smirnov_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0.0, 1.0, 500), rng.normal(0.3, 1.0, 300)
    distance, p_value = kolmogorov_smirnov(counts(a), counts(b))
    reference = stats.ks_2samp(a, b, method="asymp")
    assert distance == pytest.approx(reference.statistic, rel=1e-12)
    # scipy's asymptotic two-sample p-value uses a finite-n refinement of the same limit law.
    assert p_value == pytest.approx(reference.pvalue, rel=0.2)


def test_psi_by_hand_on_binned_scores() -> None:
    # Three distinct values: one bin each. Baseline 50/30/20 of 100, window 20/30/50 of 100; half a
    # count is added to every bin: p = (50.5, 30.5, 20.5)/101.5, q = (20.5, 30.5, 50.5)/101.5.
    baseline = Counts.of({0.0: 50, 0.5: 30, 1.0: 20})
    window = Counts.of({0.0: 20, 0.5: 30, 1.0: 50})
    index, p_value, bins = psi(baseline, window, bins=10)
    p = np.array([50.5, 30.5, 20.5]) / 101.5
    q = p[::-1]
    expected = float(np.sum((q - p) * np.log(q / p)))
    assert bins == 3
    assert index == pytest.approx(expected)
    assert p_value == pytest.approx(stats.chi2.sf(expected * 100 * 100 / 200, 2))


def test_psi_is_calibrated_for_sample_size() -> None:
    # Unchanged data at small n: the raw index is often above the usual 0.1 threshold, yet its
    # p-value stays uniform, so about 5% of comparisons fall below 0.05.
    rng = np.random.default_rng(7)
    above_threshold = 0
    small_p = 0
    for _ in range(400):
        index, p_value, _ = psi(counts(rng.normal(0, 1, 60)), counts(rng.normal(0, 1, 40)), bins=10)
        above_threshold += index > 0.1
        small_p += p_value < 0.05
    assert above_threshold > 200
    assert small_p < 40


def test_benjamini_hochberg_matches_scipy() -> None:
    p_values = [0.01, 0.04, 0.03, 0.2, 0.001]
    expected = stats.false_discovery_control(p_values)
    assert benjamini_hochberg(p_values) == pytest.approx(list(expected))


def cusum(means: np.ndarray, sizes: np.ndarray) -> Cusum:
    """The CUSUM of one series against a baseline mean 0.8, sd 0.1, of 150 buckets (k 0.5, h 8)."""
    return cusums([standardised(means, sizes, 0.8, 0.1, 150)], 0.5, 8.0)[0]


def test_cusum_flags_a_small_sustained_shift_and_not_noise() -> None:
    rng = np.random.default_rng(8)
    sizes = np.full(200, 100.0)
    steady = rng.normal(0.8, 0.1 / 10, 200)  # bucket means of 100 scores with sd 0.1
    assert not cusum(steady, sizes).alarm
    shifted = steady.copy()
    shifted[170:] -= 0.01  # one standard error, for the last 30 buckets
    result = cusum(shifted, sizes)
    assert result.alarm and result.direction == -1
    assert math.isfinite(result.value)


def test_fisher_exact_for_many_tables_is_scipys_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    rows = [(0, 0, 0, 0), (0, 5, 0, 7), (5, 0, 7, 0), (3, 3, 3, 3), (0, 10, 10, 0), (10, 0, 0, 10)]
    for _ in range(400):  # small windows against large baselines, as failure rates are tested
        n1, n2 = int(rng.integers(1, 200)), int(rng.integers(1, 12_000))
        a, c = int(rng.binomial(n1, 0.05)), int(rng.binomial(n2, rng.random() * 0.1))
        rows.append((a, n1 - a, c, n2 - c))
    expected = [stats.fisher_exact([[a, b], [c, d]]).pvalue for a, b, c, d in rows]
    assert fisher_exact_two_sided(np.array(rows)).tolist() == expected


def test_two_proportions_for_many_series_matches_each_alone() -> None:
    rng = np.random.default_rng(6)
    n1, n2 = rng.integers(0, 5_000, 300).astype(float), rng.integers(0, 200, 300).astype(float)
    x1, x2 = np.floor(n1 * rng.random(300) * 0.3), np.floor(n2 * rng.random(300) * 0.3)
    many = two_proportions_many(x1, n1, x2, n2)
    for i in range(300):
        if n1[i] and n2[i] and 0 < x1[i] + x2[i] < n1[i] + n2[i]:
            if min(n1[i], n2[i]) * min(x1[i] + x2[i], n1[i] + n2[i] - x1[i] - x2[i]) / (n1[i] + n2[i]) < 5:
                table = [[x1[i], n1[i] - x1[i]], [x2[i], n2[i] - x2[i]]]
                assert many[i] == stats.fisher_exact(np.array(table, dtype=int)).pvalue
            else:
                pooled = (x1[i] + x2[i]) / (n1[i] + n2[i])
                z = (x2[i] / n2[i] - x1[i] / n1[i]) / math.sqrt(
                    pooled * (1 - pooled) * (1 / n1[i] + 1 / n2[i])
                )
                assert many[i] == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-12)
        else:
            assert many[i] == 1.0


def test_cusums_of_many_series_are_each_series_sums() -> None:
    rng = np.random.default_rng(7)
    series = [rng.normal(0.3 * (i % 3 - 1), 1.0, int(rng.integers(0, 60))) for i in range(40)]
    k, h = 0.5, 8.0
    for z, result in zip(series, cusums(series, k, h), strict=True):
        up = down = 0.0
        for value in z:  # Page's two-sided CUSUM, capped at 1.5 h
            up = min(1.5 * h, max(0.0, up + float(value) - k))
            down = min(1.5 * h, max(0.0, down - float(value) - k))
        assert result.value == max(up, down)
        assert result.direction == (0 if max(up, down) == 0 else (1 if up >= down else -1))
        assert result.alarm == (max(up, down) > h)
