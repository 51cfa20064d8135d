"""Context recall (Mastra's share of ground-truth claims the context supports; ground-truth edge
cases; the context option).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; every expected score is worked out by hand from Mastra's formula (the
formula cases were also run through @mastra/evals 1.10.2 with a scripted model: same numbers).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import deal_run, verdicts
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tracescore.schemas import AgentRun
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.context_recall import (
    CONTEXT_RECALL,
    create_context_recall_scorer,
)


def recall_run(ground_truth: Any, context: list[str] | None = None) -> AgentRun:
    return deal_run(context=context or ["Einstein was born in 1879 in Ulm."]).model_copy(
        update={"ground_truth": ground_truth}
    )


@pytest.mark.parametrize(
    ("claims", "labels", "scale", "expected"),
    [
        (3, ["yes", "no", "yes"], 1.0, 0.67),  # 2/3
        (2, ["yes", "yes"], 1.0, 1.0),
        (4, ["no", "no", "no", "yes"], 1.0, 0.25),
        (3, ["yes", "no", "no"], 5.0, 1.67),  # 1/3 * 5 = 1.666..
        (2, ["yes", "yes", "yes"], 1.0, 1.0),  # more verdicts than claims: capped at 1
        (3, ["yes"], 1.0, 0.33),  # fewer verdicts than claims: divided by the claims
    ],
)
async def test_context_recall_is_the_share_of_attributed_claims(
    llm_server: LLMServer, judge: Judge, claims: int, labels: list[str], scale: float, expected: float
) -> None:
    claim_texts = [f"claim {i}" for i in range(claims)]
    llm_server.script(
        json_reply({"claims": claim_texts}), verdicts("verdicts", "verdict", labels), text_reply("Covered.")
    )
    run = recall_run("Einstein was born in 1879. He was born in Ulm.")
    result = await create_context_recall_scorer(judge, scale=scale).run(run)
    assert result.score == expected
    assert result.reason == "Covered."
    extract, analyze, reason = llm_server.chat_requests
    assert CONTEXT_RECALL.instructions in extract.messages[0]["content"]
    assert "Ground-Truth Answer:\n<data-" in extract.messages[1]["content"]
    assert "Einstein was born in 1879. He was born in Ulm." in extract.messages[1]["content"]
    analyze_prompt = analyze.messages[1]["content"]
    assert f"Number of claims: {claims}\n" in analyze_prompt
    assert "\n".join(f"[{i}] claim {i}" for i in range(claims)) in analyze_prompt
    assert "[0] Einstein was born in 1879 in Ulm." in analyze_prompt
    assert f"Score: {expected:g} out of {scale:g}\n" in reason.messages[1]["content"]


async def test_context_recall_ground_truth_edge_cases(llm_server: LLMServer, judge: Judge) -> None:
    # No ground truth: the judge is still asked (as Mastra does), the score is 0 whatever it says.
    llm_server.script(
        json_reply({"claims": ["x"]}), verdicts("verdicts", "verdict", ["yes"]), text_reply("-")
    )
    assert (await create_context_recall_scorer(judge).run(recall_run(None))).score == 0.0
    assert "Ground-Truth Answer:\n<data-" in llm_server.chat_requests[0].messages[1]["content"]
    # NaN is falsy in JavaScript: no ground truth either, as Mastra's `!run.groundTruth` reads it.
    llm_server.script(
        json_reply({"claims": ["x"]}), verdicts("verdicts", "verdict", ["yes"]), text_reply("-")
    )
    assert (await create_context_recall_scorer(judge).run(recall_run(float("nan")))).score == 0.0
    # No claims extracted: 0.
    llm_server.script(json_reply({"claims": []}), json_reply({"verdicts": []}), text_reply("-"))
    assert (await create_context_recall_scorer(judge).run(recall_run("Something."))).score == 0.0
    # A structured ground truth is sent as compact JSON (JSON.stringify).
    llm_server.script(
        json_reply({"claims": ["a"]}), verdicts("verdicts", "verdict", ["yes"]), text_reply("-")
    )
    result = await create_context_recall_scorer(judge).run(recall_run({"born": 1879, "city": "Ulm"}))
    assert result.score == 1.0
    assert '{"born":1879,"city":"Ulm"}' in llm_server.chat_requests[-3].messages[1]["content"]


async def test_context_recall_context_option_and_needs(llm_server: LLMServer, judge: Judge) -> None:
    assert create_context_recall_scorer(judge).needs == {"context", "ground_truth"}
    assert create_context_recall_scorer(judge, context=["fixed"]).needs == {"ground_truth"}
    with pytest.raises(ValueError, match="cannot be empty"):
        create_context_recall_scorer(judge, context=[])
    llm_server.script(json_reply({"claims": ["a"]}), verdicts("verdicts", "verdict", ["no"]), text_reply("-"))
    result = await create_context_recall_scorer(judge, context=["fixed piece"]).run(recall_run("A."))
    assert result.score == 0.0
    assert "[0] fixed piece" in llm_server.chat_requests[1].messages[1]["content"]


async def test_context_recall_invalid_label_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = verdicts("verdicts", "verdict", ["partially"])
    llm_server.script(json_reply({"claims": ["a"]}), bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_context_recall_scorer(judge).run(recall_run("A."))
