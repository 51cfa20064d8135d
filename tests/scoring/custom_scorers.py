"""A team's own scorers, as a user writes them outside tracescore: rules name them ``module:factory``.

``tests/e2e/test_custom_scorers.py`` runs them in ``tracescore serve``.
"""

from __future__ import annotations

from tracescore.scoring import Scorer, StepContext, create_scorer
from tracescore.scoring.framework.message_text import output_text


def create_answer_length_scorer(target_words: int, version: str = "2.1.0") -> Scorer:
    """Words in the answer / ``target_words`` (at most 1); labelled ``short`` below half the target."""
    if target_words <= 0:
        raise ValueError("target_words must be positive")

    def words(ctx: StepContext) -> dict[str, int]:
        return {"words": len(output_text(ctx.run).split())}

    return (
        create_scorer(
            id="answer-length",
            description="How close the answer comes to the wanted length",
            needs={"output"},
            label=lambda ctx: "short" if (ctx.score or 0) < 0.5 else "long enough",
            version=version,
        )
        .preprocess(words)
        .generate_score(lambda ctx: min(1.0, ctx.preprocessed(dict)["words"] / target_words))
    )


def create_overconfident_scorer() -> Scorer:
    """A buggy scorer: 1.7 on a 0-1 scale, which must never be stored."""
    return create_scorer(id="overconfident", description="Always 1.7", needs={"output"}).generate_score(
        lambda ctx: 1.7
    )


CUSTOM_CONSTANT = 42  # not a factory: naming it in a rule is an error


def create_nothing() -> str:
    """A function that is not a scorer factory: naming it in a rule is an error."""
    return "not a scorer"
