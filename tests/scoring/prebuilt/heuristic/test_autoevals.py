"""Exact match, Levenshtein and numeric diff (VoltAgent's exactMatch, levenshtein, numericDiff): the
same numbers as the autoevals Python package on generated cases, and how each scorer reads a run's
output and ground truth."""

from __future__ import annotations

import json
from typing import Any

import pytest
from autoevals import ExactMatch, Levenshtein, NumericDiff
from hypothesis import given, settings

from tests.scoring.prebuilt.heuristic.value_strategies import json_values, numbers, texts
from tests.support.runs import agent_run
from tracescore.scoring import ScorerError
from tracescore.scoring.prebuilt import create_exact_match_scorer, create_numeric_diff_scorer
from tracescore.scoring.prebuilt.heuristic.autoevals_heuristics import (
    exact_match,
    levenshtein_similarity,
    numeric_diff,
)
from tracescore.scoring.prebuilt.registry import build_scorer


@settings(max_examples=300)
@given(output=texts | json_values.map(json.dumps), expected=texts | json_values)
def test_exact_match_equals_autoevals(output: str, expected: Any) -> None:
    assert exact_match(output, expected) == ExactMatch().eval(output, expected).score


@settings(max_examples=300)
@given(output=texts, expected=texts)
def test_levenshtein_equals_autoevals(output: str, expected: str) -> None:
    assert levenshtein_similarity(output, expected) == Levenshtein().eval(output, expected).score


@settings(max_examples=300)
@given(output=numbers, expected=numbers)
def test_numeric_diff_equals_autoevals(output: float, expected: float) -> None:
    assert numeric_diff(output, expected) == NumericDiff().eval(output, expected).score


async def test_exact_match_scorer_reads_output_and_ground_truth() -> None:
    assert (await create_exact_match_scorer().run(agent_run(None, "4", ground_truth=4))).score == 1
    as_json = agent_run(None, '{"b": 2, "a": 1}', ground_truth={"b": 2, "a": 1})
    assert (await create_exact_match_scorer().run(as_json)).score == 1
    other_case = agent_run(None, "Paris", ground_truth="paris")
    assert (await create_exact_match_scorer().run(other_case)).score == 0
    assert (await build_scorer("exact-match", {"ignoreCase": True}).run(other_case)).score == 1


async def test_levenshtein_scorer() -> None:
    result = await build_scorer("levenshtein").run(agent_run(None, "algoritm", ground_truth="algorithm"))
    assert result.score == 1 - 1 / 9


async def test_numeric_diff_scorer_with_and_without_threshold() -> None:
    scorer = create_numeric_diff_scorer()
    assert (await scorer.run(agent_run(None, " 105 ", ground_truth=100))).score == 1 - 5 / 205
    assert (await scorer.run(agent_run(None, "0", ground_truth="0.0"))).score == 1
    within = build_scorer("numeric-diff", {"threshold": 0.01})
    assert (await within.run(agent_run(None, "3.1415", ground_truth=3.14))).score == 1
    assert (await within.run(agent_run(None, "3.16", ground_truth=3.14))).score == 0


@pytest.mark.parametrize("answer", ["about 42", "", "nan", "inf", "true"])
async def test_numeric_diff_refuses_text_that_is_not_a_number(answer: str) -> None:
    with pytest.raises(ScorerError, match="is not a number"):
        await create_numeric_diff_scorer().run(agent_run(None, answer, ground_truth=42))


def test_numeric_diff_threshold_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="threshold"):
        build_scorer("numeric-diff", {"threshold": -1})
