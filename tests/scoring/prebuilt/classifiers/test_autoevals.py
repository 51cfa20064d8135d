"""autoevals' LLM classifiers (factuality, summary, translation, humor, possible).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorers through
litellm's real HTTP path; expected scores are autoevals' choice_scores, written out by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, json_reply
from tests.support.runs import agent_run
from tracescore.schemas import AgentRun
from tracescore.scoring import ScorerError
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.classifiers.autoevals_classifiers import (
    create_factuality_scorer,
    create_humor_scorer,
    create_possible_scorer,
    create_summary_scorer,
    create_translation_scorer,
)
from tracescore.scoring.prebuilt.registry import build_scorer


def make_run(question: str = "Q?", answer: str = "A.", ground_truth: Any = "Expected.") -> AgentRun:
    return agent_run(question, answer, ground_truth=ground_truth)


FACTORIES: dict[str, Callable[[Judge], Scorer]] = {
    "factuality": create_factuality_scorer,
    "summary": create_summary_scorer,
    "translation": lambda judge: create_translation_scorer(judge, language="Spanish"),
    "humor": create_humor_scorer,
    "possible": create_possible_scorer,
}


@pytest.mark.parametrize(
    ("name", "choice", "expected"),
    [
        ("factuality", "A", 0.4),
        ("factuality", "B", 0.6),
        ("factuality", "C", 1.0),
        ("factuality", "D", 0.0),
        ("factuality", "E", 1.0),
        ("summary", "A", 0.0),
        ("summary", "B", 1.0),
        ("translation", "Y", 1.0),
        ("translation", "N", 0.0),
        ("humor", "Yes", 1.0),
        ("humor", "No", 0.0),
        ("humor", "Unsure", 0.5),
        ("possible", "A", 0.0),
        ("possible", "B", 1.0),
        ("factuality", " B ", 0.6),  # autoevals strips the choice before looking it up
    ],
)
async def test_choice_scores(
    llm_server: LLMServer, judge: Judge, name: str, choice: str, expected: float
) -> None:
    llm_server.script(json_reply({"reasons": "step by step", "choice": choice}))
    result = await FACTORIES[name](judge).run(make_run())
    assert result.score == expected
    assert len(llm_server.chat_requests) == 1


async def test_factuality_prompt_delimits_every_value(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"reasons": "r", "choice": "C"}))
    run = make_run("Who wrote Hamlet?", "Shakespeare.", "William Shakespeare")
    await create_factuality_scorer(judge).run(run)
    prompt = llm_server.user_prompt()
    assert "You are comparing a submitted answer to an expert answer" in prompt
    for label, value in (
        ("input", "Who wrote Hamlet?"),
        ("expected", "William Shakespeare"),
        ("output", "Shakespeare."),
    ):
        assert re.search(rf'label="{label}">\n{re.escape(value)}\n</', prompt)
    assert "{{" not in prompt
    assert '["A", "B", "C", "D", "E"]' in prompt and '"reasons"' in prompt
    schema = llm_server.chat_requests[0].body["response_format"]
    assert "'enum': ['A', 'B', 'C', 'D', 'E']" in str(schema)


async def test_translation_fills_language_and_structured_ground_truth(
    llm_server: LLMServer, judge: Judge
) -> None:
    llm_server.script(json_reply({"reasons": "r", "choice": "Y"}))
    run = make_run("Hola", "Hello", {"text": "Hello"})
    await create_translation_scorer(judge, language="Spanish").run(run)
    prompt = llm_server.user_prompt()
    assert re.search(r'label="language">\nSpanish\n</', prompt)
    assert re.search(r'label="expected">\n\{"text": "Hello"\}\n</', prompt)


async def test_humor_without_cot_asks_only_for_the_choice(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"choice": "Unsure"}))
    result = await create_humor_scorer(judge, use_cot=False).run(make_run(answer="A pun."))
    assert result.score == 0.5
    prompt = llm_server.user_prompt()
    assert prompt.startswith("Is the following funny?")
    assert '"reasons"' not in prompt


async def test_cot_answer_without_reasons_is_repaired(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"choice": "B"}), json_reply({"reasons": "now with reasons", "choice": "B"}))
    result = await create_possible_scorer(judge).run(make_run())
    assert result.score == 1.0
    assert len(llm_server.chat_requests) == 2


async def test_label_outside_choices_is_repaired_then_scored(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(
        json_reply({"reasons": "r", "choice": "F"}), json_reply({"reasons": "r", "choice": "D"})
    )
    result = await create_factuality_scorer(judge).run(make_run())
    assert result.score == 0.0
    assert "Input should be 'A', 'B', 'C', 'D' or 'E'" in llm_server.chat_requests[1].messages[-1]["content"]


@pytest.mark.parametrize("name", sorted(FACTORIES))
async def test_label_outside_choices_twice_fails(llm_server: LLMServer, judge: Judge, name: str) -> None:
    llm_server.script(
        json_reply({"reasons": "r", "choice": "maybe"}), json_reply({"reasons": "r", "choice": "Z"})
    )
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await FACTORIES[name](judge).run(make_run())
    assert len(llm_server.chat_requests) == 2


@pytest.mark.parametrize("name", ["factuality", "summary", "translation"])
async def test_missing_ground_truth_fails_before_asking(
    llm_server: LLMServer, judge: Judge, name: str
) -> None:
    with pytest.raises(ScorerError, match="ground_truth"):
        await FACTORIES[name](judge).run(make_run(ground_truth=None))
    assert llm_server.chat_requests == []


def test_translation_needs_a_language() -> None:
    with pytest.raises(ValueError, match="language"):
        create_translation_scorer(Judge(MODEL), language="")


def test_needs() -> None:
    judge = Judge(MODEL)
    assert create_humor_scorer(judge).needs == {"output"}
    assert create_factuality_scorer(judge).needs == {"input", "output", "ground_truth"}


async def test_the_choice_labels_the_run(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"reasons": "r", "choice": " B "}), json_reply({"choice": "Unsure"}))
    factuality = await create_factuality_scorer(judge).run(make_run())
    humor = await create_humor_scorer(judge, use_cot=False).run(make_run())
    assert (factuality.score, factuality.label) == (0.6, "B")  # stripped, as the score's lookup
    assert (humor.score, humor.label) == (0.5, "Unsure")
    assert factuality.to_score().label == "B"


async def test_registry_builds_classifiers_with_camel_case_options(llm_server: LLMServer) -> None:
    judge = {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "test-key"}
    llm_server.script(json_reply({"choice": "Yes"}))
    humor = build_scorer("humor", {"judge": judge, "useCot": False})
    assert (await humor.run(make_run())).score == 1.0
    translation = build_scorer("translation", {"judge": MODEL, "language": "French"})
    assert translation.id == "translation"
    with pytest.raises(ValueError, match="translation"):
        build_scorer("translation", {"judge": MODEL})  # the source language is required


def test_registry_builds_classifiers_by_name() -> None:
    for name in ("factuality", "summary", "possible"):
        assert build_scorer(name, {"judge": MODEL}).id == name
