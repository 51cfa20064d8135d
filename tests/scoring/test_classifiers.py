"""autoevals' LLM classifiers (factuality, summary, translation, humor, possible) and moderation
(VoltAgent's LLM classifier, and autoevals' moderation API).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorers through
litellm's real HTTP path; expected scores are autoevals' choice_scores, written out by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from schemas import AgentRun, Message, RunInput
from scoring import ScorerError
from scoring.judge import Judge
from scoring.prebuilt.classifier import (
    create_factuality_scorer,
    create_humor_scorer,
    create_possible_scorer,
    create_summary_scorer,
    create_translation_scorer,
)
from scoring.prebuilt.moderation import DEFAULT_CATEGORIES, create_moderation_scorer
from scoring.registry import build_scorer
from scoring.scorer import Scorer
from tests.support.llm_server import LLMServer, error_reply, json_reply

MODEL = "openai/gpt-4o-mini"


def judge_for(server: LLMServer, model: str = MODEL) -> Judge:
    return Judge(model, api_base=server.api_base, api_key="test-key", backoff_initial_s=0.01)


def make_run(question: str = "Q?", answer: str = "A.", ground_truth: Any = "Expected.") -> AgentRun:
    return AgentRun(
        trace_id="a" * 32,
        span_id="b" * 16,
        input=RunInput(input_messages=[Message(role="user", content=question)]),
        output=[Message(role="assistant", content=answer)],
        ground_truth=ground_truth,
    )


def user_prompt(server: LLMServer, index: int = 0) -> str:
    return str(server.chat_requests[index].messages[1]["content"])


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
async def test_choice_scores(llm_server: LLMServer, name: str, choice: str, expected: float) -> None:
    llm_server.script(json_reply({"reasons": "step by step", "choice": choice}))
    result = await FACTORIES[name](judge_for(llm_server)).run(make_run())
    assert result.score == expected
    assert len(llm_server.chat_requests) == 1


async def test_factuality_prompt_delimits_every_value(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"reasons": "r", "choice": "C"}))
    run = make_run("Who wrote Hamlet?", "Shakespeare.", "William Shakespeare")
    await create_factuality_scorer(judge_for(llm_server)).run(run)
    prompt = user_prompt(llm_server)
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


async def test_translation_fills_language_and_structured_ground_truth(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"reasons": "r", "choice": "Y"}))
    run = make_run("Hola", "Hello", {"text": "Hello"})
    await create_translation_scorer(judge_for(llm_server), language="Spanish").run(run)
    prompt = user_prompt(llm_server)
    assert re.search(r'label="language">\nSpanish\n</', prompt)
    assert re.search(r'label="expected">\n\{"text": "Hello"\}\n</', prompt)


async def test_humor_without_cot_asks_only_for_the_choice(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"choice": "Unsure"}))
    result = await create_humor_scorer(judge_for(llm_server), use_cot=False).run(make_run(answer="A pun."))
    assert result.score == 0.5
    prompt = user_prompt(llm_server)
    assert prompt.startswith("Is the following funny?")
    assert '"reasons"' not in prompt


async def test_cot_answer_without_reasons_is_repaired(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"choice": "B"}), json_reply({"reasons": "now with reasons", "choice": "B"}))
    result = await create_possible_scorer(judge_for(llm_server)).run(make_run())
    assert result.score == 1.0
    assert len(llm_server.chat_requests) == 2


async def test_label_outside_choices_is_repaired_then_scored(llm_server: LLMServer) -> None:
    llm_server.script(
        json_reply({"reasons": "r", "choice": "F"}), json_reply({"reasons": "r", "choice": "D"})
    )
    result = await create_factuality_scorer(judge_for(llm_server)).run(make_run())
    assert result.score == 0.0
    assert "Input should be 'A', 'B', 'C', 'D' or 'E'" in llm_server.chat_requests[1].messages[-1]["content"]


@pytest.mark.parametrize("name", sorted(FACTORIES))
async def test_label_outside_choices_twice_fails(llm_server: LLMServer, name: str) -> None:
    llm_server.script(
        json_reply({"reasons": "r", "choice": "maybe"}), json_reply({"reasons": "r", "choice": "Z"})
    )
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await FACTORIES[name](judge_for(llm_server)).run(make_run())
    assert len(llm_server.chat_requests) == 2


@pytest.mark.parametrize("name", ["factuality", "summary", "translation"])
async def test_missing_ground_truth_fails_before_asking(llm_server: LLMServer, name: str) -> None:
    with pytest.raises(ScorerError, match="ground_truth"):
        await FACTORIES[name](judge_for(llm_server)).run(make_run(ground_truth=None))
    assert llm_server.chat_requests == []


def test_translation_needs_a_language() -> None:
    with pytest.raises(ValueError, match="language"):
        create_translation_scorer(Judge(MODEL), language="")


def test_needs() -> None:
    judge = Judge(MODEL)
    assert create_humor_scorer(judge).needs == {"output"}
    assert create_factuality_scorer(judge).needs == {"input", "output", "ground_truth"}
    assert create_moderation_scorer(judge).needs == {"output"}


# --- moderation ----------------------------------------------------------------------------------

MODERATION_MODEL = "openai/omni-moderation-latest"


def moderation_answer(scores: dict[str, float | None], flagged: bool, reason: str | None = None) -> Any:
    return json_reply({"flagged": flagged, "scores": scores, "reason": reason})


def all_categories(**scores: float) -> dict[str, float | None]:
    """A score for each of VoltAgent's default categories: 0 unless given (``self_harm`` = self-harm)."""
    given = {name.replace("_", "-"): value for name, value in scores.items()}
    return {name: given.get(name, 0.0) for name in DEFAULT_CATEGORIES}


