"""Agreement statistics against published values: Cohen's kappa from Wikipedia's worked examples and
SAS PROC FREQ's agreement study (kappa 0.3449, ASE 0.0724, 95% limits 0.2030 to 0.4868), Spearman's rho
from Wikipedia's worked example (-29/165) and scipy, intervals from their textbook formulas."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from tracescore.scoring.agreement.agreement_stats import (
    Estimate,
    cohens_kappa,
    kappa_drop_p,
    mae_rise_p,
    mean_absolute_error,
    spearman,
    spearman_drop_p,
)


def raters(table: list[list[int]]) -> tuple[list[str], list[str]]:
    """The two raters' labels of a contingency table (rows: the first rater, columns: the second)."""
    first: list[str] = []
    second: list[str] = []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            first += [f"c{i}"] * count
            second += [f"c{j}"] * count
    return first, second


@pytest.mark.parametrize(
    ("table", "kappa"),
    [
        ([[20, 5], [10, 15]], 0.4),  # Wikipedia, "Simple example"
        ([[45, 15], [25, 15]], 0.1304),  # Wikipedia, "Same percentages but different numbers"
        ([[25, 35], [5, 35]], 0.2593),
    ],
)
def test_kappa_matches_the_worked_examples(table: list[list[int]], kappa: float) -> None:
    found = cohens_kappa(*raters(table))
    assert found is not None
    assert found.value == pytest.approx(kappa, abs=5e-5)


def test_kappa_and_its_interval_match_sas_proc_freq() -> None:
    skin = [[10, 4, 1, 0], [5, 10, 12, 2], [2, 4, 12, 5], [0, 2, 6, 13]]

    found = cohens_kappa(*raters(skin), confidence=0.95)

    assert found is not None and found.n == 88
    published = pytest.approx((0.3449, 0.0724, 0.2030, 0.4868), abs=5e-5)  # kappa, ASE, 95% limits
    assert published == (found.value, found.standard_error, found.low, found.high)


def test_kappa_is_not_given_where_it_is_undefined() -> None:
    assert cohens_kappa([], []) is None
    assert cohens_kappa(["pass"] * 5, ["pass"] * 5) is None  # chance agreement is certain
    with pytest.raises(ValueError, match="same units"):
        cohens_kappa(["a"], ["a", "b"])


def test_spearman_matches_the_worked_example_and_its_fisher_interval() -> None:
    iq = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]
    tv_hours = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]

    found = spearman(iq, tv_hours, confidence=0.95)

    assert found is not None
    assert found.value == pytest.approx(-29 / 165)
    assert found.value == pytest.approx(stats.spearmanr(iq, tv_hours).statistic)
    half = 1.959964 * math.sqrt(1.06 / 7)
    assert found.low == pytest.approx(math.tanh(math.atanh(-29 / 165) - half), abs=1e-6)
    assert found.high == pytest.approx(math.tanh(math.atanh(-29 / 165) + half), abs=1e-6)


def test_spearman_is_not_given_without_spread_or_pairs() -> None:
    assert spearman([0.1, 0.2, 0.3], [1, 2, 3]) is None  # n - 3 = 0
    assert spearman([0.5] * 10, list(range(10))) is None


def test_mean_absolute_error_with_its_student_interval() -> None:
    found = mean_absolute_error([0.9, 0.8, 0.7, 0.6], [1.0, 1.0, 1.0, 1.0])

    assert found is not None and found.value == pytest.approx(0.25)
    # sd of the errors 0.1290994, t(0.975, 3) = 3.182446
    half = 3.182446 * 0.1290994 / 2
    assert pytest.approx((0.25 - half, 0.25 + half), abs=1e-6) == (found.low, found.high)
    assert mean_absolute_error([0.5], [0.5]) is None


def normal_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_drops_are_one_sided_tests_of_two_windows() -> None:
    before, now = Estimate(0.6, 0.1, 0.4, 0.8, 100), Estimate(0.3, 0.1, 0.1, 0.5, 100)

    assert kappa_drop_p(before, now) == pytest.approx(normal_tail(0.3 / math.hypot(0.1, 0.1)))
    assert kappa_drop_p(now, before) == pytest.approx(1 - normal_tail(0.3 / math.hypot(0.1, 0.1)))
    rho_before, rho_now = Estimate(0.8, 0.2, 0, 0, 30), Estimate(0.2, 0.2, 0, 0, 30)
    z = (math.atanh(0.8) - math.atanh(0.2)) / math.hypot(0.2, 0.2)
    assert spearman_drop_p(rho_before, rho_now) == pytest.approx(normal_tail(z))


def test_a_rise_in_absolute_error_is_welchs_test() -> None:
    before = [0.1, 0.05, 0.12, 0.08, 0.1, 0.09]
    now = [0.3, 0.4, 0.35, 0.25, 0.5, 0.45]

    assert mae_rise_p(before, now) == pytest.approx(stats.ttest_ind(now, before, equal_var=False).pvalue / 2)
    assert mae_rise_p(before, now) < 1e-3 and mae_rise_p(now, before) > 0.99
    assert mae_rise_p([0.1], now) == 1.0
