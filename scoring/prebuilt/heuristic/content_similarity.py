"""Content similarity: Dice coefficient over character bigrams, as @mastra/evals scores it."""

from __future__ import annotations

from collections import Counter

from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import SMALL_RUN_CHARS, StepContext
from scoring.text import JS_WHITESPACE_RUN, input_text, js_collapse_whitespace, output_text, utf16_units


def _bigrams(units: str) -> Counter[str]:
    return Counter(units[i : i + 2] for i in range(len(units) - 1))


def compare_two_strings(first: str, second: str) -> float:
    """``compareTwoStrings`` of the npm package string-similarity 4.0.4.

    Whitespace (JavaScript's ``\\s`` set) is removed, then the Sørensen-Dice coefficient of the two
    bigram multisets is taken over UTF-16 code units, as the JavaScript ``substring`` does.
    """
    first, second = JS_WHITESPACE_RUN.sub("", first), JS_WHITESPACE_RUN.sub("", second)
    if first == second:
        return 1.0
    first, second = utf16_units(first), utf16_units(second)
    if len(first) < 2 or len(second) < 2:
        return 0.0
    shared = sum((_bigrams(first) & _bigrams(second)).values())
    return 2.0 * shared / (len(first) + len(second) - 2)


CONTENT_SIMILARITY = ScorerSpec(
    name="content-similarity",
    id="content-similarity-scorer",
    title="Content Similarity Scorer",
    description=(
        "Calculates content similarity between input and output messages using string comparison algorithms."
    ),
)


@register(CONTENT_SIMILARITY)
def create_content_similarity_scorer(ignore_case: bool = True, ignore_whitespace: bool = True) -> Scorer:
    """Scores how alike the input and output texts are (1 identical, 0 no shared bigram).

    Lower-casing is Python's ``str.lower`` (full Unicode mapping, like JavaScript's
    ``toLowerCase``). One difference from Mastra, on purpose: Mastra's options object defaults as
    a whole, so passing only ``ignoreWhitespace`` there turns ``ignoreCase`` off; here each option
    defaults to True on its own.

    Example::

        run = {"input": {"input_messages": [{"role": "user", "content": "12345 67890"}]},
               "output": [{"role": "assistant", "content": "12345"}]}
        result = await create_content_similarity_scorer().run(run)
        result.score  # 0.6153846153846154: 4 shared bigrams of 9 + 4
    """

    def preprocess(ctx: StepContext) -> dict[str, str]:
        processed_input, processed_output = input_text(ctx.run), output_text(ctx.run)
        if ignore_case:
            processed_input, processed_output = processed_input.lower(), processed_output.lower()
        if ignore_whitespace:
            processed_input = js_collapse_whitespace(processed_input)
            processed_output = js_collapse_whitespace(processed_output)
        return {"processed_input": processed_input, "processed_output": processed_output}

    def generate_score(ctx: StepContext) -> float:
        texts: dict[str, str] = ctx.preprocessed(dict)
        return compare_two_strings(texts["processed_input"], texts["processed_output"])

    return (
        CONTENT_SIMILARITY.create_scorer()
        .preprocess(preprocess)
        .generate_score(generate_score, heavy=True, inline_below_chars=SMALL_RUN_CHARS)
    )
