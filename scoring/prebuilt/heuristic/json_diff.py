"""JSON diff: how alike the output's JSON and the ground truth are, as autoevals' ``JSONDiff`` scores.

VoltAgent's ``scorers.jsonDiff`` wraps it. Reads the output text and ``run.ground_truth``; text that
holds a JSON object or array is parsed first (other text stays a string).
"""

from __future__ import annotations

import json
import re

from tracescore.scoring.framework.message_text import output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.ground_truth import expected_value
from tracescore.scoring.prebuilt.heuristic.autoevals_heuristics import levenshtein_similarity, numeric_diff
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

# Only text that opens with { or [ after JSON's own whitespace can parse to an object or an array.
_MAY_HOLD_CONTAINER = re.compile(r"[ \t\n\r]*[{\[]")
_CONTAINER_OPENERS = ("{", "[")
_JSON_WHITESPACE = (" ", "\t", "\n", "\r")
# The leaf types compared as numbers (bools count, as in Python).
_NUMBER_TYPES = frozenset({int, float, bool})


def _may_hold_container(text: str) -> bool:
    """Whether ``text`` may parse to an object or array: its first character decides, but for
    leading whitespace (the regular expression's match cost more than most leaves' comparison)."""
    first = text[:1]
    if first in _CONTAINER_OPENERS:
        return True
    return first in _JSON_WHITESPACE and _MAY_HOLD_CONTAINER.match(text) is not None


def _parse_container(value: object) -> object:
    """JSON text holding an object or array becomes that value (autoevals' ``valid_json`` check)."""
    # Every string leaf is tried: skipping those that cannot hold a container spares a failed
    # json.loads (the JSONDecodeError alone costs more than the leaf's comparison).
    if isinstance(value, str) and _may_hold_container(value):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(parsed, dict | list):
            return parsed
    return value


def _sorted_compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def json_diff(output: object, expected: object) -> float:
    """Objects: the mean score over the union of keys (a missing key scores 0); arrays: summed
    pairwise scores over the longer length; strings: Levenshtein similarity; numbers (bools count,
    as in Python): numeric diff; anything else: Levenshtein of the sorted, compact JSON.

    >>> json_diff('{"name": "John", "age": 30}', {"name": "Jon", "age": 30, "extra": 1})
    0.5833333333333334
    """
    if type(output) in _NUMBER_TYPES and type(expected) in _NUMBER_TYPES:  # most leaves: no parsing
        return numeric_diff(output, expected)  # type: ignore[arg-type]
    output, expected = _parse_container(output), _parse_container(expected)
    if isinstance(output, dict) and isinstance(expected, dict):
        if not output and not expected:
            return 1
        keys = dict.fromkeys([*output, *expected])  # ordered union: the sum does not vary by run
        return sum(json_diff(output.get(key), expected.get(key)) for key in keys) / len(keys)
    if isinstance(output, list) and isinstance(expected, list):
        if not output and not expected:
            return 1
        pairs = sum(json_diff(left, right) for left, right in zip(output, expected, strict=False))
        return pairs / max(len(output), len(expected))
    if isinstance(output, str) and isinstance(expected, str):
        return levenshtein_similarity(output, expected)
    if isinstance(output, int | float) and isinstance(expected, int | float):
        return numeric_diff(output, expected)
    if output is None and expected is None:
        return 1
    if output is None or expected is None:
        return 0
    return levenshtein_similarity(_sorted_compact_json(output), _sorted_compact_json(expected))


JSON_DIFF = ScorerSpec(
    name="json-diff",
    former_id="jsonDiff",
    title="JSON Diff",
    description="Structural similarity of the output JSON and the ground truth",
)


@register(JSON_DIFF)
def create_json_diff_scorer() -> Scorer:
    """Structural similarity of the output's JSON and the ground truth (1 identical).

    Example::

        run = {"output": [{"role": "assistant", "content": '{"name": "John", "age": 30}'}],
               "ground_truth": {"name": "John", "age": 30}}
        (await create_json_diff_scorer().run(run)).score  # 1.0
    """

    def score(ctx: StepContext) -> float:
        return json_diff(output_text(ctx.run), expected_value(ctx, "json-diff"))

    return JSON_DIFF.create_scorer(needs={"output", "ground_truth"}).generate_score(score)
