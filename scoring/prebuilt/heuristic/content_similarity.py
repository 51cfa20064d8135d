"""Content similarity: Dice coefficient over character bigrams, as @mastra/evals scores it."""

from __future__ import annotations

import operator
from collections import Counter

import numpy as np
import numpy.typing as npt

from tracescore.scoring.framework.message_text import (
    JS_WHITESPACE,
    input_text,
    js_collapse_whitespace,
    js_remove_whitespace,
    output_text,
    utf16_units,
)
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

# Under this many characters in the two texts together, strings and a Counter of bigrams are the
# faster count; from here numpy's fixed cost (~12 µs) pays off (measured: equal at about 120, numpy
# 4x faster at 800 and 8x at 5,000).
NUMPY_FROM_CHARS = 128
# numpy counts the bigrams in a dense table of (distinct units)² bins while it stays small (English
# text holds some 60 distinct units); texts with more (CJK) are counted by sorting instead.
DENSE_MAX_UNITS = 256
# Which UTF-16 code units are JavaScript whitespace (all of it lies in the BMP).
_IS_JS_WHITESPACE = np.zeros(0x10000, dtype=bool)
_IS_JS_WHITESPACE[[ord(ch) for ch in JS_WHITESPACE]] = True
_IS_JS_WHITESPACE.flags.writeable = False


def compare_two_strings(first: str, second: str) -> float:
    """``compareTwoStrings`` of the npm package string-similarity 4.0.4.

    Whitespace (JavaScript's ``\\s`` set) is removed, then the Sørensen-Dice coefficient of the two
    bigram multisets is taken over UTF-16 code units, as the JavaScript ``substring`` does.
    """
    if len(first) + len(second) >= NUMPY_FROM_CHARS:
        return _compare_code_units(_code_units(first), _code_units(second))
    first, second = js_remove_whitespace(first), js_remove_whitespace(second)
    if first == second:
        return 1.0
    first, second = utf16_units(first), utf16_units(second)
    if len(first) < 2 or len(second) < 2:
        return 0.0
    counts = sorted((Counter(map(operator.add, text, text[1:])) for text in (first, second)), key=len)
    fewer, more = counts
    shared = sum([min(count, more[bigram]) for bigram, count in fewer.items() if bigram in more])
    return 2.0 * shared / (len(first) + len(second) - 2)


def _code_units(text: str) -> npt.NDArray[np.uint16]:
    """The text's UTF-16 code units without its JavaScript whitespace (a lone surrogate is one unit,
    as in JavaScript)."""
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    return units[~_IS_JS_WHITESPACE[units]]


def _compare_code_units(a: npt.NDArray[np.uint16], b: npt.NDArray[np.uint16]) -> float:
    """``compare_two_strings`` of two texts given as code units, whitespace removed."""
    if np.array_equal(a, b):
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    distinct, ids = np.unique(np.concatenate((a, b)), return_inverse=True)
    size = len(distinct)
    if size <= DENSE_MAX_UNITS:  # each bigram as a bin of a size x size table
        ids_a, ids_b = ids[: len(a)], ids[len(a) :]
        bins = size * size
        in_a = np.bincount(ids_a[:-1] * size + ids_a[1:], minlength=bins)
        in_b = np.bincount(ids_b[:-1] * size + ids_b[1:], minlength=bins)
        shared = int(np.minimum(in_a, in_b).sum())
    else:  # each bigram as one 32-bit number, counted by sorting
        codes_a, codes_b = a.astype(np.uint32), b.astype(np.uint32)
        kinds_a, counts_a = np.unique((codes_a[:-1] << 16) | codes_a[1:], return_counts=True)
        kinds_b, counts_b = np.unique((codes_b[:-1] << 16) | codes_b[1:], return_counts=True)
        _, at_a, at_b = np.intersect1d(kinds_a, kinds_b, assume_unique=True, return_indices=True)
        shared = int(np.minimum(counts_a[at_a], counts_b[at_b]).sum())
    return 2.0 * shared / (len(a) + len(b) - 2)


CONTENT_SIMILARITY = ScorerSpec(
    name="content-similarity",
    former_id="content-similarity-scorer",
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

    return CONTENT_SIMILARITY.create_scorer().preprocess(preprocess).generate_score(generate_score)