@pytest.mark.parametrize(
    ("scores", "flagged", "threshold", "expected", "reason"),
    [
        (all_categories(), False, 0.5, 1.0, "Content cleared moderation checks."),
        (all_categories(violence=0.8), True, 0.5, 0.0, "Flagged by categories: violence. Threat."),
        # VoltAgent takes the judge's flag: scores at the threshold flag it, and the reason says so.
        (
            all_categories(hate=0.5, violence=0.5),
            True,
            0.5,
            0.0,
            "Flagged by categories: hate, violence. Threat.",
        ),
        (all_categories(hate=0.3), True, 0.25, 0.0, "Flagged by categories: hate. Threat."),
        # Flagged with no category at the threshold: the judge's own reason.
        (all_categories(hate=0.2), True, 0.5, 0.0, "Threat."),
    ],
)
async def test_llm_moderation_follows_the_judges_flag(
    llm_server: LLMServer,
    scores: dict[str, float | None],
    flagged: bool,
    threshold: float,
    expected: float,
    reason: str,
) -> None:
    llm_server.script(moderation_answer(scores, flagged, "Threat." if flagged else None))
    scorer = create_moderation_scorer(judge_for(llm_server), threshold=threshold)
    result = await scorer.run(make_run(answer="Some text to moderate."))
    assert result.score == expected
    assert result.reason == reason
    assert result.analyze_step_result["category_scores"] == scores
    (request,) = llm_server.chat_requests
    prompt = str(request.messages[1]["content"])
    assert "Some text to moderate." in prompt
    assert f"at or above {threshold:.2f}" in prompt
    assert all(f"- {name}" in prompt for name in DEFAULT_CATEGORIES)
    assert result.input_tokens == 11 and result.judge_model == MODEL


async def test_llm_moderation_with_own_categories(llm_server: LLMServer) -> None:
    llm_server.script(moderation_answer({"spam": 0.9, "pii": None}, True))
    scorer = create_moderation_scorer(judge_for(llm_server), categories=["spam", "pii"])
    result = await scorer.run(make_run())
    assert result.score == 0.0
    assert result.analyze_step_result["category_scores"] == {"spam": 0.9}  # null: not rated
    assert result.reason == "Flagged by categories: spam."
    prompt = user_prompt(llm_server)
    assert "- spam" in prompt and "- pii" in prompt and "- hate" not in prompt


@pytest.mark.parametrize(
    "bad_scores",
    [
        {"spam": 0.9},  # a category missing
        {"spam": 1.5, "pii": 0.0},  # outside [0, 1]
    ],
)
async def test_llm_moderation_invalid_answer_is_repaired_then_fails(
    llm_server: LLMServer, bad_scores: dict[str, float]
) -> None:
    scorer = create_moderation_scorer(judge_for(llm_server), categories=["spam", "pii"])
    llm_server.script(
        moderation_answer(bad_scores, True), moderation_answer({"spam": 0.1, "pii": 0.0}, False)
    )
    assert (await scorer.run(make_run())).score == 1.0
    llm_server.script(moderation_answer(bad_scores, True), moderation_answer(bad_scores, True))
    with pytest.raises(ScorerError, match="invalid JSON twice"):
        await scorer.run(make_run())


