"""JSON diff (VoltAgent's jsonDiff): the same numbers as the autoevals Python package's ``JSONDiff`` on
generated cases, and how the scorer reads a run's output and ground truth."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from autoevals import JSONDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.scoring.prebuilt.heuristic.value_strategies import json_values
from tests.support.runs import agent_run
from tracescore.scoring.prebuilt.heuristic.json_diff import json_diff
from tracescore.scoring.prebuilt.registry import build_scorer


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


async def test_json_diff_scorer_parses_the_output() -> None:
    expected = {"name": "John", "age": 30, "tags": ["a"]}
    run = agent_run(None, '{"name": "John", "age": 30, "tags": ["a"]}', ground_truth=expected)
    assert (await build_scorer("json-diff").run(run)).score == 1
    run = agent_run(
        None, '{"name": "John", "age": 30}', ground_truth='{"name": "John", "age": 60, "x": null}'
    )
    # name 1, age 1 - 30/90, x: null on both sides 1 -> mean over three keys
    assert (await build_scorer("json-diff").run(run)).score == pytest.approx((1 + (1 - 30 / 90) + 1) / 3)
