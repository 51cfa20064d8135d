"""Parity of completeness, keyword coverage and tone with the published @mastra/evals 1.10.2 scorers.

The fixtures ``tests/fixtures/mastra_parity`` (cases.json, reference.json) were computed with Node by
its mastra_reference.mjs; runs are built the same way (``run_like_reference``). The extra table
below came from @mastra/evals 1.10.2 under Node 20 in the same way. Keyword coverage and tone match
to the last bit; completeness (compromise NLP in Mastra, plain words here) is held to a floor.
"""

from __future__ import annotations

from typing import Any

import pytest

from scoring.prebuilt import (
    create_completeness_scorer,
    create_keyword_coverage_scorer,
    create_tone_scorer,
)
from scoring.prebuilt.completeness import coverage, extract_elements
from scoring.prebuilt.keyword_coverage import english_stopwords, extract_keywords
from scoring.prebuilt.tone import afinn_lexicon, comparative_sentiment, sentiment_tokens
from scoring.registry import build_scorer
from tests.scoring.test_parity import CASES, REFERENCE, run_like_reference


def _cases_with(scorer_name: str) -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in CASES if scorer_name in REFERENCE[case["id"]]]


def test_the_fixtures_cover_these_scorers() -> None:
    assert len(_cases_with("keyword-coverage")) >= 30
    assert len(_cases_with("tone")) >= 30
    assert len(_cases_with("tone-reference")) >= 5
    assert len(_cases_with("completeness")) >= 30


@pytest.mark.parametrize("case", _cases_with("keyword-coverage"))
async def test_keyword_coverage_matches_mastra(case: dict[str, Any]) -> None:
    result = await create_keyword_coverage_scorer().run(run_like_reference(case["input"], case["output"]))
    assert result.score == REFERENCE[case["id"]]["keyword-coverage"]


@pytest.mark.parametrize("case", _cases_with("tone"))
async def test_tone_matches_mastra(case: dict[str, Any]) -> None:
    result = await create_tone_scorer().run(run_like_reference(case["input"], case["output"]))
    assert result.score == REFERENCE[case["id"]]["tone"]


@pytest.mark.parametrize("case", _cases_with("tone-reference"))
async def test_tone_with_reference_matches_mastra(case: dict[str, Any]) -> None:
    # The option in Mastra's camelCase, through the registry.
    scorer = build_scorer("tone-scorer", {"referenceTone": case["reference_tone"]})
    result = await scorer.run(run_like_reference(case["input"], case["output"]))
    assert result.score == REFERENCE[case["id"]]["tone-reference"]


# Completeness floors. Shared cases: 35 of 35 scores equal Mastra's (the verb rules were written
# looking at them). Held-out pairs below, written after the rules were fixed and never tuned on:
# 13 of 15 equal, mean absolute error 0.018 (plain words without the verb rules: 9 of 15, 0.053).
SHARED_MIN_EXACT, SHARED_MAX_MAE = 0.9, 0.01
HELD_OUT_MIN_EXACT, HELD_OUT_MAX_MAE = 0.8, 0.025

