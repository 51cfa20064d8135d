"""Keyword coverage against the published @mastra/evals 1.10.2 scorer, to the last bit of the float,
and its keyword extraction against keyword-extractor 0.0.28."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.heuristic.mastra_edge_cases import EXTRA_CASES
from tests.scoring.prebuilt.mastra_parity import REFERENCE, cases_with, run_like_reference
from tracescore.scoring.prebuilt import create_keyword_coverage_scorer
from tracescore.scoring.prebuilt.heuristic.keyword_coverage import english_stopwords, extract_keywords
from tracescore.scoring.prebuilt.registry import build_scorer


def test_the_fixtures_cover_the_scorer() -> None:
    assert len(cases_with("keyword-coverage")) >= 30


@pytest.mark.parametrize("case", cases_with("keyword-coverage"))
async def test_keyword_coverage_matches_mastra(case: dict[str, Any]) -> None:
    result = await create_keyword_coverage_scorer().run(run_like_reference(case["input"], case["output"]))
    assert result.score == REFERENCE[case["id"]]["keyword-coverage"]


@pytest.mark.parametrize(
    ("user", "answer", "keywords"), [pytest.param(*case[1:4], id=case[0]) for case in EXTRA_CASES]
)
async def test_edge_cases_match_mastra(user: str, answer: str, keywords: float) -> None:
    run = run_like_reference(user, answer)
    assert (await create_keyword_coverage_scorer().run(run)).score == keywords


def test_keyword_extraction_like_keyword_extractor() -> None:
    # Expected values: keyword-extractor 0.0.28 under Node 20.
    # Stopwords dropped, punctuation and one edge apostrophe stripped, URLs kept as written (with
    # their comma), all-digit words dropped, first occurrences kept in order.
    text = "The <b>API</b> docs: https://Ex.com/A?b=1, 'quoted' ''twice'' 42 4x2 API!"
    assert extract_keywords(text) == ["api", "docs", "https://Ex.com/A?b=1,", "quoted", "'twice'", "4x2"]
    assert extract_keywords("") == []
    assert extract_keywords("   \u3000") == []


def test_the_stopword_list_ships_complete() -> None:
    assert len(english_stopwords()) == 570  # keyword-extractor 0.0.28: 571 entries, "would" twice


def test_registered_with_its_needs() -> None:
    assert build_scorer("keyword-coverage").id == "keyword-coverage"
    assert build_scorer("keyword-coverage").needs == {"input", "output"}
