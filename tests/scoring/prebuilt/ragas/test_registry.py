"""The RAGAS scorers built through the registry: by short name and by VoltAgent's id, with camelCase options.

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand.
"""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.ragas.rag_runs import classification, rag_run
from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, json_reply
from tracescore.scoring.prebuilt.registry import build_scorer


@pytest.mark.parametrize(
    ("name", "former_id"),
    [
        ("ragas-answer-correctness", "answerCorrectness"),
        ("ragas-answer-relevancy", "answerRelevancy"),
        ("ragas-context-precision", "contextPrecision"),
        ("ragas-context-recall", "contextRecall"),
        ("ragas-context-relevancy", "contextRelevancy"),
    ],
)
def test_registry_builds_by_name_and_by_former_id(name: str, former_id: str) -> None:
    assert build_scorer(name, {"judge": MODEL}).id == name
    assert build_scorer(former_id, {"judge": {"model": MODEL}}).id == name


async def test_registry_camel_case_options_reach_the_scorer(llm_server: LLMServer) -> None:
    judge = {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "test-key"}
    llm_server.script(
        json_reply({"statements": ["s1", "s2"]}), *[json_reply({"verdict": 1, "reasoning": "ok"})] * 2
    )
    recall = build_scorer("contextRecall", {"judge": judge, "partialCredit": True, "strictness": 0.9})
    assert (await recall.run(rag_run())).score == 1.0
    llm_server.script(json_reply(classification(3, 1, 1)))
    correctness = build_scorer("answerCorrectness", {"judge": judge, "factualityWeight": 0.5})
    assert (await correctness.run(rag_run())).score == pytest.approx(0.375)
    with pytest.raises(ValueError, match="no option"):
        build_scorer("ragas-context-relevancy", {"judge": MODEL, "strictness": 2})
