"""RAGAS context entity recall (VoltAgent): the ground truth's entities that the context names.

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are worked out by hand from VoltAgent's formula; where
VoltAgent's own ``context-entity-recall.spec.ts`` cases apply to our runs they are reproduced and cited.
"""

from __future__ import annotations

import json

import pytest

from tests.scoring.prebuilt.ragas.rag_runs import FLEMING_CONTEXT, FLEMING_EXPECTED, qa_run
from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_context_entity_recall import (
    create_ragas_context_entity_recall_scorer,
)


def entities(*names: str) -> Reply:
    return json_reply({"entities": list(names)})


def last_message(server: LLMServer, index: int) -> str:
    """The last message of the ``index``-th chat request (the repair request after a bad answer)."""
    return str(server.chat_requests[index].messages[-1]["content"])


async def test_entity_recall_all_expected_entities_found(llm_server: LLMServer, judge: Judge) -> None:
    # context-entity-recall.spec.ts "computes recall based on entity overlap": 2 of 2 found -> 1
    llm_server.script(
        entities("Alexander Fleming", "1928"),
        entities("Alexander Fleming", "1928", "St. Mary's Hospital"),
    )
    scorer = create_ragas_context_entity_recall_scorer(judge)
    result = await scorer.run(qa_run(ground_truth=FLEMING_EXPECTED))
    assert result.scorer_id == "ragas-context-entity-recall"
    assert result.score == 1.0
    assert result.preprocess_step_result == ["Alexander Fleming", "1928"]
    assert result.analyze_step_result == ["Alexander Fleming", "1928", "St. Mary's Hospital"]
    # The ground truth is asked first, then the context list as its JSON.stringify text.
    assert FLEMING_EXPECTED in last_message(llm_server, 0)
    assert f"{json.dumps([FLEMING_CONTEXT])}\n" in last_message(llm_server, 1)  # ["Penicillin ..."]
    assert result.input_tokens == 2 * 11 and result.judge_model == MODEL


async def test_entity_recall_no_expected_entities_scores_zero(llm_server: LLMServer, judge: Judge) -> None:
    # context-entity-recall.spec.ts "returns zero when no expected entities are present"; the
    # context is still asked, as VoltAgent does
    llm_server.script(entities(), entities())
    result = await create_ragas_context_entity_recall_scorer(judge).run(qa_run())
    assert result.score == 0.0
    assert (result.preprocess_step_result, result.analyze_step_result) == ([], [])
    assert len(llm_server.chat_requests) == 2


@pytest.mark.parametrize(
    ("expected", "found", "score"),
    [
        # distinct lower-cased expected: paris, france, 1889 (the second "paris" counts once); the
        # context names paris -> 1/3
        (["Paris", "France", "1889", "paris"], ["PARIS", "Eiffel"], 1 / 3),
        # 2 of 4 distinct expected entities
        (["Fleming", "1928", "London", "mould"], ["fleming", "Mould", "Oxford"], 0.5),
        # none found
        (["Fleming"], ["Pasteur"], 0.0),
        # expected entities, empty context answer
        (["Fleming"], [], 0.0),
    ],
)
async def test_entity_recall_formula(
    llm_server: LLMServer, judge: Judge, expected: list[str], found: list[str], score: float
) -> None:
    llm_server.script(entities(*expected), entities(*found))
    result = await create_ragas_context_entity_recall_scorer(judge).run(qa_run())
    assert result.score == pytest.approx(score)


async def test_entity_recall_serialises_like_voltagent(llm_server: LLMServer, judge: Judge) -> None:
    # normalizeText: a non-string expected is JSON.stringify'd; the context list is a compact JSON
    # array with non-ASCII characters kept
    llm_server.script(entities("Zürich"), entities("zürich"))
    run = qa_run(ground_truth={"city": "Zürich"}, context=["Zürich liegt am See.", "Bern"])
    result = await create_ragas_context_entity_recall_scorer(judge).run(run)
    assert result.score == 1.0  # "Zürich" and "zürich" match lower-cased
    assert '{"city":"Zürich"}' in last_message(llm_server, 0)
    assert '["Zürich liegt am See.","Bern"]' in last_message(llm_server, 1)


async def test_entity_recall_empty_expected_costs_no_call(llm_server: LLMServer, judge: Judge) -> None:
    # Scored directly (the executor would skip it): an empty expected text has no entities and no
    # judge call; the context is still asked; recall of nothing is 0
    llm_server.script(entities("Fleming"))
    scorer = create_ragas_context_entity_recall_scorer(judge)
    result = await scorer.run(qa_run(ground_truth=None))
    assert result.score == 0.0
    assert result.preprocess_step_result == []
    assert len(llm_server.chat_requests) == 1 and FLEMING_CONTEXT in last_message(llm_server, 0)


def test_entity_recall_needs_context_and_ground_truth() -> None:
    scorer = create_ragas_context_entity_recall_scorer(Judge(MODEL))
    assert scorer.needs == {"context", "ground_truth"}
    assert scorer.missing_needs(qa_run(ground_truth="  ", context=[])) == ["context", "ground_truth"]
    assert scorer.missing_needs(qa_run(ground_truth={"a": 1})) == []


async def test_entity_recall_invalid_answer_is_repaired_once(llm_server: LLMServer, judge: Judge) -> None:
    # VoltAgent would read "not json" as no entities (score 0); we ask again and score the repair
    llm_server.script(text_reply("not json"), entities("Fleming"), entities("fleming"))
    result = await create_ragas_context_entity_recall_scorer(judge).run(qa_run())
    assert result.score == 1.0
    assert len(llm_server.chat_requests) == 3


@pytest.mark.parametrize(
    ("first", "second", "step"),
    [
        (text_reply("not json"), text_reply("still not json"), "preprocess"),
        # a JSON answer outside the schema (entities must be a list of strings)
        (json_reply({"entities": "Fleming"}), json_reply({"entities": [1928]}), "preprocess"),
    ],
)
async def test_entity_recall_invalid_answer_twice_fails(
    llm_server: LLMServer, judge: Judge, first: Reply, second: Reply, step: str
) -> None:
    llm_server.script(first, second)
    with pytest.raises(ScorerError) as caught:
        await create_ragas_context_entity_recall_scorer(judge).run(qa_run())
    assert caught.value.step == step and "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2


async def test_entity_recall_invalid_context_answer_fails_in_analyze(
    llm_server: LLMServer, judge: Judge
) -> None:
    llm_server.script(entities("Fleming"), text_reply("no"), text_reply("no"))
    with pytest.raises(ScorerError) as caught:
        await create_ragas_context_entity_recall_scorer(judge).run(qa_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)
