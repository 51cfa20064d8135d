"""List contains: how well the output's items match the expected items, as autoevals' ``ListContains``.

VoltAgent's ``scorers.listContains`` wraps it. Every output item is compared with every expected
item (Levenshtein similarity); the best one-to-one pairing (linear sum assignment, scipy's, as
autoevals uses) is summed and divided by the longer list's length, or by the expected list's
length with ``allow_extra_entities``.

Fields: the output text is the list when it is a JSON array, else its non-blank lines (stripped);
``run.ground_truth`` is a list, or text holding a JSON array.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from tracescore.scoring.framework.message_text import output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.ground_truth import expected_value
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


def list_contains(
    outputs: Sequence[object], expected: Sequence[object], allow_extra_entities: bool = False
) -> float:
    """The best pairing's summed similarity over the number of items, in [0, 1].

    >>> list_contains(["red", "blue", "green"], ["red", "blue", "yellow"])
    0.6666666666666666
    """
    if not outputs and not expected:
        return 1
    if not outputs or not expected:
        return 0
    # Every pair's Levenshtein similarity in one C call, the same double as levenshtein_similarity's
    # 1 - distance / longer length (float64: cdist's default float32 would round it).
    similarity = cdist(
        [str(item) for item in outputs],
        [str(item) for item in expected],
        scorer=Levenshtein.normalized_similarity,
        dtype=np.float64,
    )
    # Imported here: scipy takes tens of MiB of memory, and most services never run this scorer.
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(-similarity)
    denominator = len(expected) if allow_extra_entities else max(len(outputs), len(expected))
    # Summed left to right in Python, as autoevals does (numpy's pairwise sum rounds differently).
    total = sum(float(value) for value in similarity[rows, cols])
    return min(max(total / denominator, 0.0), 1.0)


def output_items(text: str) -> list[object]:
    """The output as a list: a JSON array as is, else the non-blank lines, stripped."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, list):
        return parsed
    return [line.strip() for line in text.splitlines() if line.strip()]


def expected_items(value: object) -> list[object]:
    """The ground truth as a list: a list, or text holding a JSON array; anything else is an error."""
    if isinstance(value, str):
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(value)
    if not isinstance(value, list):
        raise ValueError(f"list-contains needs a list as ground_truth, got {type(value).__name__}")
    return value


LIST_CONTAINS = ScorerSpec(
    name="list-contains",
    former_id="listContains",
    title="List Contains",
    description="Fuzzy one-to-one overlap of the output items with the expected items",
)


@register(LIST_CONTAINS)
def create_list_contains_scorer(allow_extra_entities: bool = False) -> Scorer:
    """Scores how many of the expected items the output lists (fuzzy, one-to-one).

    Example::

        run = {"output": [{"role": "assistant", "content": '["red", "blue", "yellow", "green"]'}],
               "ground_truth": ["red", "blue", "yellow"]}
        (await create_list_contains_scorer().run(run)).score  # 0.75: 3 exact of 4 items
        # allow_extra_entities=True: 1.0 (the extra "green" is not penalised)
    """

    def score(ctx: StepContext) -> float:
        expected = expected_items(expected_value(ctx, "list-contains"))
        return list_contains(output_items(output_text(ctx.run)), expected, allow_extra_entities)

    return LIST_CONTAINS.create_scorer(needs={"output", "ground_truth"}).generate_score(score)
