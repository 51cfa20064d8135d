"""The scorers comparing the output with the ground truth need one, and say so when a run has none."""

from __future__ import annotations

import pytest

from tests.support.runs import agent_run
from tracescore.scoring import ScorerError
from tracescore.scoring.prebuilt.registry import build_scorer


@pytest.mark.parametrize("name", ["exact-match", "levenshtein", "json-diff", "list-contains", "numeric-diff"])
async def test_scorers_without_ground_truth_fail_clearly(name: str) -> None:
    scorer = build_scorer(name)
    # The executor skips a run without ground truth; run directly, the scorer says what is missing.
    assert scorer.needs == {"output", "ground_truth"}
    with pytest.raises(ScorerError, match="compares the output with ground_truth, and the run has none"):
        await scorer.run(agent_run(None, "42"))
