"""The autoevals heuristic scorers (VoltAgent's exactMatch, levenshtein, jsonDiff, listContains,
numericDiff): the same numbers as the autoevals Python package on generated cases, and how each
scorer reads a run's output and ground truth."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from autoevals import ExactMatch, JSONDiff, Levenshtein, ListContains, NumericDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import AgentRun, Message
from scoring import ScorerError
from scoring.prebuilt import (
    create_exact_match_scorer,
    create_list_contains_scorer,
    create_numeric_diff_scorer,
)
from scoring.prebuilt.heuristics import exact_match, levenshtein_similarity, numeric_diff
from scoring.prebuilt.json_diff import json_diff
from scoring.prebuilt.list_contains import list_contains
from scoring.registry import build_scorer

# Unicode text including astral characters, combining marks and whitespace.
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=24) | st.sampled_from(
    ["", "hello", "hello world", "Hello World", "héllo", "🍕 pizza", "e\u0301", "  ", "{}", "[1, 2]"]
)
numbers = st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)


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


@settings(max_examples=300)
@given(output=json_values, expected=json_values, as_text=st.booleans())
def test_json_diff_equals_autoevals(output: Any, expected: Any, as_text: bool) -> None:
    # The scorer sees the output as text; the ground truth may be a value or JSON text.
    output_text = json.dumps(output)
    expected = json.dumps(expected) if as_text else expected
    reference = JSONDiff().eval(output_text, expected).score
    # autoevals sums an object's keys in set order, which varies between processes; this port
    # sums in key order. The results agree to rounding.
    assert math.isclose(json_diff(output_text, expected), reference, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=200)
@given(
    outputs=st.lists(texts, max_size=6),
    expected=st.lists(texts, max_size=6),
    allow_extra=st.booleans(),
)
def test_list_contains_equals_autoevals(outputs: list[str], expected: list[str], allow_extra: bool) -> None:
    reference = ListContains(allow_extra_entities=allow_extra).eval(outputs, expected).score
    assert list_contains(outputs, expected, allow_extra) == reference


def run_with(answer: str, ground_truth: Any = None) -> AgentRun:
    return AgentRun(output=[Message(role="assistant", content=answer)], ground_truth=ground_truth)


async def test_exact_match_scorer_reads_output_and_ground_truth() -> None:
    assert (await create_exact_match_scorer().run(run_with("4", 4))).score == 1
    assert (await create_exact_match_scorer().run(run_with('{"b": 2, "a": 1}', {"b": 2, "a": 1}))).score == 1
    assert (await create_exact_match_scorer().run(run_with("Paris", "paris"))).score == 0
    assert (await build_scorer("exactMatch", {"ignoreCase": True}).run(run_with("Paris", "paris"))).score == 1


async def test_levenshtein_scorer() -> None:
    result = await build_scorer("levenshtein").run(run_with("algoritm", "algorithm"))
    assert result.score == 1 - 1 / 9


async def test_json_diff_scorer_parses_the_output() -> None:
    run = run_with('{"name": "John", "age": 30, "tags": ["a"]}', {"name": "John", "age": 30, "tags": ["a"]})
    assert (await build_scorer("json-diff").run(run)).score == 1
    run = run_with('{"name": "John", "age": 30}', '{"name": "John", "age": 60, "x": null}')
    # name 1, age 1 - 30/90, x: null on both sides 1 -> mean over three keys
    assert (await build_scorer("jsonDiff").run(run)).score == pytest.approx((1 + (1 - 30 / 90) + 1) / 3)


async def test_list_contains_scorer_reads_json_arrays_or_lines() -> None:
    expected = ["red", "blue", "yellow"]
    as_json = run_with('["red", "blue", "yellow", "green"]', expected)
    assert (await create_list_contains_scorer().run(as_json)).score == 0.75
    assert (await build_scorer("list-contains", {"allowExtraEntities": True}).run(as_json)).score == 1
    as_lines = run_with("red\n  blue \n\nyellow\n", json.dumps(expected))
    assert (await create_list_contains_scorer().run(as_lines)).score == 1


async def test_list_contains_needs_a_list_as_ground_truth() -> None:
    with pytest.raises(ScorerError, match="needs a list as ground_truth"):
        await create_list_contains_scorer().run(run_with("red", "red"))


async def test_numeric_diff_scorer_with_and_without_threshold() -> None:
    assert (await create_numeric_diff_scorer().run(run_with(" 105 ", 100))).score == 1 - 5 / 205
    assert (await create_numeric_diff_scorer().run(run_with("0", "0.0"))).score == 1
    within = build_scorer("numeric-diff", {"threshold": 0.01})
    assert (await within.run(run_with("3.1415", 3.14))).score == 1
    assert (await within.run(run_with("3.16", 3.14))).score == 0


@pytest.mark.parametrize("answer", ["about 42", "", "nan", "inf", "true"])
async def test_numeric_diff_refuses_text_that_is_not_a_number(answer: str) -> None:
    with pytest.raises(ScorerError, match="is not a number"):
        await create_numeric_diff_scorer().run(run_with(answer, 42))


def test_numeric_diff_threshold_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="threshold"):
        build_scorer("numeric-diff", {"threshold": -1})


@pytest.mark.parametrize("name", ["exact-match", "levenshtein", "json-diff", "list-contains", "numeric-diff"])
async def test_scorers_without_ground_truth_fail_clearly(name: str) -> None:
    scorer = build_scorer(name)
    # The executor skips a run without ground truth; run directly, the scorer says what is missing.
    assert scorer.needs == {"output", "ground_truth"}
    with pytest.raises(ScorerError, match="compares the output with ground_truth, and the run has none"):
        await scorer.run(run_with("42"))