# (input, output, Mastra's completeness) from @mastra/evals 1.10.2 under Node 20.
HELD_OUT_COMPLETENESS = [
    ("How can I improve my sleep quality?",
     "Keep a regular schedule, avoid caffeine late, and keep your bedroom dark.", 0),
    ("The library opened a new branch downtown.",
     "A new downtown branch of the library has opened.", 1),
    ("List three benefits of drinking water.",
     "Water keeps you hydrated, helps digestion and regulates temperature.", 0.16666666666666666),
    ("My package hasn't arrived yet and the tracking stopped updating.",
     "Sorry, your package was delayed; tracking will update soon.", 0.18181818181818182),
    ("Describe the water cycle.",
     "Water evaporates, condenses into clouds, and falls as precipitation.", 0.25),
    ("We were told the flight would be cancelled.",
     "The airline cancelled the flight and offered refunds.", 0.6),
    ("Is Python better than Java for data science?",
     "Python is usually preferred for data science because of its libraries.", 0.5),
    ("The children played in the park while their parents talked.",
     "Parents talked as the kids were playing in the park.", 0.6666666666666666),
    ("Can you recommend a good book about history?",
     "Try Sapiens by Yuval Noah Harari; it covers human history.", 0.125),
    ("The engine overheated, so the driver stopped the car.",
     "The driver had stopped because the engine was overheating.", 0.7142857142857143),
    ("I've been learning Spanish for two months.",
     "Two months of Spanish is a great start; keep practicing daily.", 0.42857142857142855),
    ("Our team shipped the feature before the deadline.",
     "The feature was shipped early by the team.", 0.5714285714285714),
    ("What happens if I miss a payment?",
     "Missing a payment may incur a late fee and affect your credit score.", 0.42857142857142855),
    ("The museum is closed on Mondays.",
     "It's open Tuesday through Sunday.", 0),
    ("Scientists discovered water on the moon.",
     "Water was discovered on the lunar surface by scientists.", 0.8333333333333334),
]  # fmt: skip


async def _agreement(pairs: list[tuple[str, str, float]]) -> tuple[float, float]:
    errors = []
    for user, answer, expected in pairs:
        result = await create_completeness_scorer().run(run_like_reference(user, answer))
        errors.append(abs(result.score - expected))
    return sum(1 for error in errors if error == 0) / len(errors), sum(errors) / len(errors)


async def test_completeness_agrees_with_mastra_on_the_shared_cases() -> None:
    pairs = [
        (case["input"], case["output"], REFERENCE[case["id"]]["completeness"])
        for case in CASES
        if "completeness" in REFERENCE[case["id"]]
    ]
    exact, mae = await _agreement(pairs)
    assert exact >= SHARED_MIN_EXACT, f"only {exact:.0%} exact"
    assert mae <= SHARED_MAX_MAE, f"mean absolute error {mae:.4f}"


async def test_completeness_agrees_with_mastra_on_held_out_pairs() -> None:
    exact, mae = await _agreement(HELD_OUT_COMPLETENESS)
    assert exact >= HELD_OUT_MIN_EXACT, f"only {exact:.0%} exact"
    assert mae <= HELD_OUT_MAX_MAE, f"mean absolute error {mae:.4f}"


# (id, input, output, keyword coverage, tone, tone with the input as reference, completeness),
# from @mastra/evals 1.10.2 under Node 20; completeness is None where this port differs (compromise's
# tagger reads "'quoted'" and "isn't great" differently from the rules here).
EXTRA_CASES = [
    ("negation", "The food was not good and the service isn't great",
     "I don't like it. Not bad at all! Can't complain.", 0, 0.5694444444444444, 0.10000000000000009, None),
    ("html-url", "Read <b>the</b> docs at https://Example.com/Path?q=1, then Email ME!",
     "See https://Example.com/Path?q=1 and the DOCS. <i>email</i> me", 0.5, 1, 1, 0.7857142857142857),
    ("apostrophes", "'quoted' ''double'' it's rock'n'roll \u201csmart\u201d \u2018single\u2019",
     "quoted double rock'n'roll smart single it's", 0.8, 1, 0.8333333333333334, None),
    ("digits", "Version 2 of 3 released in 2024 with 10x speed and 3.5 ratio", "2024 10x version speed 3.5",
     0.6, 1, 1, 0.46153846153846156),
    ("tabs-newlines", "happy\tsad\n\nangry  calm\u00a0joy", "happy sad\tangry\ncalm joy", 1, 1, 0, 1),
    ("emoji", "I love it 😀 😍 so good 👍", "terrible 😡 awful 😢 bad", 0, 1, 0, 0),
    ("single-chars", "a _ @ & # b c # tags @user", "_ @ & # tags @user b", 1, 1, 1, 0.6),
    ("unicode-case", "İstanbul ΣΟΦΟΣ Straße CAFÉ naïve", "istanbul σοφος straße café naive", 0.6, 1, 1, 1),
    ("only-punctuation", "!!! ??? ... ,,,", "...", 1, 1, 1, 1),
    ("sentences", "Great news! Terrible outcome... Fine? ok", "Wonderful. Awful! Amazing? Horrible.",
     0, 0, 0.8333333333333333, 0),
    ("no-terminator", "the weather is lovely today", "lovely weather, nice and warm",
     0.6666666666666666, 1, 0.20000000000000007, 0.4),
    ("caps-negators", "NOT GOOD. Don't worry, be happy. non hostile", "Not good, not bad",
     0.25, 1, 0.375, 0.25),
]  # fmt: skip


