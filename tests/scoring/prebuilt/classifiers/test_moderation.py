"""Moderation: VoltAgent's LLM safety classifier, and autoevals' moderation API.

Judge answers and moderation scores are scripted on the local OpenAI-compatible server and reach the
scorer through litellm's real HTTP path; expected scores and reasons are written out by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, Reply, error_reply, json_reply, judge_at
from tests.support.runs import agent_run
from tracescore.schemas import AgentRun
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.classifiers.moderation import DEFAULT_CATEGORIES, create_moderation_scorer
from tracescore.scoring.prebuilt.registry import build_scorer


def make_run(question: str = "Q?", answer: str = "A.", ground_truth: Any = "Expected.") -> AgentRun:
    return agent_run(question, answer, ground_truth=ground_truth)


MODERATION_MODEL = "openai/omni-moderation-latest"


def moderation_answer(scores: Mapping[str, float | None], flagged: bool, reason: str | None = None) -> Reply:
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
    judge: Judge,
    scores: dict[str, float | None],
    flagged: bool,
    threshold: float,
    expected: float,
    reason: str,
) -> None:
    llm_server.script(moderation_answer(scores, flagged, "Threat." if flagged else None))
    scorer = create_moderation_scorer(judge, threshold=threshold)
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


async def test_llm_moderation_with_own_categories(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(moderation_answer({"spam": 0.9, "pii": None}, True))
    scorer = create_moderation_scorer(judge, categories=["spam", "pii"])
    result = await scorer.run(make_run())
    assert result.score == 0.0
    assert result.analyze_step_result["category_scores"] == {"spam": 0.9}  # null: not rated
    assert result.reason == "Flagged by categories: spam."
    prompt = llm_server.user_prompt()
    assert "- spam" in prompt and "- pii" in prompt and "- hate" not in prompt


@pytest.mark.parametrize(
    "bad_scores",
    [
        {"spam": 0.9},  # a category missing
        {"spam": 1.5, "pii": 0.0},  # outside [0, 1]
    ],
)
async def test_llm_moderation_invalid_answer_is_repaired_then_fails(
    llm_server: LLMServer, judge: Judge, bad_scores: dict[str, float]
) -> None:
    scorer = create_moderation_scorer(judge, categories=["spam", "pii"])
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
    scorer = create_moderation_scorer(judge_at(llm_server, MODERATION_MODEL), method="api", **options)
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
    scorer = create_moderation_scorer(judge_at(llm_server, MODERATION_MODEL), method="api")
    assert (await scorer.run(make_run())).score == 0.0
    assert len([r for r in llm_server.requests if r.path.endswith("/moderations")]) == 2


async def test_api_moderation_error_is_a_failure(llm_server: LLMServer) -> None:
    with pytest.raises(ScorerError, match="step 'analyze'"):
        await create_moderation_scorer(judge_at(llm_server, MODERATION_MODEL), method="api").run(make_run())


def test_moderation_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="threshold"):
        create_moderation_scorer(Judge(MODEL), threshold=1.5)
    with pytest.raises(ValueError, match="categories"):
        create_moderation_scorer(Judge(MODEL), categories=[])
    with pytest.raises(ValueError, match="method"):
        create_moderation_scorer(Judge(MODEL), method="regex")  # type: ignore[arg-type]


@pytest.mark.parametrize(("flagged", "label"), [(True, "flagged"), (False, "not flagged")])
async def test_llm_moderation_labels_the_run_by_the_judges_flag(
    llm_server: LLMServer, judge: Judge, flagged: bool, label: str
) -> None:
    llm_server.script(moderation_answer(all_categories(violence=0.8 if flagged else 0.0), flagged))
    result = await create_moderation_scorer(judge).run(make_run())
    assert (result.score, result.label) == (0.0 if flagged else 1.0, label)
    assert result.to_score().label == label


@pytest.mark.parametrize(("scores", "label"), [({"hate": 0.9}, "flagged"), ({"hate": 0.5}, "not flagged")])
async def test_api_moderation_labels_the_run_by_its_threshold(
    llm_server: LLMServer, scores: dict[str, float], label: str
) -> None:
    llm_server.moderations.append(scores)
    scorer = create_moderation_scorer(judge_at(llm_server, MODERATION_MODEL), method="api")
    result = await scorer.run(make_run())
    assert result.label == label and result.score == (0.0 if label == "flagged" else 1.0)


def test_moderation_needs_the_output() -> None:
    assert create_moderation_scorer(Judge(MODEL)).needs == {"output"}


async def test_registry_builds_moderation(llm_server: LLMServer) -> None:
    judge = {"model": MODERATION_MODEL, "api_base": llm_server.api_base, "api_key": "test-key"}
    llm_server.moderations.append({"hate": 0.3, "violence": 0.1})
    options = {"judge": judge, "threshold": 0.2, "categories": ["violence"], "method": "api"}
    assert (await build_scorer("moderation", options).run(make_run())).score == 1.0
    llm_server.script(moderation_answer({"violence": 0.3}, True))
    options = {"judge": {**judge, "model": MODEL}, "threshold": 0.2, "categories": ["violence"]}
    assert (await build_scorer("moderation", options).run(make_run())).score == 0.0
