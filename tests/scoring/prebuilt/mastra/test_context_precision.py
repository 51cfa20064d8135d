"""Context precision (Mean Average Precision of the relevant pieces, in context_index order; the
context sources; edge cases).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; every expected score is worked out by hand from Mastra's formula (the
formula cases were also run through @mastra/evals 1.10.2 with a scripted model: same numbers).
"""

from __future__ import annotations

import json

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import deal_run
from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.context_precision import (
    CONTEXT_PRECISION,
    create_context_precision_scorer,
)


def indexed(labels: list[str], order: list[int] | None = None) -> Reply:
    """Verdicts for context pieces 0..n-1, listed in ``order`` (the judge may answer out of order)."""
    order = order if order is not None else list(range(len(labels)))
    rows = [{"context_index": i, "verdict": labels[i], "reason": f"r{i}"} for i in order]
    return json_reply({"verdicts": rows})


@pytest.mark.parametrize(
    ("labels", "scale", "expected"),
    [
        (["yes", "no", "yes"], 1.0, 0.83),  # (1/1 + 2/3) / 2 = 0.8333
        (["no", "yes", "no"], 1.0, 0.5),  # (1/2) / 1
        (["no", "no", "yes", "yes"], 1.0, 0.42),  # (1/3 + 2/4) / 2 = 0.41666
        (["yes", "yes", "no", "no"], 1.0, 1.0),  # (1/1 + 2/2) / 2
        (["no", "yes", "yes", "no", "yes"], 10.0, 5.89),  # (1/2 + 2/3 + 3/5) / 3 = 0.58888 * 10
        (["no", "no"], 1.0, 0.0),  # nothing relevant
    ],
)
async def test_context_precision_is_mean_average_precision(
    llm_server: LLMServer, judge: Judge, labels: list[str], scale: float, expected: float
) -> None:
    pieces = [f"piece {i}" for i in range(len(labels))]
    llm_server.script(indexed(labels), text_reply("Because."))
    scorer = create_context_precision_scorer(judge, scale=scale)
    result = await scorer.run(deal_run("Answer.", "Question?", context=pieces))
    assert result.score == expected
    assert result.reason == "Because."
    analyze, reason = llm_server.chat_requests
    assert CONTEXT_PRECISION.instructions in analyze.messages[0]["content"]
    numbered = "\n".join(f"[{i}] piece {i}" for i in range(len(labels)))
    assert "Context pieces to evaluate:\n<data-" in analyze.messages[1]["content"]
    assert numbered in analyze.messages[1]["content"]
    assert f"Score: {expected:g} out of {scale:g}\n" in reason.messages[1]["content"]


async def test_context_precision_sorts_verdicts_by_context_index(llm_server: LLMServer, judge: Judge) -> None:
    # In index order: yes, no, no -> MAP 1.0; in the order given (no, no, yes) it would be 0.33.
    llm_server.script(indexed(["yes", "no", "no"], order=[2, 1, 0]), text_reply("ok"))
    scorer = create_context_precision_scorer(judge, context=["a", "b", "c"])
    result = await scorer.run(deal_run())
    assert result.score == 1.0
    reason_prompt = llm_server.chat_requests[1].messages[1]["content"]
    expected_json = json.dumps(
        [{"context_index": i, "verdict": v, "reason": f"r{i}"} for i, v in enumerate(["yes", "no", "no"])],
        indent=2,
    )
    assert expected_json in reason_prompt


async def test_context_precision_context_sources(llm_server: LLMServer, judge: Judge) -> None:
    # The run's own context by default (then the scorer needs it); the option or extractor otherwise.
    assert "context" in create_context_precision_scorer(judge).needs
    assert "context" not in create_context_precision_scorer(judge, context=["fixed"]).needs
    with pytest.raises(ValueError, match="cannot be empty"):
        create_context_precision_scorer(judge, context=[])
    llm_server.script(indexed(["yes"]), text_reply("ok"))
    scorer = create_context_precision_scorer(
        judge, context=["fixed"], context_extractor=lambda run: [f"from {run.agent_name}"]
    )
    result = await scorer.run(deal_run(context=["run piece"]))
    assert result.score == 1.0
    assert "[0] from agent" in llm_server.chat_requests[0].messages[1]["content"]
    assert "run piece" not in llm_server.chat_requests[0].messages[1]["content"]


async def test_context_precision_edge_cases(llm_server: LLMServer, judge: Judge) -> None:
    with pytest.raises(ScorerError, match="step 'analyze'.*No context available"):
        await create_context_precision_scorer(judge).run(deal_run(context=[]))
    assert llm_server.chat_requests == []
    llm_server.script(json_reply({"verdicts": []}), text_reply("none"))
    result = await create_context_precision_scorer(judge).run(deal_run(context=["x"]))
    assert result.score == 0.0


async def test_context_precision_invalid_label_fails(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(indexed(["partly"]), indexed(["relevant"]))
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_context_precision_scorer(judge).run(deal_run(context=["x"]))
