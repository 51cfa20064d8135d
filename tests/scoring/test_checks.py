"""Mastra's quick checks (``checks.includes`` ... ``checks.noToolErrors``) against @mastra/evals 1.10.2.

``data/checks_reference.json`` was printed by ``data/checks_reference.mjs`` (Node 20, @mastra/evals
1.10.2, @mastra/core 1.71.0) from ``data/checks_cases.json``: per case the real check's id, name,
description, score, reason and preprocess step result (camelCase keys). Each case's output messages
are built as the same Mastra stored messages the script builds and read through ``to_message``, so
the whole path from Mastra's message shape to the score is compared; scores (the similarity floats
too) and step results compare with ``==``. Every scorer is built through ``build_scorer`` with a
registry of these factories, options given as the case gives them (camelCase) and positional
arguments under their option names. The hand-worked tests below cover what Node cannot show:
content capture off, our message model's differences, option validation.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from schemas import AgentRun
from scoring.prebuilt.checks import (
    create_includes_check,
    create_matches_check,
    create_no_tool_errors_check,
    create_similarity_check,
)
from scoring.registry import SCORERS, ScorerFactory, build_scorer
from scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation
from tests.support.fixture_files import REFERENCES_DIR

DATA = REFERENCES_DIR
CASES: list[dict[str, Any]] = json.loads((DATA / "checks_cases.json").read_text())["cases"]
REFERENCE: dict[str, dict[str, Any]] = json.loads((DATA / "checks_reference.json").read_text())

# The checks as registered (their short names are Mastra's ids).
REGISTRY: dict[str, ScorerFactory] = {
    name: factory for name, factory in SCORERS.items() if name.startswith("check-")
}
assert len(REGISTRY) == 11, sorted(REGISTRY)  # Mastra 1.10.2 has eleven checks
# Mastra's `checks` key -> (our registry name, the option names of its positional arguments).
CHECKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "includes": ("check-includes", ("expected",)),
    "excludes": ("check-excludes", ("unwanted",)),
    "equals": ("check-equals", ("expected",)),
    "matches": ("check-matches", ("pattern", "flags")),
    "similarity": ("check-similarity", ("expected",)),
    "calledTool": ("check-called-tool", ("toolName",)),
    "didNotCall": ("check-did-not-call", ("toolName",)),
    "toolOrder": ("check-tool-order", ("expectedOrder",)),
    "maxToolCalls": ("check-max-tool-calls", ("max",)),
    "usedNoTools": ("check-used-no-tools", ()),
    "noToolErrors": ("check-no-tool-errors", ()),
}
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_keys(step_result: dict[str, Any]) -> dict[str, Any]:
    """Mastra's camelCase step-result keys as ours (its values are never dicts)."""
    return {_HUMP.sub("_", key).lower(): value for key, value in step_result.items()}


def build(case: dict[str, Any]) -> Any:
    name, arg_names = CHECKS[case["check"]]
    options = dict(zip(arg_names, case.get("args", []), strict=False)) | case.get("options", {})
    return build_scorer(name, options, registry=REGISTRY)


def mastra_message(message: dict[str, Any], index: int) -> dict[str, Any]:
    """The stored message checks_reference.mjs builds for the case message (see its header)."""
    text = message.get("text", "")
    return {
        "id": f"m{index}",
        "role": message.get("role", "assistant"),
        "content": {
            "format": 2,
            "parts": [{"type": "text", "text": part} for part in message.get("parts", [text])],
            "content": text,
            "toolInvocations": [
                {
                    "toolCallId": f"call-{index}-{i}",
                    "toolName": tool["name"],
                    "args": tool.get("args", {}),
                    "result": tool.get("result"),
                    "state": tool.get("state", "result"),
                }
                for i, tool in enumerate(message.get("tools", []))
            ],
        },
    }


def run_of(case: dict[str, Any]) -> AgentRun:
    output = [mastra_message(message, i) for i, message in enumerate(case["messages"])]
    return create_agent_test_run(input_messages="go", output=output)


