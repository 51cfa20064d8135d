"""Textual difference: how much of the input survives in the output, as @mastra/evals scores it."""

from __future__ import annotations

from collections import Counter

from rapidfuzz.distance import LCSseq

from tracescore.scoring.framework.message_text import (
    input_text,
    js_collapse_whitespace,
    js_length,
    js_split_words,
    output_text,
    utf16_units,
)
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


def lcs_ratio(a: str, b: str) -> float:
    """2 * LCS / (len a + len b) over UTF-16 code units, as Mastra's ``calculateRatio``."""
    if a == b:
        return 1.0
    a, b = utf16_units(a), utf16_units(b)
    if not a or not b:
        return 0.0
    return 2.0 * LCSseq.similarity(a, b) / (len(a) + len(b))


def count_changes(a: str, b: str) -> int:
    """Word-level changes between the texts (Mastra's ``countChanges``, greedy word matching)."""
    norm_a, norm_b = js_collapse_whitespace(a), js_collapse_whitespace(b)
    if norm_a == norm_b:
        if a == b:
            return 0
        # Only whitespace differs: the difference in word count, or at least one change.
        return abs(len(js_split_words(a)) - len(js_split_words(b))) or 1
    words_a, words_b = js_split_words(norm_a), js_split_words(norm_b)
    if not words_a or not words_b:
        return len(words_a) + len(words_b)
    # Mastra matches each word greedily to the first unused equal word; that pairs up exactly the
    # multiset intersection of the two word lists, which Counter computes in linear time.
    fewer, more = sorted((Counter(words_a), Counter(words_b)), key=len)
    matches = sum([min(count, more[word]) for word, count in fewer.items() if word in more])
    return max(len(words_a), len(words_b)) - matches


def _preprocess(ctx: StepContext) -> dict[str, float]:
    a, b = input_text(ctx.run), output_text(ctx.run)
    length_a, length_b = js_length(a), js_length(b)
    longest = max(length_a, length_b)
    length_diff = abs(length_a - length_b) / longest if longest > 0 else 0
    return {
        "ratio": lcs_ratio(a, b),
        "confidence": 1 - length_diff,
        "changes": count_changes(a, b),
        "length_diff": length_diff,
    }


TEXTUAL_DIFFERENCE = ScorerSpec(
    name="textual-difference",
    former_id="textual-difference-scorer",
    title="Textual Difference Scorer",
    description="Calculate textual difference between input and output using sequence matching algorithms.",
)


@register(TEXTUAL_DIFFERENCE)
def create_textual_difference_scorer() -> Scorer:
    """Scores 2 * LCS / total length of the input and output texts (1 identical, 0 disjoint).

    Example::

        run = {"input": {"input_messages": [{"role": "user", "content": "ab"}]},
               "output": [{"role": "assistant", "content": "ba"}]}
        result = await create_textual_difference_scorer().run(run)
        result.score  # 0.5: "ab" and "ba" share one character of four
    """
    return (
        TEXTUAL_DIFFERENCE.create_scorer()
        .preprocess(_preprocess)
        .generate_score(lambda ctx: ctx.preprocessed(dict)["ratio"])
    )
