"""List contains (VoltAgent's listContains): the same numbers as the autoevals Python package's
``ListContains`` on generated cases, and how the scorer reads a run's output and ground truth."""

from __future__ import annotations

import json

import pytest
from autoevals import ListContains
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.scoring.prebuilt.heuristic.value_strategies import texts
from tests.support.runs import agent_run
from tracescore.scoring import ScorerError
from tracescore.scoring.prebuilt import create_list_contains_scorer
from tracescore.scoring.prebuilt.heuristic.list_contains import list_contains
from tracescore.scoring.prebuilt.registry import build_scorer


@settings(max_examples=200)
@given(
    outputs=st.lists(texts, max_size=6),
    expected=st.lists(texts, max_size=6),
    allow_extra=st.booleans(),
)
def test_list_contains_equals_autoevals(outputs: list[str], expected: list[str], allow_extra: bool) -> None:
    reference = ListContains(allow_extra_entities=allow_extra).eval(outputs, expected).score
    assert list_contains(outputs, expected, allow_extra) == reference


async def test_list_contains_scorer_reads_json_arrays_or_lines() -> None:
    expected = ["red", "blue", "yellow"]
    as_json = agent_run(None, '["red", "blue", "yellow", "green"]', ground_truth=expected)
    assert (await create_list_contains_scorer().run(as_json)).score == 0.75
    assert (await build_scorer("list-contains", {"allowExtraEntities": True}).run(as_json)).score == 1
    as_lines = agent_run(None, "red\n  blue \n\nyellow\n", ground_truth=json.dumps(expected))
    assert (await create_list_contains_scorer().run(as_lines)).score == 1


async def test_list_contains_needs_a_list_as_ground_truth() -> None:
    with pytest.raises(ScorerError, match="needs a list as ground_truth"):
        await create_list_contains_scorer().run(agent_run(None, "red", ground_truth="red"))
