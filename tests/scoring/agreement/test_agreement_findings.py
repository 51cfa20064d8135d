"""A scorer's state from its window and the one before: insufficient, below a level, dropped, ok."""

from __future__ import annotations

from datetime import UTC, datetime

from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.scoring.agreement.agreement_findings import Pairs, assess, measure

START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 8, tzinfo=UTC)
CONFIG = AgreementConfig(min_pairs=10, min_kappa=0.4, min_spearman=0.5, max_mae=0.25, drop_alpha=0.01)


def pairs(agreeing: int, disagreeing: int, value_error: float = 0.05) -> Pairs:
    """Labels: ``agreeing`` pairs alike (half pass, half fail), ``disagreeing`` unlike; values: the
    person's value ``value_error`` off a spread of scores."""
    scorer = ["pass", "fail"] * (agreeing // 2) + ["pass"] * disagreeing
    human = ["pass", "fail"] * (agreeing // 2) + ["fail"] * disagreeing
    scores = [i / len(scorer) for i in range(len(scorer))]
    values = [min(1.0, s + value_error) for s in scores]
    return Pairs(scorer, human, scores, values, frozenset({"ann", "bob"}))


def test_too_few_pairs_is_insufficient_and_gives_no_measure() -> None:
    now = measure("tone", START, END, pairs(4, 2), CONFIG)

    finding = assess(now, None, CONFIG)

    assert finding.state == "insufficient" and finding.reasons == []
    assert (now.row.label_pairs, now.row.kappa, now.row.spearman, now.row.annotators) == (6, None, None, 2)


def test_agreement_under_a_level_is_below() -> None:
    now = measure("tone", START, END, pairs(10, 10), CONFIG)  # kappa about 0.09

    finding = assess(now, None, CONFIG)

    assert finding.state == "below"
    assert finding.row.kappa is not None and finding.row.kappa < 0.4
    assert finding.reasons[0].startswith("kappa 0.") and "< 0.4" in finding.reasons[0]
    assert finding.row.kappa_low is not None and finding.row.kappa_low < finding.row.kappa


def test_a_significant_drop_against_the_window_before_is_dropped() -> None:
    before = measure("tone", START, END, pairs(200, 0), CONFIG)  # kappa 1
    now = measure("tone", START, END, pairs(170, 30), CONFIG)  # still over 0.4

    finding = assess(now, before, CONFIG)

    assert finding.row.kappa is not None and finding.row.kappa > 0.4
    assert finding.state == "dropped" and finding.drop_p_value is not None and finding.drop_p_value < 0.01
    assert finding.reasons == [f"kappa dropped 1.00 → {finding.row.kappa:.2f}"]
    assert finding.previous is not None and finding.previous.kappa == 1.0


def test_good_and_steady_agreement_is_ok() -> None:
    before = measure("tone", START, END, pairs(100, 5), CONFIG)
    now = measure("tone", START, END, pairs(100, 5), CONFIG)

    finding = assess(now, before, CONFIG)

    assert finding.state == "ok" and finding.reasons == []
    assert finding.row.mae is not None and abs(finding.row.mae - 0.05) < 0.01
    assert finding.row.spearman is not None and finding.row.spearman > 0.9
    assert finding.as_json()["scorer_id"] == "tone" and finding.as_json()["state"] == "ok"
