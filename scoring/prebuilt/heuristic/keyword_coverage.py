"""Keyword coverage: the share of the input's keywords the output repeats, as @mastra/evals scores it.

Keywords are what the npm package keyword-extractor 0.0.28 extracts with Mastra's options
(English, digits removed, lower-cased, duplicates removed); its stopword list ships as package data
(``data/stopwords_en.json``, licence in ``data/NOTICE.md``).
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from tracescore.scoring.framework.message_text import (
    JS_WHITESPACE_CHARS,
    input_text,
    js_trim,
    output_text,
    splits_like_js,
)
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

_HTML_TAG = re.compile(r"<[^>]+>")
_JS_WHITESPACE_ONE = re.compile(f"[{JS_WHITESPACE_CHARS}]")
# keyword-extractor keeps words holding a URL untouched (and in their case).
_URL = re.compile(r"https?://")
# Stripped punctuation; `^'`/`'$` drop one apostrophe at either end of the word only.
_PUNCTUATION = re.compile("\\.|,|;|!|\\?|\\(|\\)|:|\"|\\A'|'\\Z|\u201c|\u201d|\u2018|\u2019")
# The same over a whole text without URLs: a word's ends are a whitespace character or the text's.
_TEXT_PUNCTUATION = re.compile(
    f"[.,;!?():\"\u201c\u201d\u2018\u2019]|(?<![^{JS_WHITESPACE_CHARS}])'|'(?![^{JS_WHITESPACE_CHARS}])"
)
_ODD_SINGLE = re.compile("_|@|&|#")
_ODD_SINGLES = frozenset("_@&#")
_ASCII_DIGITS = frozenset("0123456789")  # JavaScript's \d


@cache
def english_stopwords() -> frozenset[str]:
    """keyword-extractor's English stopwords."""
    text = (
        resources.files("tracescore.scoring.prebuilt.heuristic")
        .joinpath("data/stopwords_en.json")
        .read_text("utf-8")
    )
    return frozenset(json.loads(text))


def extract_keywords(text: str) -> list[str]:
    """``keyword_extractor.extract(text, {language: 'english', remove_digits, return_changed_case,
    remove_duplicates})``: non-stopwords, lower-cased (URLs as written), first occurrences in order.

    >>> extract_keywords("The Quick brown fox, the 42 foxes!")
    ['quick', 'brown', 'fox', 'foxes']
    """
    text = js_trim(_HTML_TAG.sub("", text))
    stopwords = english_stopwords()
    if _URL.search(text) is None and splits_like_js(text):
        # The common case, the same steps in bulk: no word holds a URL, so the punctuation goes in
        # one pass over the text (it never removes whitespace: the words stay where they were);
        # the text is lower-cased at once (no whitespace character between two words is
        # case-ignorable here, so no word's lower case depends on its neighbours); and the checks,
        # which lower-casing cannot change, run on the distinct words only.
        words = dict.fromkeys(_TEXT_PUNCTUATION.sub("", text).lower().split())
        return [
            word
            for word in words
            if word not in stopwords
            and not (len(word) == 1 and word in _ODD_SINGLES)
            and not (word.isascii() and word.isdigit())
        ]
    keywords: dict[str, None] = {}  # an ordered set
    for raw in _JS_WHITESPACE_ONE.split(text) if text else []:
        is_url = _URL.search(raw) is not None
        word = raw if is_url else _PUNCTUATION.sub("", raw)
        if len(word) == 1:  # one character (one UTF-16 unit; astral ones are unaffected anyway)
            word = _ODD_SINGLE.sub("", word)
        if word and set(word) <= _ASCII_DIGITS:
            word = ""
        if word and word.lower() not in stopwords:
            keywords.setdefault(word if is_url else word.lower(), None)
    return list(keywords)


def _preprocess(ctx: StepContext) -> dict[str, list[str]]:
    return {
        "reference_keywords": extract_keywords(input_text(ctx.run)),
        "response_keywords": extract_keywords(output_text(ctx.run)),
    }


def _analyze(ctx: StepContext) -> dict[str, int]:
    keywords: dict[str, list[str]] = ctx.preprocessed(dict)
    response = set(keywords["response_keywords"])
    reference = keywords["reference_keywords"]
    return {
        "total_keywords_length": len(reference),
        "matched_keywords_length": sum(1 for word in reference if word in response),
    }


def _score(ctx: StepContext) -> float:
    counts: dict[str, int] = ctx.analyzed(dict)
    if not counts["total_keywords_length"]:
        return 1  # nothing to cover (Mastra: also when only the output has keywords)
    return counts["matched_keywords_length"] / counts["total_keywords_length"]


KEYWORD_COVERAGE = ScorerSpec(
    name="keyword-coverage",
    former_id="keyword-coverage-scorer",
    title="Keyword Coverage Scorer",
    description=(
        'Leverage the nlp method from "compromise" to extract elements from the input and output and '
        "calculate the coverage."
    ),
)


@register(KEYWORD_COVERAGE)
def create_keyword_coverage_scorer() -> Scorer:
    """Scores the share of the input's keywords found among the output's keywords.

    Reads the input and output texts; a run with no input keywords scores 1, as in Mastra.

    Example::

        run = {"input": {"input_messages": [{"role": "user", "content": "Reset my password"}]},
               "output": [{"role": "assistant", "content": "Click 'Forgot password'"}]}
        result = await create_keyword_coverage_scorer().run(run)
        result.score  # 0.5: "password" of ["reset", "password"]
    """
    return KEYWORD_COVERAGE.create_scorer().preprocess(_preprocess).analyze(_analyze).generate_score(_score)
