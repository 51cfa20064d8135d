"""The Mastra judges through the registry: by short name or id, options in snake_case or Mastra's
camelCase, the judge as an option (a model string, a dict of settings or a Judge)."""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import (
    BASELINE,
    MODEL,
    NOISY_QUERY,
    alignment_analysis,
    claim_replies,
    data_block,
    deal_run,
    evaluations,
    haiku_run,
    noise_analysis,
    noisy_run,
    relevancy_replies,
    similarity_replies,
)
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tests.support.runs import agent_run
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.prompt_alignment import create_prompt_alignment_scorer
from tracescore.scoring.prebuilt.registry import build_scorer

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. It is big. I like bread."


async def test_registry_builds_group_with_camel_case_options(llm_server: LLMServer) -> None:
    judge = {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "test-key"}
    relevancy = build_scorer(
        "answer-relevancy-scorer", {"judge": judge, "uncertaintyWeight": 0.5, "scale": 2}
    )
    llm_server.script(*relevancy_replies(["unsure", "no"]))
    assert (await relevancy.run(agent_run(QUESTION, ANSWER))).score == 0.5  # 0.5 / 2 x 2

    faithfulness = build_scorer("faithfulness", {"judge": judge, "context": ["only this"]})
    llm_server.script(*claim_replies(["yes", "unsure"]))
    assert (await faithfulness.run(agent_run(QUESTION, ANSWER))).score == 0.5
    assert data_block(llm_server.user_prompt(4)) == "only this"

    hallucination = build_scorer(
        "hallucination-scorer", {"judge": judge, "getContext": lambda params: ["from getter"]}
    )
    llm_server.script(*claim_replies(["yes", "yes", "yes", "no"], key="statement"))
    assert (await hallucination.run(agent_run(QUESTION, ANSWER))).score == 0.75
    assert data_block(llm_server.user_prompt(7)) == "from getter"

    similarity = build_scorer(
        "answer-similarity", {"judge": judge, "requireGroundTruth": False, "extraInfoPenalty": 0.1}
    )
    llm_server.script(*similarity_replies(["exact"], extras=1))
    run = agent_run(QUESTION, ANSWER, ground_truth="Paris")
    assert (await similarity.run(run)).score == 0.9  # 1 - 0.1
    assert relevancy.judge is not None and relevancy.judge.api_base == llm_server.api_base


def test_registry_rejects_bad_group_options() -> None:
    with pytest.raises(ValueError, match="no option"):
        build_scorer("faithfulness", {"judge": MODEL, "uncertaintyWeight": 0.3})
    with pytest.raises(ValueError, match="invalid options"):
        build_scorer("answer-similarity", {"judge": MODEL, "scale": "big"})
    with pytest.raises(ValueError, match="judge"):
        build_scorer("hallucination", {})


@pytest.mark.parametrize(
    ("name", "former_id"),
    [
        ("bias", "bias-scorer"),
        ("toxicity", "toxicity-scorer"),
        ("context-precision", "context-precision-scorer"),
        ("context-relevance", "context-relevance-scorer"),
        ("context-recall", "context-recall-scorer"),
    ],
)
def test_registered_by_name_and_by_former_id(name: str, former_id: str) -> None:
    for key in (name, former_id):
        scorer = build_scorer(key, {"judge": MODEL, "scale": 2})
        assert scorer.id == name
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
    assert (await scorer.run(deal_run())).score == 0.5  # 1.0 - 0.5
    with pytest.raises(ValueError, match="no option"):
        build_scorer("bias", {"judge": MODEL, "context": ["x"]})


async def test_registry_builds_the_llm_scorers_with_a_judge_option(llm_server: LLMServer) -> None:
    judge_dict = {"model": MODEL, "apiBase": llm_server.api_base, "api_key": "k"}
    scorer = build_scorer("prompt-alignment", {"judge": judge_dict, "evaluationMode": "user", "scale": 2})
    llm_server.script(json_reply(alignment_analysis(1.0, 0.5, 0.8, 0.6)), text_reply("ok"))
    assert (await scorer.run(haiku_run())).score == pytest.approx(1.54)  # 2 x 0.77

    noise = build_scorer(
        "noise-sensitivity",
        {"judge": judge_dict, "baselineResponse": BASELINE, "noisyQuery": NOISY_QUERY, "noiseType": "x"},
    )
    llm_server.script(json_reply(noise_analysis(0.9, ["none"])), text_reply("ok"))
    assert (await noise.run(noisy_run())).score == 0.9
    assert all(r.body["model"] == "gpt-4o-mini" for r in llm_server.chat_requests)
    aligned = create_prompt_alignment_scorer(Judge(MODEL))
    assert aligned.judge is not None
    assert build_scorer("prompt-alignment", {"judge": MODEL}).judge == Judge(
        MODEL, aligned.judge.instructions
    )


def test_registry_rejects_bad_llm_options() -> None:
    with pytest.raises(ValueError, match="invalid options"):
        build_scorer("prompt-alignment", {"judge": MODEL, "evaluation_mode": "everyone"})
    with pytest.raises(ValueError, match="invalid judge fields"):
        build_scorer("prompt-alignment", {"judge": {"model": MODEL, "temprature": 0.5, "api_key": "secret"}})
    with pytest.raises(ValueError, match="judge must be"):
        build_scorer("noise-sensitivity", {"judge": 3, "baseline_response": "a", "noisy_query": "b"})
    with pytest.raises(ValueError, match="noise-sensitivity.*baselineResponse and noisyQuery"):
        build_scorer("noise-sensitivity", {"judge": MODEL, "baseline_response": "", "noisy_query": "b"})
