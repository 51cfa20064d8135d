"""Tone against the published @mastra/evals 1.10.2 scorer, to the last bit of the float, and its
sentiment analysis against the npm package sentiment 5.0.2."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.heuristic.mastra_edge_cases import EXTRA_CASES
from tests.scoring.prebuilt.mastra_parity import REFERENCE, cases_with, run_like_reference
from tracescore.scoring.prebuilt import create_tone_scorer
from tracescore.scoring.prebuilt.heuristic.tone import afinn_lexicon, comparative_sentiment, sentiment_tokens
from tracescore.scoring.prebuilt.registry import build_scorer


def test_the_fixtures_cover_the_scorer() -> None:
    assert len(cases_with("tone")) >= 30
    assert len(cases_with("tone-reference")) >= 5


@pytest.mark.parametrize("case", cases_with("tone"))
async def test_tone_matches_mastra(case: dict[str, Any]) -> None:
    result = await create_tone_scorer().run(run_like_reference(case["input"], case["output"]))
    assert result.score == REFERENCE[case["id"]]["tone"]


@pytest.mark.parametrize("case", cases_with("tone-reference"))
async def test_tone_with_reference_matches_mastra(case: dict[str, Any]) -> None:
    # The option in Mastra's camelCase, through the registry.
    scorer = build_scorer("tone", {"referenceTone": case["reference_tone"]})
    result = await scorer.run(run_like_reference(case["input"], case["output"]))
    assert result.score == REFERENCE[case["id"]]["tone-reference"]


@pytest.mark.parametrize(
    ("user", "answer", "tone", "tone_reference"),
    [pytest.param(*case[1:3], *case[4:6], id=case[0]) for case in EXTRA_CASES],
)
async def test_edge_cases_match_mastra(user: str, answer: str, tone: float, tone_reference: float) -> None:
    run = run_like_reference(user, answer)
    assert (await create_tone_scorer().run(run)).score == tone
    assert (await create_tone_scorer(reference_tone=user).run(run)).score == tone_reference


def test_tokens_and_negation_like_the_sentiment_package() -> None:
    # Expected values: sentiment 5.0.2 under Node 20.
    assert sentiment_tokens("Not  BAD!\nok\tthen") == ["not", "bad", "ok\tthen"]  # a lone tab stays
    assert comparative_sentiment("Not  BAD!\nok\tthen") == 1
    assert sentiment_tokens("") == [""]
    assert comparative_sentiment("") == 0
    assert comparative_sentiment("not bad") == 1.5  # "bad" (-3) flipped by "not"
    assert comparative_sentiment("good 👍") == 2.5


async def test_tone_step_result_names_its_parts() -> None:
    result = await create_tone_scorer(reference_tone="Great!").run(run_like_reference("hi", "Great! Awful."))
    assert result.preprocess_step_result == {
        "score": 0.0,
        "response_sentiment": 0.0,
        "reference_sentiment": 3.0,
        "difference": 3.0,
    }


def test_the_lexicon_ships_complete() -> None:
    lexicon = afinn_lexicon()
    assert len(lexicon.scores) == 3382 + 767  # AFINN-165 words + emoji ranks
    assert lexicon.scores["good"] == 3 and lexicon.scores["abandon"] == -2
    assert "isn't" in lexicon.negators and len(lexicon.negators) == 12


def test_registered_with_its_needs() -> None:
    assert build_scorer("tone").id == "tone"
    assert build_scorer("tone").needs == {"output"}