@pytest.mark.parametrize(
    ("user", "answer", "keywords", "tone", "tone_reference", "completeness"),
    [pytest.param(*case[1:], id=case[0]) for case in EXTRA_CASES],
)
async def test_edge_cases_match_mastra(
    user: str, answer: str, keywords: float, tone: float, tone_reference: float, completeness: float | None
) -> None:
    run = run_like_reference(user, answer)
    assert (await create_keyword_coverage_scorer().run(run)).score == keywords
    assert (await create_tone_scorer().run(run)).score == tone
    assert (await create_tone_scorer(reference_tone=user).run(run)).score == tone_reference
    if completeness is not None:
        assert (await create_completeness_scorer().run(run)).score == completeness


# Expected values in the two tests below are keyword-extractor 0.0.28 and sentiment 5.0.2 under Node 20.


def test_keyword_extraction_like_keyword_extractor() -> None:
    # Stopwords dropped, punctuation and one edge apostrophe stripped, URLs kept as written (with
    # their comma), all-digit words dropped, first occurrences kept in order.
    text = "The <b>API</b> docs: https://Ex.com/A?b=1, 'quoted' ''twice'' 42 4x2 API!"
    assert extract_keywords(text) == ["api", "docs", "https://Ex.com/A?b=1,", "quoted", "'twice'", "4x2"]
    assert extract_keywords("") == []
    assert extract_keywords("   \u3000") == []


def test_tokens_and_negation_like_the_sentiment_package() -> None:
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


def test_completeness_elements_and_coverage_rule() -> None:
    assert extract_elements("Café crème, café 2x! Ünïcode") == ["cafe", "creme", "2x", "unicode"]
    assert extract_elements("日本語 ✓") == []
    # compromise's elements for these (Node): verbs as infinitives, auxiliaries gone.
    assert extract_elements("The refund has been processed.") == ["the", "refund", "process"]
    assert sorted(extract_elements("It isn't ready.")) == ["be", "does", "it", "not", "ready"]
    assert sorted(extract_elements("She is running fast.")) == ["fast", "run", "she"]
    assert sorted(extract_elements("The cat sat on the mat.")) == ["cat", "mat", "on", "sit", "the"]
    assert coverage(["eclipses"], ["eclipse"]) == 1  # 7/8 of the longer word
    assert coverage(["run"], ["runs"]) == 0  # words of 3 letters or less must match exactly
    assert coverage(["abcde"], ["abc"]) == 0  # 3/5 is not more than 60%
    assert coverage([], []) == 1
    assert coverage([], ["x"]) == 0


def test_data_files_ship_complete() -> None:
    assert len(english_stopwords()) == 570  # keyword-extractor 0.0.28: 571 entries, "would" twice
    lexicon = afinn_lexicon()
    assert len(lexicon.scores) == 3382 + 767  # AFINN-165 words + emoji ranks
    assert lexicon.scores["good"] == 3 and lexicon.scores["abandon"] == -2
    assert "isn't" in lexicon.negators and len(lexicon.negators) == 12


@pytest.mark.parametrize(
    ("name", "scorer_id", "needs"),
    [
        ("completeness", "completeness-scorer", {"input", "output"}),
        ("keyword-coverage", "keyword-coverage-scorer", {"input", "output"}),
        ("tone", "tone-scorer", {"output"}),
    ],
)
def test_registered_with_their_needs(name: str, scorer_id: str, needs: set[str]) -> None:
    assert build_scorer(name).id == scorer_id
    assert build_scorer(scorer_id).needs == needs
