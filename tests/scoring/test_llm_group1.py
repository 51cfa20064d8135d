"""LLM-judge prebuilt scorers (answer relevancy, faithfulness, hallucination, answer similarity).

The judge's answers are scripted on the local OpenAI-compatible server and reach the scorers through
litellm's real HTTP path; expected scores are computed by hand from Mastra's formulas.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas import AgentRun, Message, RunInput, ToolInvocation
from scoring import ScorerError
from scoring.judge import Judge
from scoring.prebuilt.mastra.answer_relevancy import create_answer_relevancy_scorer
from scoring.prebuilt.mastra.answer_similarity import create_answer_similarity_scorer
from scoring.prebuilt.mastra.faithfulness import create_faithfulness_scorer
from scoring.prebuilt.mastra.hallucination import GetContextParams, create_hallucination_scorer
from scoring.registry import build_scorer
from tests.support.llm_server import LLMServer, json_reply, text_reply

MODEL = "openai/gpt-4o-mini"
QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. It is big. I like bread."


def judge_for(server: LLMServer) -> Judge:
    return Judge(MODEL, api_base=server.api_base, api_key="test-key", backoff_initial_s=0.01)


def make_run(answer: str = ANSWER, question: str = QUESTION, context: list[str] | None = None) -> AgentRun:
    return AgentRun(
        trace_id="a" * 32,
        span_id="b" * 16,
        input=RunInput(input_messages=[Message(role="user", content=question)]),
        output=[Message(role="assistant", content=answer)],
        context=context or [],
    )


def user_prompt(server: LLMServer, index: int) -> str:
    return str(server.chat_requests[index].messages[1]["content"])


def system_prompt(server: LLMServer, index: int) -> str:
    return str(server.chat_requests[index].messages[0]["content"])


# --- answer relevancy ----------------------------------------------------------------------------


def relevancy_replies(labels: list[str], reason: str = "The score is fine.") -> list[Any]:
    statements = [f"statement {i}" for i in range(len(labels))]
    return [
        json_reply({"statements": statements}),
        json_reply(
            {"results": [{"result": label, "reason": f"because {i}"} for i, label in enumerate(labels)]}
        ),
        text_reply(reason),
    ]


@pytest.mark.parametrize(
    ("labels", "options", "expected"),
    [
        (["yes", "unsure", "unsure", "no", "no"], {}, 0.32),  # (1 + 2 x 0.3) / 5
        (["yes", "yes", "no"], {}, 0.67),  # 2 / 3 = 0.666.. -> 0.67
        (["unsure", "unsure", "unsure"], {"uncertainty_weight": 0.5}, 0.5),  # 1.5 / 3
        (["yes", "unsure", "unsure", "no", "no"], {"scale": 10}, 3.2),  # 0.32 x 10
        (["yes", "yes"], {}, 1.0),
        (["no", "no", "no", "no"], {}, 0.0),
        ([" YES ", "Unsure"], {}, 0.65),  # labels compared trimmed and lower-cased, as Mastra
    ],
)
async def test_answer_relevancy_formula(
    llm_server: LLMServer, labels: list[str], options: dict[str, float], expected: float
) -> None:
    llm_server.script(*relevancy_replies(labels))
    result = await create_answer_relevancy_scorer(judge_for(llm_server), **options).run(make_run())
    assert result.score == expected
    assert result.reason == "The score is fine."
    assert result.scorer_id == "answer-relevancy-scorer"
    assert len(llm_server.chat_requests) == 3


async def test_answer_relevancy_prompts_delimit_trace_content(llm_server: LLMServer) -> None:
    llm_server.script(*relevancy_replies(["yes", "unsure"]))
    result = await create_answer_relevancy_scorer(judge_for(llm_server), scale=10).run(make_run())
    assert result.score == 6.5
    extract, analyze, reason = (user_prompt(llm_server, i) for i in range(3))
    assert "You are a balanced and nuanced answer relevancy evaluator" in system_prompt(llm_server, 0)
    assert extract.startswith("Given the text, break it down into meaningful statements")
    assert f'label="output">\n{ANSWER}\n</data-' in extract
    # The question goes in JSON-quoted (Mastra's JSON.stringify), the statements one per line.
    assert f'label="input">\n"{QUESTION}"\n</data-' in analyze
    assert 'label="statements">\nstatement 0\nstatement 1\n</data-' in analyze
    assert "Number of statements: 2" in analyze
    assert "Score: 6.5" in reason and "0 is the lowest and 10 is the highest" in reason
    results_json = json.dumps(
        [{"result": "yes", "reason": "because 0"}, {"result": "unsure", "reason": "because 1"}],
        separators=(",", ":"),
    )
    assert f'label="results">\n{results_json}\n</data-' in reason
    assert result.generate_reason_prompt == reason


async def test_answer_relevancy_no_statements_scores_zero(llm_server: LLMServer) -> None:
    llm_server.script(
        json_reply({"statements": []}), json_reply({"results": []}), text_reply("Nothing to judge.")
    )
    result = await create_answer_relevancy_scorer(judge_for(llm_server)).run(make_run(answer=""))
    assert result.score == 0
    assert "Number of statements: 0" in user_prompt(llm_server, 1)
    assert result.reason == "Nothing to judge."


async def test_answer_relevancy_invalid_label_fails_after_repair(llm_server: LLMServer) -> None:
    bad = json_reply({"results": [{"result": "maybe", "reason": "?"}]})
    llm_server.script(json_reply({"statements": ["s"]}), bad, bad)
    scorer = create_answer_relevancy_scorer(judge_for(llm_server))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(make_run())
    assert caught.value.step == "analyze"
    assert "invalid JSON twice" in str(caught.value) and "'yes', 'no' or 'unsure'" in str(caught.value)
    # The extract call, the analyze call and its one repair round; no score, no reason call.
    assert len(llm_server.chat_requests) == 3
    repair = llm_server.chat_requests[2].messages
    assert repair[-1]["content"].startswith("Your answer was not valid JSON for the required schema")


async def test_answer_relevancy_invalid_label_repaired(llm_server: LLMServer) -> None:
    llm_server.script(
        json_reply({"statements": ["s1", "s2"]}),
        json_reply({"results": [{"result": "partly", "reason": "?"}, {"result": "yes", "reason": "ok"}]}),
        json_reply({"results": [{"result": "unsure", "reason": "?"}, {"result": "yes", "reason": "ok"}]}),
        text_reply("Repaired."),
    )
    result = await create_answer_relevancy_scorer(judge_for(llm_server)).run(make_run())
    assert result.score == 0.65  # (1 + 0.3) / 2


def test_answer_relevancy_rejects_bad_options() -> None:
    judge = Judge(MODEL)
    with pytest.raises(ValueError, match="uncertainty_weight"):
        create_answer_relevancy_scorer(judge, uncertainty_weight=1.5)
    with pytest.raises(ValueError, match="scale"):
        create_answer_relevancy_scorer(judge, scale=0)


# --- faithfulness --------------------------------------------------------------------------------


def claim_replies(verdicts: list[str], reason: str = "Because.", key: str = "claim") -> list[Any]:
    claims = [f"claim {i}" for i in range(len(verdicts))]
    return [
        json_reply({"claims": claims}),
        json_reply(
            {
                "verdicts": [
                    {key: c, "verdict": v, "reason": "r"} for c, v in zip(claims, verdicts, strict=True)
                ]
            }
        ),
        text_reply(reason),
    ]


def context_block(prompt: str, label: str = "context") -> str:
    """The text inside the first data block with this label."""
    start = prompt.index(f'label="{label}">\n') + len(f'label="{label}">\n')
    return prompt[start : prompt.index("\n</data-", start)]


@pytest.mark.parametrize(
    ("verdicts", "scale", "expected"),
    [
        (["yes", "no", "unsure", "yes"], 1, 0.5),  # unsure is not supported: 2 / 4
        (["yes", "yes", "unsure"], 1, 0.67),  # 2 / 3
        (["yes", "no", "no"], 5, 1.67),  # 1 / 3 x 5 = 1.666..
        (["unsure", "unsure"], 1, 0.0),
        (["yes"], 1, 1.0),
    ],
)
async def test_faithfulness_formula(
    llm_server: LLMServer, verdicts: list[str], scale: float, expected: float
) -> None:
    llm_server.script(*claim_replies(verdicts))
    run = make_run(context=["Paris is the capital of France."])
    result = await create_faithfulness_scorer(judge_for(llm_server), scale=scale).run(run)
    assert result.score == expected
    assert result.scorer_id == "faithfulness-scorer"
    assert result.reason == "Because."


async def test_faithfulness_context_sources(llm_server: LLMServer) -> None:
    tool_run = AgentRun(
        input=RunInput(input_messages=[Message(role="user", content=QUESTION)]),
        output=[
            Message(
                role="assistant",
                tool_invocations=[
                    ToolInvocation(
                        tool_name="lookup", result={"capital": "Paris", "note": "é"}, state="result"
                    ),
                    ToolInvocation(tool_name="pending", state="call"),
                ],
            ),
            Message(role="assistant", content="Paris."),
        ],
    )
    cases = [
        (
            create_faithfulness_scorer(judge_for(llm_server), context=["given A", "given B"]),
            make_run(context=["run ctx"]),
            "given A\ngiven B",
        ),
        (
            create_faithfulness_scorer(judge_for(llm_server)),
            make_run(context=["run 1", "run 2"]),
            "run 1\nrun 2",
        ),
        (create_faithfulness_scorer(judge_for(llm_server)), tool_run, '{"capital":"Paris","note":"é"}'),
        (create_faithfulness_scorer(judge_for(llm_server)), make_run(), ""),  # no context at all
    ]
    for index, (scorer, run, expected_context) in enumerate(cases):
        llm_server.script(*claim_replies(["unsure"]))
        await scorer.run(run)
        analyze, reason = user_prompt(llm_server, 3 * index + 1), user_prompt(llm_server, 3 * index + 2)
        assert context_block(analyze) == expected_context
        assert context_block(reason) == expected_context
    assert "Paris." in user_prompt(llm_server, 6)  # the tool run's answer is its last text message
    assert "You are a precise and thorough faithfulness evaluator" in system_prompt(llm_server, 0)


async def test_faithfulness_no_claims_scores_zero(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"claims": []}), json_reply({"verdicts": []}), text_reply("No claims."))
    result = await create_faithfulness_scorer(judge_for(llm_server)).run(make_run(answer="", context=["c"]))
    assert result.score == 0
    assert "Number of claims: 0" in user_prompt(llm_server, 1)


async def test_faithfulness_invalid_verdict_fails(llm_server: LLMServer) -> None:
    bad = json_reply({"verdicts": [{"verdict": "supported", "reason": "r"}]})
    llm_server.script(json_reply({"claims": ["c"]}), bad, bad)
    with pytest.raises(ScorerError) as caught:
        await create_faithfulness_scorer(judge_for(llm_server)).run(make_run(context=["c"]))
    assert caught.value.step == "analyze"
    assert len(llm_server.chat_requests) == 3


# --- hallucination -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdicts", "scale", "expected"),
    [
        (["yes", "no", "no", "no"], 1, 0.25),  # "yes" marks a hallucinated claim
        (["yes", "yes", "no"], 1, 0.67),
        (["no", "yes", "no"], 10, 3.33),
        (["no", "no"], 1, 0.0),
        (["Yes"], 1, 1.0),
    ],
)
async def test_hallucination_formula(
    llm_server: LLMServer, verdicts: list[str], scale: float, expected: float
) -> None:
    llm_server.script(*claim_replies(verdicts, key="statement"))
    run = make_run(context=["Paris is the capital of France."])
    result = await create_hallucination_scorer(judge_for(llm_server), scale=scale).run(run)
    assert result.score == expected
    assert result.scorer_id == "hallucination-scorer"


async def test_hallucination_context_sources(llm_server: LLMServer) -> None:
    seen: list[tuple[str, float | None, bool]] = []

    async def get_context(params: GetContextParams) -> list[str]:
        seen.append((params.step, params.score, "analyze_step_result" in params.results))
        return [f"from {params.step}"]

    run = make_run(context=["run ctx"])
    judge = judge_for(llm_server)
    llm_server.script(*claim_replies(["yes", "no"], key="statement"))
    result = await create_hallucination_scorer(judge, context=["ignored"], get_context=get_context).run(run)
    assert result.score == 0.5
    assert seen == [("analyze", None, False), ("generate_reason", 0.5, True)]
    assert context_block(user_prompt(llm_server, 1)) == "from analyze"
    assert context_block(user_prompt(llm_server, 2)) == "from generate_reason"
    assert "Number of context statements: 1" in user_prompt(llm_server, 1)
    assert "You are a precise and thorough hallucination evaluator" in system_prompt(llm_server, 0)

    llm_server.script(*claim_replies(["no"], key="statement"))
    await create_hallucination_scorer(judge, context=["opt A", "opt B"]).run(run)
    assert context_block(user_prompt(llm_server, 4)) == "opt A\nopt B"

    llm_server.script(*claim_replies(["no"], key="statement"))
    await create_hallucination_scorer(judge).run(run)
    assert context_block(user_prompt(llm_server, 7)) == "run ctx"

    llm_server.script(*claim_replies(["yes"], key="statement"))
    result = await create_hallucination_scorer(judge).run(make_run())  # no context anywhere
    assert context_block(user_prompt(llm_server, 10)) == ""
    assert "Number of context statements: 0" in user_prompt(llm_server, 10)
    assert result.score == 1.0


async def test_hallucination_no_claims_and_invalid_verdict(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"claims": []}), json_reply({"verdicts": []}), text_reply("None."))
    result = await create_hallucination_scorer(judge_for(llm_server)).run(make_run(answer=""))
    assert result.score == 0
    # "unsure" is a faithfulness label, not a hallucination one: rejected, repaired once, then failed.
    bad = json_reply({"verdicts": [{"statement": "c", "verdict": "unsure", "reason": "r"}]})
    llm_server.script(json_reply({"claims": ["c"]}), bad, bad)
    with pytest.raises(ScorerError) as caught:
        await create_hallucination_scorer(judge_for(llm_server)).run(make_run())
    assert caught.value.step == "analyze"
    assert len(llm_server.chat_requests) == 6


async def test_hallucination_get_context_must_return_strings(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"claims": ["c"]}))
    scorer = create_hallucination_scorer(judge_for(llm_server), get_context=lambda params: "not a list")
    with pytest.raises(ScorerError, match="list of strings"):
        await scorer.run(make_run())


# --- answer similarity ---------------------------------------------------------------------------


def similarity_replies(
    match_types: list[str], *, contradictions: int = 0, extras: int = 0, units: list[str] | None = None
) -> list[Any]:
    analysis = {
        "matches": [
            {
                "groundTruthUnit": f"truth {i}",
                "outputUnit": None if kind == "missing" else f"out {i}",
                "matchType": kind,
                "explanation": "e",
            }
            for i, kind in enumerate(match_types)
        ],
        "extraInOutput": [f"extra {i}" for i in range(extras)],
        "contradictions": [
            {"outputUnit": f"out {i}", "groundTruthUnit": f"truth {i}", "explanation": "opposite"}
            for i in range(contradictions)
        ],
    }
    return [
        json_reply({"outputUnits": units or ["out 0"], "groundTruthUnits": ["truth 0", "truth 1"]}),
        json_reply(analysis),
        text_reply("Similar enough."),
    ]


@pytest.mark.parametrize(
    ("match_types", "extra", "options", "expected"),
    [
        # (1.2 + 0.8 + 0.4 - 0.15) / (4 x 1.2) = 0.46875
        (["exact", "semantic", "partial", "missing"], {}, {}, 0.47),
        (["exact", "semantic", "partial", "missing"], {}, {"scale": 10}, 4.69),
        (["exact", "exact"], {"extras": 1}, {}, 0.95),  # 1 - 0.05
        (["exact", "semantic"], {"extras": 5}, {}, 0.63),  # 2.0 / 2.4 - 0.2 (extra penalty capped)
        (["semantic"], {"contradictions": 1}, {}, 0.0),  # 0.667 - 1.0, clamped at 0
        (["exact", "semantic"], {"contradictions": 1}, {"contradiction_penalty": 0.3}, 0.53),  # 0.8333 - 0.3
        (["missing", "missing"], {}, {}, 0.0),  # negative, clamped
        (["exact"], {}, {}, 1.0),
        # exact_match_bonus 0: (1 + 0.5 x 0.5) / 2 = 0.625 -> 0.63 (semantic_threshold 0.5)
        (["exact", "partial"], {}, {"exact_match_bonus": 0, "semantic_threshold": 0.5}, 0.63),
        ([], {}, {}, 0.0),  # no ground-truth units
    ],
)
async def test_answer_similarity_formula(
    llm_server: LLMServer,
    match_types: list[str],
    extra: dict[str, int],
    options: dict[str, float],
    expected: float,
) -> None:
    llm_server.script(*similarity_replies(match_types, **extra))
    run = make_run().model_copy(update={"ground_truth": "Paris is the capital of France."})
    result = await create_answer_similarity_scorer(judge_for(llm_server), **options).run(run)
    assert result.score == expected
    assert result.scorer_id == "answer-similarity-scorer"
    assert result.reason == "Similar enough."


async def test_answer_similarity_prompts(llm_server: LLMServer) -> None:
    llm_server.script(*similarity_replies(["exact", "missing"], units=["Paris", "capital"]))
    run = make_run().model_copy(update={"ground_truth": {"city": "Paris", "note": "é"}})
    result = await create_answer_similarity_scorer(judge_for(llm_server)).run(run)
    assert result.score == 0.44  # (1.2 - 0.15) / 2.4 = 0.4375 -> 0.44 (half rounds up, as Math.round)
    extract, analyze, reason = (user_prompt(llm_server, i) for i in range(3))
    assert "You are a precise answer similarity evaluator" in system_prompt(llm_server, 0)
    assert context_block(extract, "agent output") == ANSWER
    assert context_block(extract, "ground truth") == '{"city":"Paris","note":"é"}'
    assert context_block(analyze, "output units") == '[\n  "Paris",\n  "capital"\n]'
    assert context_block(analyze, "ground truth units") == '[\n  "truth 0",\n  "truth 1"\n]'
    assert "- Score: 0.44/1\n" in reason
    analysis = json.loads(context_block(reason, "analysis"))
    assert analysis["matches"][1] == {
        "groundTruthUnit": "truth 1",
        "outputUnit": None,
        "matchType": "missing",
        "explanation": "e",
    }
    assert analysis["extraInOutput"] == [] and analysis["contradictions"] == []


async def test_answer_similarity_missing_ground_truth(llm_server: LLMServer) -> None:
    # Required (the default): the scorer fails before asking the judge.
    with pytest.raises(ScorerError, match="requires ground truth") as caught:
        await create_answer_similarity_scorer(judge_for(llm_server)).run(make_run())
    assert caught.value.step == "preprocess"
    assert llm_server.chat_requests == []
    # Not required: Mastra still asks the judge, with empty texts, and scores 0 whatever it says.
    llm_server.script(*similarity_replies(["exact"]))
    scorer = create_answer_similarity_scorer(judge_for(llm_server), require_ground_truth=False)
    result = await scorer.run(make_run().model_copy(update={"ground_truth": ""}))
    assert result.score == 0
    assert context_block(user_prompt(llm_server, 0), "agent output") == ""
    assert user_prompt(llm_server, 2) == "No ground truth was provided for comparison. Score is 0 by default."
    # JavaScript truthiness: an empty list is ground truth, 0 is not.
    llm_server.script(*similarity_replies(["exact"]))
    result = await scorer.run(make_run().model_copy(update={"ground_truth": []}))
    assert result.score == 1.0
    assert context_block(user_prompt(llm_server, 3), "ground truth") == "[]"
    with pytest.raises(ScorerError, match="requires ground truth"):
        await create_answer_similarity_scorer(judge_for(llm_server)).run(
            make_run().model_copy(update={"ground_truth": 0})
        )


async def test_answer_similarity_invalid_match_type_fails(llm_server: LLMServer) -> None:
    bad = json_reply(
        {
            "matches": [
                {"groundTruthUnit": "t", "outputUnit": "o", "matchType": "close", "explanation": "e"}
            ],
            "extraInOutput": [],
            "contradictions": [],
        }
    )
    llm_server.script(json_reply({"outputUnits": ["o"], "groundTruthUnits": ["t"]}), bad, bad)
    run = make_run().model_copy(update={"ground_truth": "t"})
    with pytest.raises(ScorerError) as caught:
        await create_answer_similarity_scorer(judge_for(llm_server)).run(run)
    assert caught.value.step == "analyze"
    assert len(llm_server.chat_requests) == 3


# --- registry ------------------------------------------------------------------------------------


async def test_registry_builds_group_with_camel_case_options(llm_server: LLMServer) -> None:
    judge = {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "test-key"}
    relevancy = build_scorer(
        "answer-relevancy-scorer", {"judge": judge, "uncertaintyWeight": 0.5, "scale": 2}
    )
    llm_server.script(*relevancy_replies(["unsure", "no"]))
    assert (await relevancy.run(make_run())).score == 0.5  # 0.5 / 2 x 2

    faithfulness = build_scorer("faithfulness", {"judge": judge, "context": ["only this"]})
    llm_server.script(*claim_replies(["yes", "unsure"]))
    assert (await faithfulness.run(make_run())).score == 0.5
    assert context_block(user_prompt(llm_server, 4)) == "only this"

    hallucination = build_scorer(
        "hallucination-scorer", {"judge": judge, "getContext": lambda params: ["from getter"]}
    )
    llm_server.script(*claim_replies(["yes", "yes", "yes", "no"], key="statement"))
    assert (await hallucination.run(make_run())).score == 0.75
    assert context_block(user_prompt(llm_server, 7)) == "from getter"

    similarity = build_scorer(
        "answer-similarity", {"judge": judge, "requireGroundTruth": False, "extraInfoPenalty": 0.1}
    )
    llm_server.script(*similarity_replies(["exact"], extras=1))
    run = make_run().model_copy(update={"ground_truth": "Paris"})
    assert (await similarity.run(run)).score == 0.9  # 1 - 0.1
    assert relevancy.judge is not None and relevancy.judge.api_base == llm_server.api_base


def test_registry_rejects_bad_group_options() -> None:
    with pytest.raises(ValueError, match="no option"):
        build_scorer("faithfulness", {"judge": MODEL, "uncertaintyWeight": 0.3})
    with pytest.raises(ValueError, match="invalid options"):
        build_scorer("answer-similarity", {"judge": MODEL, "scale": "big"})
    with pytest.raises(ValueError, match="judge"):
        build_scorer("hallucination", {})