def test_every_case_has_a_reference() -> None:
    assert [case["id"] for case in CASES] == list(REFERENCE)
    assert len(CASES) >= 60
    assert {case["check"] for case in CASES} == set(CHECKS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
async def test_case_matches_mastra(case: dict[str, Any]) -> None:
    reference = REFERENCE[case["id"]]
    scorer = build(case)
    assert (scorer.id, scorer.name, scorer.description) == tuple(reference["scorer"].values())
    result = await scorer.run(run_of(case))
    assert result.score == reference["score"]
    assert result.reason == reference["reason"]  # null: the checks give no reason
    step_result = dict(result.preprocess_step_result)
    if step_result.get("threshold", "given") is None:  # JSON.stringify leaves undefined out
        del step_result["threshold"]
    assert step_result == snake_keys(reference["preprocess"])


# --- What Node cannot show -----------------------------------------------------------------------


def capture_off_run() -> AgentRun:
    """A run as ingested with content capture off: tool names and states, no text."""
    invocations = [
        create_tool_invocation("c1", "search", state="result"),
        create_tool_invocation("c2", "save", state="call"),
    ]
    return create_agent_test_run(
        input_messages="", output=[create_test_message("", "assistant", tool_invocations=invocations)]
    )


@pytest.mark.parametrize(
    "name", ["check-includes", "check-excludes", "check-equals", "check-matches", "check-similarity"]
)
def test_output_checks_need_output_text(name: str) -> None:
    first_option = {"check-matches": "pattern"}.get(
        name, "unwanted" if name == "check-excludes" else "expected"
    )
    scorer = build_scorer(name, {first_option: "x"}, registry=REGISTRY)
    assert scorer.needs == frozenset({"output"})
    # Capture off: the executor records skipped_empty rather than, say, excludes passing on "".
    assert scorer.missing_needs(capture_off_run()) == ["output"]


async def test_tool_checks_need_nothing_and_score_with_capture_off() -> None:
    run = capture_off_run()
    expected = {  # by hand: the run called search (returned) then save (no answer: state call)
        "check-called-tool": ({"tool_name": "save"}, 1),
        "check-did-not-call": ({"tool_name": "save"}, 0),
        "check-tool-order": ({"expected_order": ["search", "save"]}, 1),
        "check-max-tool-calls": ({"max": 1}, 0),
        "check-used-no-tools": ({}, 0),
        "check-no-tool-errors": ({}, 0),
    }
    for name, (options, score) in expected.items():
        scorer = build_scorer(name, options, registry=REGISTRY)
        assert scorer.needs == frozenset(), name
        assert scorer.missing_needs(run) == [], name
        assert (await scorer.run(run)).score == score, name


async def test_messages_without_text_are_left_out_of_the_joined_output() -> None:
    # Our runs hold a text-less assistant message per tool-calling step; Mastra, which merges the
    # steps into one message, would see "" + " " + "It is sunny" here. We join only texts.
    step = create_test_message("", "assistant", tool_invocations=[create_tool_invocation("c1", "weather")])
    run = create_agent_test_run(
        input_messages="go", output=[step, create_test_message("It is sunny", "assistant")]
    )
    result = await create_includes_check("sunny").run(run)
    assert result.preprocess_step_result == {"output": "it is sunny", "target": "sunny", "found": True}
    result = await create_similarity_check("it is sunny").run(run)
    assert result.preprocess_step_result["output"] == "it is sunny"  # no leading space
    assert result.score == 1.0


async def test_ingested_tool_errors_fail_no_tool_errors() -> None:
    # The ingest adapters record a failed tool span (Mastra's isError / output-error) as state "error".
    calls = [
        create_tool_invocation("c1", "search", result={"hits": 3}),
        create_tool_invocation("c2", "save", result="disk full", state="error"),
    ]
    run = create_agent_test_run(
        input_messages="go", output=[create_test_message("", "assistant", tool_invocations=calls)]
    )
    result = await create_no_tool_errors_check().run(run)
    assert result.preprocess_step_result == {"error_count": 1, "total_calls": 2, "passed": False}
    assert result.score == 0


async def test_a_global_regex_gives_the_same_answer_every_run() -> None:
    # Mastra reuses one /\d/g RegExp, so its lastIndex makes a second test of "a1" fail; a scorer
    # here holds no per-run state.
    scorer = create_matches_check(r"\d", "g")
    run = create_agent_test_run(input_messages="go", output="a1")
    assert [(await scorer.run(run)).score for _ in range(3)] == [1, 1, 1]


async def test_similarity_example_and_threshold_edge() -> None:
    run = create_agent_test_run(input_messages="go", output="It is sunny and 72°F")
    # Reference case similarity-partial: 0.5833333333333334; a threshold equal to it passes (>=).
    assert (await create_similarity_check("Sunny, 72°F").run(run)).score == 0.5833333333333334
    assert (await create_similarity_check("Sunny, 72°F", threshold=0.5833333333333334).run(run)).score == 1


def test_snake_and_camel_case_options_build_the_same_check() -> None:
    camel = build_scorer("check-called-tool", {"toolName": "search", "times": 2}, registry=REGISTRY)
    snake = build_scorer("check-called-tool", {"tool_name": "search", "times": 2}, registry=REGISTRY)
    assert camel.description == snake.description == 'Checks that "search" was called at least 2 times'
    flags = build_scorer("check-matches", {"pattern": "a", "flags": "ui"}, registry=REGISTRY)
    assert flags.description == "Checks if output matches pattern /a/iu"  # flags in JS's order


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("check-includes", {}, "expected"),  # the expected text is required
        ("check-includes", {"expected": "a", "caseSensitive": True}, "has no option 'caseSensitive'"),
        ("check-includes", {"expected": "a", "ignore_case": True, "ignoreCase": False}, "given twice"),
        ("check-equals", {"expected": "a", "ignoreCase": "sometimes"}, "invalid options"),
        ("check-did-not-call", {}, "tool_name"),
        ("check-called-tool", {"toolName": "a", "times": -1}, "times must be 0 or more"),
        ("check-called-tool", {"toolName": "a", "times": 1.5}, "invalid options"),
        ("check-max-tool-calls", {"max": -1}, "max must be 0 or more"),
        ("check-max-tool-calls", {}, "max"),
        ("check-tool-order", {"expectedOrder": "search"}, "invalid options"),
        ("check-similarity", {"expected": "a", "threshold": 1.5}, "threshold must be between 0 and 1"),
        ("check-similarity", {"expected": "a", "threshold": -0.1}, "threshold must be between 0 and 1"),
        ("check-used-no-tools", {"max": 1}, "its options: none"),
        ("check-matches", {"pattern": "a", "flags": "y"}, "'y' not supported"),
        ("check-matches", {"pattern": "a", "flags": "v"}, "'v' not supported"),
        ("check-matches", {"pattern": "a", "flags": "ii"}, "invalid regular expression flags"),
        ("check-matches", {"pattern": "a", "flags": "x"}, "invalid regular expression flags"),
        ("check-matches", {"pattern": "(a"}, "unsupported regular expression"),
        ("check-matches", {"pattern": "[a"}, "unterminated character class"),
        ("check-matches", {"pattern": "a\\"}, "lone backslash"),
        ("check-matches", {"pattern": "(?i)a"}, "not JavaScript's"),
        ("check-matches", {"pattern": "(?P<n>a)"}, "not JavaScript's"),
        ("check-matches", {"pattern": "\\Aa"}, "\\A is not a JavaScript regular expression escape"),
        ("check-matches", {"pattern": "[\\S]"}, "\\S inside a character class is not supported"),
        ("check-matches", {"pattern": "\\p{L}", "flags": "u"}, "Unicode property escapes"),
        ("check-matches", {"pattern": "(?<=a+)b"}, "unsupported regular expression"),  # variable lookbehind
        ("check-matches", {"pattern": "\\u{110000}", "flags": "u"}, "invalid code point"),
        ("check-matches", {"pattern": "\\u{41}"}, "unsupported regular expression"),  # \u{} needs u
    ],
)
def test_bad_options_are_refused_at_construction(name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        build_scorer(name, options, registry=REGISTRY)
