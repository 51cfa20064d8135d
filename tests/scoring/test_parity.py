"""Parity with the published @mastra/evals 1.10.2 code scorers, to the last bit of the float.

The fixtures ``tests/fixtures/mastra_parity`` (cases.json, reference.json) were computed with Node by
its mastra_reference.mjs; the runs here are built the way that script builds them: the case
input is one user message, the output one assistant message whose tool invocations are named by
``tools``. The extra tables below came from @mastra/evals 1.10.2 under Node 20 the same way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas import AgentRun, Message, Part, RunInput, ToolInvocation
from scoring import ScorerError
from scoring.prebuilt import (
    create_content_similarity_scorer,
    create_textual_difference_scorer,
    create_tool_call_accuracy_scorer_code,
)
from scoring.registry import build_scorer
from scoring.scorer import Scorer
from scoring.text import extract_tool_calls, js_collapse_whitespace, js_trim, message_text, output_text
from tests.support.fixture_files import PARITY_DIR

CASES: list[dict[str, Any]] = json.loads((PARITY_DIR / "cases.json").read_text(encoding="utf-8"))
REFERENCE: dict[str, dict[str, Any]] = {
    entry["id"]: entry["scores"]
    for entry in json.loads((PARITY_DIR / "reference.json").read_text(encoding="utf-8"))
}

TEXT_SCORERS = {
    "content-similarity": lambda: create_content_similarity_scorer(),
    "content-similarity-exact": lambda: create_content_similarity_scorer(
        ignore_case=False, ignore_whitespace=False
    ),
    "textual-difference": lambda: create_textual_difference_scorer(),
}


def run_like_reference(
    user: str, answer: str, tools: list[str] | None = None, states: list[str] | None = None
) -> AgentRun:
    """The run mastra_reference.mjs builds for a case."""
    return AgentRun(
        input=RunInput(input_messages=[Message(id="u1", role="user", content=user)]),
        output=[
            Message(
                id="a1",
                role="assistant",
                content=answer,
                tool_invocations=[
                    ToolInvocation(
                        tool_call_id=f"call-{i}",
                        tool_name=name,
                        args={},
                        result={},
                        state=(states or [])[i] if i < len(states or []) else "result",
                    )
                    for i, name in enumerate(tools or [])
                ],
            )
        ],
    )


def _text_params() -> list[Any]:
    params = []
    for case in CASES:
        for name in TEXT_SCORERS:
            if name in REFERENCE[case["id"]]:
                params.append(pytest.param(case, name, id=f"{case['id']}-{name}"))
    return params


def _tool_params() -> list[Any]:
    return [
        pytest.param(case, id=case["id"])
        for case in CASES
        if "code-tool-call-accuracy" in REFERENCE[case["id"]]
    ]


def test_the_fixtures_cover_every_scorer() -> None:
    assert len(_text_params()) >= 3 * 30
    assert len(_tool_params()) >= 10


@pytest.mark.parametrize(("case", "scorer_name"), _text_params())
async def test_text_scorers_match_mastra(case: dict[str, Any], scorer_name: str) -> None:
    expected = REFERENCE[case["id"]][scorer_name]
    result = await TEXT_SCORERS[scorer_name]().run(run_like_reference(case["input"], case["output"]))
    assert result.score == expected


@pytest.mark.parametrize("case", _tool_params())
async def test_tool_call_accuracy_matches_mastra(case: dict[str, Any]) -> None:
    expected = REFERENCE[case["id"]]["code-tool-call-accuracy"]
    # Options in Mastra's camelCase, straight from the case, through the registry.
    scorer = build_scorer("code-tool-call-accuracy-scorer", case["tool_options"])
    result = await scorer.run(run_like_reference(case["input"], case["output"], case.get("tools")))
    assert result.score == expected


# (id, input, output, content-similarity, content-similarity exact, textual difference,
#  textual-difference preprocess: ratio, confidence, changes, length_diff)
# Computed with Node 20 and @mastra/evals 1.10.2 (createContentSimilarityScorer() and with
# {ignoreCase: false, ignoreWhitespace: false}, createTextualDifferenceScorer()).
UNICODE_CASES = [
    ("emoji", "I love pizza 🍕🍕 and 🎉 parties", "pizza 🍕 party 🎉",
     0.5263157894736842, 0.5263157894736842, 0.5306122448979592, (0.53125, 5, 0.46875)),
    ("math-letters", "𝐇𝐞𝐥𝐥𝐨 world", "Hello 𝐰𝐨𝐫𝐥𝐝",
     0.21428571428571427, 0.21428571428571427, 0.375, (1, 2, 0)),
    ("shared-surrogate", "😀😁", "😀😃", 0.6666666666666666, 0.6666666666666666, 0.75, (1, 1, 0)),
    ("single-emoji", "🍕", "🍕!", 0.6666666666666666, 0.6666666666666666, 0.8,
     (0.6666666666666667, 1, 0.3333333333333333)),
    ("unicode-spaces", "hello\u00a0world\ufeff  foo\u3000bar", "hello world foo bar",
     1, 1, 0.85, (0.9047619047619048, 1, 0.09523809523809523)),
    ("python-only-spaces", "a\u001cb\u0085c d", "a b c d", 0.25, 0.25, 0.7142857142857143, (1, 3, 0)),
    ("zero-width", "zero\u200bwidth text", "zerowidth text",
     0.88, 0.88, 0.9655172413793104, (0.9333333333333333, 1, 0.06666666666666667)),
    ("special-case", "İstanbul ΣΟΦΟΣ Straße", "istanbul σοφος strasse",
     0.7894736842105263, 0.43243243243243246, 0.6046511627906976,
     (0.9545454545454546, 3, 0.045454545454545456)),
    ("deseret-case", "𐐀𐐁 Deseret", "𐐨𐐩 deseret", 1, 0.5, 0.75, (1, 2, 0)),
    ("whitespace-only-diff", "a  b\tc\n", "a b c",
     1, 1, 0.6666666666666666, (0.7142857142857143, 1, 0.2857142857142857)),
    ("combining", "cafe\u0301 ole\u0301", "café olé", 0.42857142857142855, 0.42857142857142855,
     0.6666666666666666, (0.8, 2, 0.2)),
    ("line-separators", "\u2028line\u2029para\u205fx\u1680y", "line para x y",
     1, 1, 0.7407407407407407, (0.9285714285714286, 1, 0.07142857142857142)),
    ("flags-zwj", "family 👨‍👩‍👧 and 🇫🇷 flag", "family 👨‍👩‍👦 and 🇩🇪 flag",
     0.75, 0.75, 0.896551724137931, (1, 2, 0)),
    ("leading-trailing", "\ufeff\u3000 padded \u00a0", "padded",
     1, 1, 0.7058823529411765, (0.5454545454545454, 1, 0.45454545454545453)),
    ("emoji-only-vs-text", "🙂🙃🙂🙃", "smile", 0, 0, 0, (0.625, 1, 0.375)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("user", "answer", "similarity", "exact", "difference", "details"),
    [pytest.param(*case[1:], id=case[0]) for case in UNICODE_CASES],
)
async def test_unicode_and_whitespace_match_mastra(
    user: str,
    answer: str,
    similarity: float,
    exact: float,
    difference: float,
    details: tuple[float, int, float],
) -> None:
    run = run_like_reference(user, answer)
    assert (await create_content_similarity_scorer().run(run)).score == similarity
    assert (await create_content_similarity_scorer(False, False).run(run)).score == exact
    result = await create_textual_difference_scorer().run(run)
    confidence, changes, length_diff = details
    assert result.score == difference
    assert result.preprocess_step_result == {
        "ratio": difference,
        "confidence": confidence,
        "changes": changes,
        "length_diff": length_diff,
    }


# (id, tools, states, options, score or the error Mastra raised), from @mastra/evals 1.10.2 under
# Node 20 with createToolCallAccuracyScorerCode(options); "error" is Mastra's state "output-error".
TOOL_CASES = [
    ("empty-order-no-calls", [], None, {"expectedToolOrder": []}, 0),
    ("empty-order-with-call", ["a"], None, {"expectedToolOrder": []}, 0),
    ("repeated-expected-tool", ["a", "b"], None, {"expectedToolOrder": ["a", "a"]}, 0),
    ("first-call-decides-order", ["b", "a", "b"], None, {"expectedToolOrder": ["a", "b"]}, 0),
    ("strict-order", ["a", "b"], None, {"expectedToolOrder": ["a", "b"], "strictMode": True}, 1),
    ("thrown-call-counts", ["a"], ["error"], {"expectedTool": "a", "strictMode": True}, 1),
    ("call-state-counts", ["a", "b"], ["call", "error"], {"expectedToolOrder": ["a", "b"]}, 1),
    ("empty-order-falls-back", ["a", "b"], None,
     {"expectedTool": "b", "expectedToolOrder": [], "strictMode": True}, 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tools", "states", "options", "expected"), [pytest.param(*case[1:], id=case[0]) for case in TOOL_CASES]
)
async def test_tool_call_edge_cases_match_mastra(
    tools: list[str], states: list[str] | None, options: dict[str, Any], expected: int
) -> None:
    scorer = build_scorer("tool-call-accuracy-code", options)
    assert (await scorer.run(run_like_reference("hi", "ok", tools, states))).score == expected


async def test_tool_call_preprocess_result_mirrors_mastra() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b"])
    result = await scorer.run(run_like_reference("hi", "ok", ["b", "a", "b"]))
    # Mastra's preprocessStepResult for the same run, in snake_case.
    assert result.preprocess_step_result["actual_tools"] == ["b", "a", "b"]
    assert result.preprocess_step_result["correct_order_called"] is False
    assert result.preprocess_step_result["correct_tool_called"] is False
    assert result.preprocess_step_result["has_tool_calls"] is True
    assert result.step_results()["preprocess_step_result"]["tool_call_infos"][2] == {
        "tool_name": "b",
        "tool_call_id": "call-2",
        "message_index": 0,
        "invocation_index": 2,
    }


def test_tool_call_accuracy_needs_an_expectation() -> None:
    # Mastra: "Either expectedTool or expectedToolOrder must be provided".
    with pytest.raises(ValueError, match="Either expectedTool or expectedToolOrder must be provided"):
        create_tool_call_accuracy_scorer_code()


@pytest.mark.parametrize("empty", ["input", "output"])
async def test_tool_call_accuracy_refuses_runs_without_messages(empty: str) -> None:
    # Mastra: "Input and output messages cannot be null or empty".
    run = run_like_reference("hi", "ok", ["a"])
    run = run.model_copy(update={"input": RunInput()} if empty == "input" else {"output": []})
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="a")
    with pytest.raises(ScorerError, match="Input and output messages cannot be null or empty"):
        await scorer.run(run)


@pytest.mark.parametrize("make", [*TEXT_SCORERS.values()])
async def test_tool_only_steps_do_not_change_text_scores(make: Any) -> None:
    # Our runs keep one assistant message per LLM step; a step that only called a tool has no
    # text. Scored as Mastra scores the merged message (reference case c000).
    case = next(case for case in CASES if case["id"] == "c000")
    run = run_like_reference(case["input"], case["output"])
    tool_step = Message(
        role="assistant", tool_invocations=[ToolInvocation(tool_name="search", state="result")]
    )
    split = run.model_copy(update={"output": [tool_step, *run.output]})
    scorer: Scorer = make()
    assert (await scorer.run(split)).score == (await scorer.run(run)).score


def test_output_text_skips_text_less_messages_only() -> None:
    run = AgentRun(
        output=[
            Message(role="assistant", content="first"),
            Message(role="assistant"),
            Message(role="assistant", content="second"),
        ]
    )
    assert output_text(run) == "first, second"


def test_message_text_falls_back_to_the_last_text_part() -> None:
    parts = [
        Part(type="text", text="early"),
        Part(type="reasoning", text="hmm"),
        Part(type="text", text="late"),
    ]
    assert message_text(Message(role="assistant", parts=parts)) == "late"
    assert message_text(Message(role="assistant", content="content wins", parts=parts)) == "content wins"
    assert message_text(Message(role="assistant", parts=[Part(type="reasoning", text="hmm")])) == ""


def test_extract_tool_calls_like_mastra() -> None:
    output = [
        Message(role="assistant", tool_invocations=[ToolInvocation(tool_name="a", state="call")]),
        Message(
            role="assistant",
            tool_invocations=[
                ToolInvocation(tool_call_id="x-1", tool_name="b", state="error"),
                ToolInvocation(tool_call_id="x-2", tool_name="", state="result"),
                ToolInvocation(tool_name="c", state="result"),
            ],
        ),
    ]
    names, infos = extract_tool_calls(output)
    assert names == ["a", "b", "c"]
    assert [(i.tool_call_id, i.message_index, i.invocation_index) for i in infos] == [
        ("0-0", 0, 0),
        ("x-1", 1, 0),
        ("1-2", 1, 2),
    ]


def test_javascript_whitespace_set() -> None:
    assert js_trim("\ufeff\u3000 x \u00a0\u2029") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"  # whitespace to Python, not to JavaScript
    assert js_collapse_whitespace(" a \t\n b\u200a\u205fc ") == "a b c"
