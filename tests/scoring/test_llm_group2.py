"""LLM-judge prebuilt scorers (bias, toxicity, context precision / relevance / recall).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorers through
litellm's real HTTP path; every expected score is worked out by hand from Mastra's formulas (the
formula cases were also run through @mastra/evals 1.10.2 with a scripted model: same numbers).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas import AgentRun, Message, RunInput
from scoring import ScorerError
from scoring.judge import Judge
from scoring.prebuilt.mastra.bias import BIAS_AGENT_INSTRUCTIONS, create_bias_scorer
from scoring.prebuilt.mastra.context_precision import (
    CONTEXT_PRECISION_AGENT_INSTRUCTIONS,
    create_context_precision_scorer,
)
from scoring.prebuilt.mastra.context_recall import (
    CONTEXT_RECALL_AGENT_INSTRUCTIONS,
    create_context_recall_scorer,
)
from scoring.prebuilt.mastra.context_relevance import (
    CONTEXT_RELEVANCE_INSTRUCTIONS,
    create_context_relevance_scorer,
)
from scoring.prebuilt.mastra.toxicity import TOXICITY_AGENT_INSTRUCTIONS, create_toxicity_scorer
from scoring.registry import build_scorer
from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply

MODEL = "openai/gpt-4o-mini"


def make_run(
    answer: str = "The executive closed the deal.",
    question: str = "Who closed the deal?",
    context: list[str] | None = None,
) -> AgentRun:
    return AgentRun(
        trace_id=f"{1:032x}",
        span_id=f"{1:016x}",
        agent_name="agent",
        input=RunInput(input_messages=[Message(role="user", content=question)]),
        output=[Message(role="assistant", content=answer)],
        context=context or [],
    )


def judge_for(server: LLMServer) -> Judge:
    return Judge(MODEL, "ignored", api_base=server.api_base, api_key="k", backoff_initial_s=0.01)


def verdicts(key: str, label: str, labels: list[str]) -> Reply:
    return json_reply({key: [{label: value, "reason": f"r{i}"} for i, value in enumerate(labels)]})


# --- bias ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "scale", "expected"),
    [
        (["yes", "no", "no"], 1.0, 0.33),  # 1/3 = 0.333.. -> 0.33
        (["yes", "yes", "no"], 1.0, 0.67),  # 2/3 -> 0.67
        (["no", "no"], 1.0, 0.0),
        (["YES", "Yes", "no", "no"], 10.0, 5.0),  # labels compared lower-cased; 2/4 * 10
        (["yes", "no", "no"], 0.0, 0.33),  # scale 0 is Mastra's `scale || 1`
        (["yes", "no", "no", "no", "no", "no", "no", "no"], 1.0, 0.13),  # 0.125 rounds half up
    ],
)
async def test_bias_score_is_the_share_of_biased_opinions(
    llm_server: LLMServer, labels: list[str], scale: float, expected: float
) -> None:
    opinions = [f"opinion {i}" for i in range(len(labels))]
    llm_server.script(
        json_reply({"opinions": opinions}),
        verdicts("results", "result", labels),
        text_reply("The score is low."),
    )
    result = await create_bias_scorer(judge_for(llm_server), scale=scale).run(make_run("Bossy answer."))
    assert result.score == expected
    assert result.reason == "The score is low."
    extract, analyze, reason = llm_server.chat_requests
    # Mastra's instructions replace the judge's own; trace content sits inside data markers.
    assert BIAS_AGENT_INSTRUCTIONS in extract.messages[0]["content"]
    assert "ignored" not in extract.messages[0]["content"]
    assert "Text:\n<data-" in extract.messages[1]["content"]
    assert "Bossy answer." in extract.messages[1]["content"]
    assert "\n".join(opinions) in analyze.messages[1]["content"]
    assert "Opinions:\n<data-" in analyze.messages[1]["content"]
    assert f"Bias Score:\n{expected:g}\n" in reason.messages[1]["content"]
    assert "\n".join(f"r{i}" for i in range(len(labels))) in reason.messages[1]["content"]


async def test_bias_without_verdicts_scores_zero(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"opinions": []}), json_reply({"results": []}), text_reply("None."))
    result = await create_bias_scorer(judge_for(llm_server)).run(make_run())
    assert result.score == 0.0
    # The reason prompt prints the score as JavaScript does: 0, not 0.0.
    assert "Bias Score:\n0\n" in llm_server.chat_requests[2].messages[1]["content"]


async def test_bias_invalid_label_is_repaired_once_then_fails(llm_server: LLMServer) -> None:
    bad = verdicts("results", "result", ["maybe"])
    llm_server.script(json_reply({"opinions": ["x"]}), bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_bias_scorer(judge_for(llm_server)).run(make_run())
    assert len(llm_server.chat_requests) == 3  # extract, analyze, one repair; no score, no reason


@pytest.mark.parametrize("bad_label", ["biased", " yes "])
async def test_bias_invalid_label_repaired_gives_a_score(llm_server: LLMServer, bad_label: str) -> None:
    # Mastra does not trim bias labels: " yes " is no allowed label (Mastra would count it "no").
    llm_server.script(
        json_reply({"opinions": ["x", "y"]}),
        verdicts("results", "result", [bad_label, "no"]),
        verdicts("results", "result", ["yes", "no"]),
        text_reply("Half."),
    )
    result = await create_bias_scorer(judge_for(llm_server)).run(make_run())
    assert result.score == 0.5
    repair = llm_server.chat_requests[2].messages
    assert repair[-1]["content"].startswith("Your answer was not valid JSON")


# --- toxicity -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "scale", "expected"),
    [
        (["yes", "no", "no"], 1.0, 0.33),
        (["yes", "yes", "yes"], 1.0, 1.0),
        (["no"], 1.0, 0.0),
        (["yes", "no", "no", "no"], 2.0, 0.5),  # 1/4 * 2
        ([], 1.0, 1.0),  # no verdicts: Mastra scores 1 (and ignores scale)
        ([], 5.0, 1.0),
    ],
)
async def test_toxicity_score_is_the_share_of_toxic_verdicts(
    llm_server: LLMServer, labels: list[str], scale: float, expected: float
) -> None:
    llm_server.script(verdicts("verdicts", "verdict", labels), text_reply("Explained."))
    run = make_run("You are clueless.", question="What do you think of me?")
    result = await create_toxicity_scorer(judge_for(llm_server), scale=scale).run(run)
    assert result.score == expected
    assert result.reason == "Explained."
    analyze, reason = llm_server.chat_requests
    assert TOXICITY_AGENT_INSTRUCTIONS in analyze.messages[0]["content"]
    prompt = analyze.messages[1]["content"]
    assert "input:\n<data-" in prompt and "What do you think of me?" in prompt
    assert "Opinions:\n<data-" in prompt and "You are clueless." in prompt
    assert f"Toxicity Score:\n{expected:g}\n" in reason.messages[1]["content"]


async def test_toxicity_invalid_label_fails_without_a_score(llm_server: LLMServer) -> None:
    bad = verdicts("verdicts", "verdict", ["somewhat"])
    llm_server.script(bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_toxicity_scorer(judge_for(llm_server)).run(make_run())
    assert len(llm_server.chat_requests) == 2


# --- context precision (MAP) --------------------------------------------------------------------


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
    llm_server: LLMServer, labels: list[str], scale: float, expected: float
) -> None:
    pieces = [f"piece {i}" for i in range(len(labels))]
    llm_server.script(indexed(labels), text_reply("Because."))
    scorer = create_context_precision_scorer(judge_for(llm_server), scale=scale)
    result = await scorer.run(make_run("Answer.", "Question?", context=pieces))
    assert result.score == expected
    assert result.reason == "Because."
    analyze, reason = llm_server.chat_requests
    assert CONTEXT_PRECISION_AGENT_INSTRUCTIONS in analyze.messages[0]["content"]
    numbered = "\n".join(f"[{i}] piece {i}" for i in range(len(labels)))
    assert "Context pieces to evaluate:\n<data-" in analyze.messages[1]["content"]
    assert numbered in analyze.messages[1]["content"]
    assert f"Score: {expected:g} out of {scale:g}\n" in reason.messages[1]["content"]


async def test_context_precision_sorts_verdicts_by_context_index(llm_server: LLMServer) -> None:
    # In index order: yes, no, no -> MAP 1.0; in the order given (no, no, yes) it would be 0.33.
    llm_server.script(indexed(["yes", "no", "no"], order=[2, 1, 0]), text_reply("ok"))
    scorer = create_context_precision_scorer(judge_for(llm_server), context=["a", "b", "c"])
    result = await scorer.run(make_run())
    assert result.score == 1.0
    reason_prompt = llm_server.chat_requests[1].messages[1]["content"]
    expected_json = json.dumps(
        [{"context_index": i, "verdict": v, "reason": f"r{i}"} for i, v in enumerate(["yes", "no", "no"])],
        indent=2,
    )
    assert expected_json in reason_prompt


async def test_context_precision_context_sources(llm_server: LLMServer) -> None:
    judge = judge_for(llm_server)
    # The run's own context by default (then the scorer needs it); the option or extractor otherwise.
    assert "context" in create_context_precision_scorer(judge).needs
    assert "context" not in create_context_precision_scorer(judge, context=["fixed"]).needs
    with pytest.raises(ValueError, match="cannot be empty"):
        create_context_precision_scorer(judge, context=[])
    llm_server.script(indexed(["yes"]), text_reply("ok"))
    scorer = create_context_precision_scorer(
        judge, context=["fixed"], context_extractor=lambda run: [f"from {run.agent_name}"]
    )
    result = await scorer.run(make_run(context=["run piece"]))
    assert result.score == 1.0
    assert "[0] from agent" in llm_server.chat_requests[0].messages[1]["content"]
    assert "run piece" not in llm_server.chat_requests[0].messages[1]["content"]


async def test_context_precision_edge_cases(llm_server: LLMServer) -> None:
    judge = judge_for(llm_server)
    with pytest.raises(ScorerError, match="step 'analyze'.*No context available"):
        await create_context_precision_scorer(judge).run(make_run(context=[]))
    assert llm_server.chat_requests == []
    llm_server.script(json_reply({"verdicts": []}), text_reply("none"))
    result = await create_context_precision_scorer(judge).run(make_run(context=["x"]))
    assert result.score == 0.0


async def test_context_precision_invalid_label_fails(llm_server: LLMServer) -> None:
    llm_server.script(indexed(["partly"]), indexed(["relevant"]))
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_context_precision_scorer(judge_for(llm_server)).run(make_run(context=["x"]))


# --- context relevance (weighted levels and penalties) ----------------------------------------


def evaluations(rated: list[tuple[str, bool]], missing: list[str] | None = None) -> Reply:
    rows = [
        {
            "context_index": i,
            "contextPiece": f"piece {i}",
            "relevanceLevel": level,
            "wasUsed": used,
            "reasoning": f"why {i}",
        }
        for i, (level, used) in enumerate(rated)
    ]
    return json_reply({"evaluations": rows, "missingContext": missing or [], "overallAssessment": "ok"})


@pytest.mark.parametrize(
    ("rated", "missing", "options", "expected"),
    [
        # base = mean weight: (1 + 0.7 + 0.3 + 0) / 4
        ([("high", True), ("medium", True), ("low", True), ("none", True)], [], {}, 0.5),
        # 1.0 - 0.1 (one unused high) - 0.15 (one missing item)
        ([("high", False), ("high", True)], ["dates"], {}, 0.75),
        # 0.7 - min(5 * 0.15, 0.5)
        ([("medium", True), ("medium", False)], list("abcde"), {}, 0.2),
        # (1 + 0.3) / 2 * 10; an unused low piece costs nothing
        ([("high", True), ("low", False)], [], {"scale": 10.0}, 6.5),
        # 0 - 0.15 clamps to 0
        ([("none", False)], ["x"], {}, 0.0),
        # camelCase penalties: 1.0 - 0.25 - min(2 * 0.2, 0.3)
        (
            [("high", False), ("high", True)],
            ["x", "y"],
            {
                "penalties": {
                    "unusedHighRelevanceContext": 0.25,
                    "missingContextPerItem": 0.2,
                    "maxMissingContextPenalty": 0.3,
                }
            },
            0.45,
        ),
        # a zero penalty is respected (Mastra's `??`), not replaced by the default
        ([("high", False)], [], {"penalties": {"unused_high_relevance_context": 0}}, 1.0),
    ],
)
async def test_context_relevance_weights_and_penalties(
    llm_server: LLMServer,
    rated: list[tuple[str, bool]],
    missing: list[str],
    options: dict[str, Any],
    expected: float,
) -> None:
    llm_server.script(evaluations(rated, missing), text_reply("Reasoned."))
    scorer = create_context_relevance_scorer(judge_for(llm_server), **options)
    pieces = [f"piece {i}" for i in range(len(rated))]
    result = await scorer.run(make_run("Answer.", "Question?", context=pieces))
    assert result.score == expected
    assert result.reason == "Reasoned."
    analyze, reason = llm_server.chat_requests
    assert CONTEXT_RELEVANCE_INSTRUCTIONS in analyze.messages[0]["content"]
    assert "User Query:\n<data-" in analyze.messages[1]["content"]
    assert "[0] piece 0" in analyze.messages[1]["content"]
    reason_prompt = reason.messages[1]["content"]
    level, used = rated[0]
    assert f"[0] Relevance: {level}, Used: {'Yes' if used else 'No'}\n" in reason_prompt
    assert '   Context: "piece 0"\n   Reasoning: why 0' in reason_prompt
    assert ("Missing Context Issues:" in reason_prompt) == bool(missing)
    assert f"Score: {expected:g} out of {options.get('scale', 1):g}\n" in reason_prompt


@pytest.mark.parametrize(("missing", "expected"), [(["x"], 0.0), ([], 1.0)])
async def test_context_relevance_without_evaluations(
    llm_server: LLMServer, missing: list[str], expected: float
) -> None:
    # Mastra returns these two unscaled.
    llm_server.script(evaluations([], missing), text_reply("r"))
    scorer = create_context_relevance_scorer(judge_for(llm_server), scale=10)
    assert (await scorer.run(make_run(context=["c"]))).score == expected


async def test_context_relevance_without_context_scores_the_scale(llm_server: LLMServer) -> None:
    llm_server.script(evaluations([]), text_reply("No context."))
    scorer = create_context_relevance_scorer(judge_for(llm_server), scale=4, context_extractor=lambda run: [])
    result = await scorer.run(make_run(context=["ignored: the extractor decides"]))
    assert result.score == 4.0
    analyze, reason = llm_server.chat_requests
    assert "[0] [No context was provided for evaluation]" in analyze.messages[1]["content"]
    assert reason.messages[1]["content"] == (
        "No context was available for evaluation. The agent response was generated without any "
        "supporting context. Score: 4"
    )


@pytest.mark.parametrize(
    "bad_field", [{"relevanceLevel": "very high"}, {"relevanceLevel": "High"}, {"wasUsed": "yes"}]
)
async def test_context_relevance_invalid_answer_fails(
    llm_server: LLMServer, bad_field: dict[str, Any]
) -> None:
    row = {
        "context_index": 0,
        "contextPiece": "c",
        "relevanceLevel": "high",
        "wasUsed": True,
        "reasoning": "r",
    }
    bad = json_reply({"evaluations": [{**row, **bad_field}], "overallAssessment": "ok"})
    llm_server.script(bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_context_relevance_scorer(judge_for(llm_server)).run(make_run(context=["c"]))
    with pytest.raises(ValueError):
        create_context_relevance_scorer(judge_for(llm_server), penalties={"unknownPenalty": 1})


# --- context recall ------------------------------------------------------------------------------


def recall_run(ground_truth: Any, context: list[str] | None = None) -> AgentRun:
    return make_run(context=context or ["Einstein was born in 1879 in Ulm."]).model_copy(
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
    llm_server: LLMServer, claims: int, labels: list[str], scale: float, expected: float
) -> None:
    claim_texts = [f"claim {i}" for i in range(claims)]
    llm_server.script(
        json_reply({"claims": claim_texts}), verdicts("verdicts", "verdict", labels), text_reply("Covered.")
    )
    run = recall_run("Einstein was born in 1879. He was born in Ulm.")
    result = await create_context_recall_scorer(judge_for(llm_server), scale=scale).run(run)
    assert result.score == expected
    assert result.reason == "Covered."
    extract, analyze, reason = llm_server.chat_requests
    assert CONTEXT_RECALL_AGENT_INSTRUCTIONS in extract.messages[0]["content"]
    assert "Ground-Truth Answer:\n<data-" in extract.messages[1]["content"]
    assert "Einstein was born in 1879. He was born in Ulm." in extract.messages[1]["content"]
    analyze_prompt = analyze.messages[1]["content"]
    assert f"Number of claims: {claims}\n" in analyze_prompt
    assert "\n".join(f"[{i}] claim {i}" for i in range(claims)) in analyze_prompt
    assert "[0] Einstein was born in 1879 in Ulm." in analyze_prompt
    assert f"Score: {expected:g} out of {scale:g}\n" in reason.messages[1]["content"]


async def test_context_recall_ground_truth_edge_cases(llm_server: LLMServer) -> None:
    judge = judge_for(llm_server)
    # No ground truth: the judge is still asked (as Mastra does), the score is 0 whatever it says.
    llm_server.script(
        json_reply({"claims": ["x"]}), verdicts("verdicts", "verdict", ["yes"]), text_reply("-")
    )
    assert (await create_context_recall_scorer(judge).run(recall_run(None))).score == 0.0
    assert "Ground-Truth Answer:\n<data-" in llm_server.chat_requests[0].messages[1]["content"]
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


async def test_context_recall_context_option_and_needs(llm_server: LLMServer) -> None:
    judge = judge_for(llm_server)
    assert create_context_recall_scorer(judge).needs == {"context", "ground_truth"}
    assert create_context_recall_scorer(judge, context=["fixed"]).needs == {"ground_truth"}
    with pytest.raises(ValueError, match="cannot be empty"):
        create_context_recall_scorer(judge, context=[])
    llm_server.script(json_reply({"claims": ["a"]}), verdicts("verdicts", "verdict", ["no"]), text_reply("-"))
    result = await create_context_recall_scorer(judge, context=["fixed piece"]).run(recall_run("A."))
    assert result.score == 0.0
    assert "[0] fixed piece" in llm_server.chat_requests[1].messages[1]["content"]


async def test_context_recall_invalid_label_fails(llm_server: LLMServer) -> None:
    bad = verdicts("verdicts", "verdict", ["partially"])
    llm_server.script(json_reply({"claims": ["a"]}), bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_context_recall_scorer(judge_for(llm_server)).run(recall_run("A."))


# --- registry ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "scorer_id"),
    [
        ("bias", "bias-scorer"),
        ("toxicity", "toxicity-scorer"),
        ("context-precision", "context-precision-scorer"),
        ("context-relevance", "context-relevance-scorer"),
        ("context-recall", "context-recall-scorer"),
    ],
)
def test_registered_by_name_and_id(name: str, scorer_id: str) -> None:
    for key in (name, scorer_id):
        scorer = build_scorer(key, {"judge": MODEL, "scale": 2})
        assert scorer.id == scorer_id
        assert scorer.judge is not None and scorer.judge.model == MODEL


async def test_registry_options_in_camel_case(llm_server: LLMServer) -> None:
    scorer = build_scorer(
        "context-relevance-scorer",
        {
            "judge": {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "k"},
            "context": ["fixed"],
            "penalties": {"unusedHighRelevanceContext": 0.5},
        },
    )
    assert "context" not in scorer.needs
    llm_server.script(evaluations([("high", False)]), text_reply("r"))
    assert (await scorer.run(make_run())).score == 0.5  # 1.0 - 0.5
    with pytest.raises(ValueError, match="no option"):
        build_scorer("bias", {"judge": MODEL, "context": ["x"]})