@pytest.mark.parametrize(
    ("scores", "options", "expected", "flagged"),
    [
        ({"hate": 0.1, "violence": 0.2}, {}, 1.0, []),
        ({"hate": 0.1, "violence": 0.51}, {}, 0.0, ["violence"]),
        ({"hate": 0.5, "violence": 0.5}, {}, 1.0, []),  # exceeding, not reaching, flags (autoevals)
        ({"hate": 0.3, "violence": 0.2}, {"threshold": 0.25}, 0.0, ["hate"]),
        ({"hate": 0.9, "violence": 0.2}, {"categories": ["violence"]}, 1.0, []),
        ({"hate": 0.9, "violence": 0.7}, {"categories": ["violence", "hate"]}, 0.0, ["hate", "violence"]),
    ],
)
async def test_api_moderation(
    llm_server: LLMServer,
    scores: dict[str, float],
    options: dict[str, Any],
    expected: float,
    flagged: list[str],
) -> None:
    llm_server.moderations.append(scores)
    scorer = create_moderation_scorer(judge_for(llm_server, MODERATION_MODEL), method="api", **options)
    result = await scorer.run(make_run(answer="Some text to moderate."))
    assert result.score == expected
    assert result.analyze_step_result["flagged_categories"] == flagged
    assert result.analyze_step_result["category_scores"] == scores
    (request,) = [r for r in llm_server.requests if r.path.endswith("/moderations")]
    assert request.body["input"] == "Some text to moderate."
    assert request.body["model"] == "omni-moderation-latest"


async def test_api_moderation_retries_a_rate_limit(llm_server: LLMServer) -> None:
    llm_server.script_faults("moderations", error_reply(429, retry_after=0.01))
    llm_server.moderations.append({"hate": 0.9})
    scorer = create_moderation_scorer(judge_for(llm_server, MODERATION_MODEL), method="api")
    assert (await scorer.run(make_run())).score == 0.0
    assert len([r for r in llm_server.requests if r.path.endswith("/moderations")]) == 2


async def test_api_moderation_error_is_a_failure(llm_server: LLMServer) -> None:
    with pytest.raises(ScorerError, match="step 'analyze'"):
        await create_moderation_scorer(judge_for(llm_server, MODERATION_MODEL), method="api").run(make_run())


def test_moderation_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="threshold"):
        create_moderation_scorer(Judge(MODEL), threshold=1.5)
    with pytest.raises(ValueError, match="categories"):
        create_moderation_scorer(Judge(MODEL), categories=[])
    with pytest.raises(ValueError, match="method"):
        create_moderation_scorer(Judge(MODEL), method="regex")  # type: ignore[arg-type]


# --- registry ------------------------------------------------------------------------------------


async def test_registry_builds_classifiers_with_camel_case_options(llm_server: LLMServer) -> None:
    judge = {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "test-key"}
    llm_server.script(json_reply({"choice": "Yes"}))
    humor = build_scorer("humor", {"judge": judge, "useCot": False})
    assert (await humor.run(make_run())).score == 1.0
    translation = build_scorer("translation", {"judge": MODEL, "language": "French"})
    assert translation.id == "translation"
    with pytest.raises(ValueError, match="translation"):
        build_scorer("translation", {"judge": MODEL})  # the source language is required


async def test_registry_builds_moderation(llm_server: LLMServer) -> None:
    judge = {"model": MODERATION_MODEL, "api_base": llm_server.api_base, "api_key": "test-key"}
    llm_server.moderations.append({"hate": 0.3, "violence": 0.1})
    options = {"judge": judge, "threshold": 0.2, "categories": ["violence"], "method": "api"}
    assert (await build_scorer("moderation", options).run(make_run())).score == 1.0
    llm_server.script(moderation_answer({"violence": 0.3}, True))
    options = {"judge": {**judge, "model": MODEL}, "threshold": 0.2, "categories": ["violence"]}
    assert (await build_scorer("moderation", options).run(make_run())).score == 0.0
    for name in ("factuality", "summary", "possible"):
        assert build_scorer(name, {"judge": MODEL}).id == name
