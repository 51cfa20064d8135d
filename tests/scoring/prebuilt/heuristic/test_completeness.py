"""Completeness against the published @mastra/evals 1.10.2 scorer.

Mastra extracts elements with the NLP library compromise, this port with plain word rules, so the
agreement is held to a floor (the share of equal scores, the mean absolute error) on the shared
parity cases and on held-out pairs, and is exact on the edge cases where the two read words alike.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.scoring.prebuilt.heuristic.mastra_edge_cases import EXTRA_CASES
from tests.scoring.prebuilt.mastra_parity import CASES, REFERENCE, cases_with, run_like_reference
from tracescore.scoring.prebuilt import create_completeness_scorer
from tracescore.scoring.prebuilt.heuristic.completeness import coverage, covers, extract_elements
from tracescore.scoring.prebuilt.registry import build_scorer


def test_the_fixtures_cover_the_scorer() -> None:
    assert len(cases_with("completeness")) >= 30


# Completeness floors. Shared cases: 35 of 35 scores equal Mastra's (the verb rules were written
# looking at them). Held-out pairs below, written after the rules were fixed and never tuned on:
# 13 of 15 equal, mean absolute error 0.018 (plain words without the verb rules: 9 of 15, 0.053).
SHARED_MIN_EXACT, SHARED_MAX_MAE = 0.9, 0.01
HELD_OUT_MIN_EXACT, HELD_OUT_MAX_MAE = 0.8, 0.025

# (input, output, Mastra's completeness) from @mastra/evals 1.10.2 under Node 20.
HELD_OUT_COMPLETENESS = [
    ("How can I improve my sleep quality?",
     "Keep a regular schedule, avoid caffeine late, and keep your bedroom dark.", 0),
    ("The library opened a new branch downtown.",
     "A new downtown branch of the library has opened.", 1),
    ("List three benefits of drinking water.",
     "Water keeps you hydrated, helps digestion and regulates temperature.", 0.16666666666666666),
    ("My package hasn't arrived yet and the tracking stopped updating.",
     "Sorry, your package was delayed; tracking will update soon.", 0.18181818181818182),
    ("Describe the water cycle.",
     "Water evaporates, condenses into clouds, and falls as precipitation.", 0.25),
    ("We were told the flight would be cancelled.",
     "The airline cancelled the flight and offered refunds.", 0.6),
    ("Is Python better than Java for data science?",
     "Python is usually preferred for data science because of its libraries.", 0.5),
    ("The children played in the park while their parents talked.",
     "Parents talked as the kids were playing in the park.", 0.6666666666666666),
    ("Can you recommend a good book about history?",
     "Try Sapiens by Yuval Noah Harari; it covers human history.", 0.125),
    ("The engine overheated, so the driver stopped the car.",
     "The driver had stopped because the engine was overheating.", 0.7142857142857143),
    ("I've been learning Spanish for two months.",
     "Two months of Spanish is a great start; keep practicing daily.", 0.42857142857142855),
    ("Our team shipped the feature before the deadline.",
     "The feature was shipped early by the team.", 0.5714285714285714),
    ("What happens if I miss a payment?",
     "Missing a payment may incur a late fee and affect your credit score.", 0.42857142857142855),
    ("The museum is closed on Mondays.",
     "It's open Tuesday through Sunday.", 0),
    ("Scientists discovered water on the moon.",
     "Water was discovered on the lunar surface by scientists.", 0.8333333333333334),
]  # fmt: skip


async def _agreement(pairs: list[tuple[str, str, float]]) -> tuple[float, float]:
    errors = []
    for user, answer, expected in pairs:
        result = await create_completeness_scorer().run(run_like_reference(user, answer))
        errors.append(abs(result.score - expected))
    return sum(1 for error in errors if error == 0) / len(errors), sum(errors) / len(errors)


async def test_completeness_agrees_with_mastra_on_the_shared_cases() -> None:
    pairs = [
        (case["input"], case["output"], REFERENCE[case["id"]]["completeness"])
        for case in CASES
        if "completeness" in REFERENCE[case["id"]]
    ]
    exact, mae = await _agreement(pairs)
    assert exact >= SHARED_MIN_EXACT, f"only {exact:.0%} exact"
    assert mae <= SHARED_MAX_MAE, f"mean absolute error {mae:.4f}"


async def test_completeness_agrees_with_mastra_on_held_out_pairs() -> None:
    exact, mae = await _agreement(HELD_OUT_COMPLETENESS)
    assert exact >= HELD_OUT_MIN_EXACT, f"only {exact:.0%} exact"
    assert mae <= HELD_OUT_MAX_MAE, f"mean absolute error {mae:.4f}"


# The edge cases' completeness is None where this port differs from compromise (see the table).
@pytest.mark.parametrize(
    ("user", "answer", "completeness"),
    [pytest.param(*case[1:3], case[6], id=case[0]) for case in EXTRA_CASES if case[6] is not None],
)
async def test_edge_cases_match_mastra(user: str, answer: str, completeness: float) -> None:
    assert (await create_completeness_scorer().run(run_like_reference(user, answer))).score == completeness


def test_completeness_elements_and_coverage_rule() -> None:
    assert extract_elements("Café crème, café 2x! Ünïcode") == ["cafe", "creme", "2x", "unicode"]
    assert extract_elements("日本語 ✓") == []
    # compromise's elements for these (Node): verbs as infinitives, auxiliaries gone.
    assert extract_elements("The refund has been processed.") == ["the", "refund", "process"]
    assert sorted(extract_elements("It isn't ready.")) == ["be", "does", "it", "not", "ready"]
    assert sorted(extract_elements("She is running fast.")) == ["fast", "run", "she"]
    assert sorted(extract_elements("The cat sat on the mat.")) == ["cat", "mat", "on", "sit", "the"]
    assert coverage(["eclipses"], ["eclipse"]) == 1  # 7/8 of the longer word
    assert coverage(["run"], ["runs"]) == 0  # words of 3 letters or less must match exactly
    assert coverage(["abcde"], ["abc"]) == 0  # 3/5 is not more than 60%
    assert coverage([], []) == 1
    assert coverage([], ["x"]) == 0


# Words from few letters, so that one often lies inside another.
words = st.lists(st.text(alphabet="abc", min_size=1, max_size=12), unique=True, max_size=8)


@given(original=words, simplified=words)
def test_coverage_applies_the_rule_to_every_pair(original: list[str], simplified: list[str]) -> None:
    # coverage finds the pairs through sets; Mastra's definition tries every pair.
    pairwise = sum(1 for element in original if any(covers(element, other) for other in simplified))
    assert coverage(original, simplified) == (pairwise / len(original) if original else int(not simplified))


def test_registered_with_its_needs() -> None:
    assert build_scorer("completeness").id == "completeness"
    assert build_scorer("completeness").needs == {"input", "output"}
