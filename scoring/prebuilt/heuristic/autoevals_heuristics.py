"""Heuristic scorers comparing the output with the run's ground truth, as autoevals computes them.

VoltAgent's ``scorers.exactMatch``, ``levenshtein`` and ``numericDiff`` wrap braintrust's autoevals;
these give the numbers of the autoevals Python package (``ExactMatch``, ``Levenshtein``,
``NumericDiff``). Each reads the run's output text (``scoring.framework.message_text.output_text``) as
``output`` and
``run.ground_truth`` as ``expected``; a run without ground truth cannot be scored and raises
(``MissingGroundTruth``), which the executor records as a failed score.
"""

from __future__ import annotations

import json
import math

from rapidfuzz.distance import Levenshtein as _Levenshtein

from tracescore.scoring.framework.message_text import output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.ground_truth import expected_value
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


def normalize_value(value: object, maybe_object: bool) -> str:
    """autoevals' ``normalize_value``: dicts and lists as JSON; JSON text re-serialised when either
    side is an object, so key spacing does not matter; anything else as ``str``."""
    if isinstance(value, dict | list):
        return json.dumps(value)
    if maybe_object and isinstance(value, str):
        try:
            return json.dumps(json.loads(value))
        except json.JSONDecodeError:
            pass
    return str(value)


def exact_match(output: object, expected: object, ignore_case: bool = False) -> float:
    """1 when the values are equal after normalisation, else 0.

    >>> exact_match('{"a": 1}', {"a": 1}), exact_match("Paris", "paris", ignore_case=True)
    (1, 1)
    """
    maybe_object = isinstance(output, dict | list) or isinstance(expected, dict | list)
    left, right = normalize_value(output, maybe_object), normalize_value(expected, maybe_object)
    if ignore_case:  # VoltAgent's documented option; autoevals itself compares case-sensitively
        left, right = left.lower(), right.lower()
    return 1 if left == right else 0


def levenshtein_similarity(output: object, expected: object) -> float:
    """1 - edit distance / longer length, over code points (autoevals ``Levenshtein``).

    >>> levenshtein_similarity("hello wrld", "hello world")
    0.9090909090909091
    """
    output, expected = str(output), str(expected)
    longest = max(len(output), len(expected))
    return 1 if longest == 0 else 1 - _Levenshtein.distance(output, expected) / longest


def numeric_diff(output: float, expected: float) -> float:
    """1 - |expected - output| / (|expected| + |output|); 1 when both are 0 (autoevals ``NumericDiff``).

    >>> numeric_diff(105, 100)
    0.975609756097561
    """
    if expected == 0 and output == 0:
        return 1
    return 1 - abs(expected - output) / (abs(expected) + abs(output))


def as_number(value: object, what: str) -> float:
    """A number, or text that is one (``" 42.5 "``); anything else is an error, never a guess."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        try:  # not ``contextlib.suppress``: its context manager cost as much as the whole conversion
            number = float(value.strip())
        except ValueError:
            number = None
    if number is not None and math.isfinite(number):
        return number
    raise ValueError(f"the {what} {value!r} is not a number")


EXACT_MATCH = ScorerSpec(
    name="exact-match",
    former_id="exactMatch",
    title="Exact Match",
    description="Exact match of the output with the ground truth",
)


@register(EXACT_MATCH)
def create_exact_match_scorer(ignore_case: bool = False) -> Scorer:
    """1 when the output text equals the ground truth (JSON compared by content), else 0.

    Example::

        run = {"output": [{"role": "assistant", "content": "4"}], "ground_truth": "4"}
        (await create_exact_match_scorer().run(run)).score  # 1.0
    """

    def score(ctx: StepContext) -> float:
        return exact_match(output_text(ctx.run), expected_value(ctx, "exact-match"), ignore_case)

    return EXACT_MATCH.create_scorer(needs={"output", "ground_truth"}).generate_score(score)


LEVENSHTEIN = ScorerSpec(
    name="levenshtein",
    title="Levenshtein",
    description="Levenshtein similarity of the output and the ground truth",
)


@register(LEVENSHTEIN)
def create_levenshtein_scorer() -> Scorer:
    """Normalised edit similarity of the output text and the ground truth (1 identical).

    Example::

        run = {"output": [{"role": "assistant", "content": "algoritm"}], "ground_truth": "algorithm"}
        (await create_levenshtein_scorer().run(run)).score  # 0.888...: one edit in 9 characters
    """

    def score(ctx: StepContext) -> float:
        return levenshtein_similarity(output_text(ctx.run), expected_value(ctx, "levenshtein"))

    return LEVENSHTEIN.create_scorer(needs={"output", "ground_truth"}).generate_score(score)


NUMERIC_DIFF = ScorerSpec(
    name="numeric-diff",
    former_id="numericDiff",
    title="Numeric Diff",
    description="Numeric difference of the output and the ground truth",
)


@register(NUMERIC_DIFF)
def create_numeric_diff_scorer(threshold: float | None = None) -> Scorer:
    """How close the number the output states is to the ground-truth number.

    The output text must be a number (surrounding whitespace allowed), else the score fails.
    Without ``threshold``: autoevals' relative difference score. With it (VoltAgent's option):
    1 when ``|output - expected| <= threshold``, else 0.

    Example::

        run = {"output": [{"role": "assistant", "content": "3.1415"}], "ground_truth": 3.14}
        (await create_numeric_diff_scorer(threshold=0.01).run(run)).score  # 1.0
    """
    if threshold is not None and threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")

    def score(ctx: StepContext) -> float:
        output = as_number(output_text(ctx.run), "output")
        expected = as_number(expected_value(ctx, "numeric-diff"), "ground truth")
        if threshold is not None:
            return 1 if abs(expected - output) <= threshold else 0
        return numeric_diff(output, expected)

    return NUMERIC_DIFF.create_scorer(needs={"output", "ground_truth"}).generate_score(score)
