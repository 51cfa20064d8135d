"""RAGAS answer correctness (VoltAgent's ``createAnswerCorrectnessScorer``, after autoevals).

The judge sorts the statements of the answer and of the run's ``ground_truth`` into TP (in both),
FP (only in the answer) and FN (only in the ground truth). Factuality is the statement F1,
TP / (TP + 0.5 x (FP + FN)) -- 0 when there is no TP (VoltAgent; autoevals divides by zero
when the judge finds no statement at all).

VoltAgent scores F1 x ``factuality_weight`` (default 1). Setting ``answer_similarity_weight`` > 0
adds autoevals' similarity term: the answer and the ground truth are embedded
(``litellm.aembedding``), their cosine rescaled as autoevals' ``EmbeddingSimilarity`` does,
max((cos - 0.7) / 0.3, 0), and the score is autoevals' weighted mean
(fw x F1 + sw x similarity) / (fw + sw).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, user_text
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

# autoevals' EmbeddingSimilarity default: cosine similarities below this count as 0.
EXPECTED_MIN_SIMILARITY = 0.7
# The embedding model of the RAGAS scorers that embed (answer correctness, relevancy, similarity).
DEFAULT_EMBEDDING_MODEL = "openai/text-embedding-3-small"


class Classification(BaseModel):
    """The judge's statement classification (autoevals' ``classify_statements`` arguments)."""

    TP: list[str] = Field(description="statements in both the answer and the ground truth")
    FP: list[str] = Field(description="statements in the answer but not in the ground truth")
    FN: list[str] = Field(description="statements in the ground truth omitted from the answer")


RAGAS_ANSWER_CORRECTNESS = JudgeTemplate(
    ScorerSpec(
        name="ragas-answer-correctness",
        former_id="answerCorrectness",
        title="Answer Correctness",
        description="RAGAS answer correctness: statement F1 against the ground truth, plus similarity",
    ),
    __package__,
    "answer_correctness",
    extract=Ask(
        "Classify answer and ground-truth statements as TP, FP or FN",
        Classification,
        prompt="classify_statements",
    ),
)


def f1_score(classification: Classification) -> float:
    """Statement F1 (2PR / (P + R) = autoevals' ``compute_f1_score``); 0 without a true positive."""
    tp, fp, fn = len(classification.TP), len(classification.FP), len(classification.FN)
    if tp == 0:
        return 0.0
    return tp / (tp + 0.5 * (fp + fn))


def scaled_cosine(a: list[float], b: list[float], expected_min: float = EXPECTED_MIN_SIMILARITY) -> float:
    """Cosine similarity of two vectors rescaled so that ``expected_min`` and below are 0."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norms = float(np.linalg.norm(va) * np.linalg.norm(vb))
    cosine = float(va @ vb) / norms if norms else 0.0
    return max((cosine - expected_min) / (1 - expected_min), 0.0)


def combined_score(
    factuality: float, similarity: float | None, *, factuality_weight: float, answer_similarity_weight: float
) -> float:
    if answer_similarity_weight == 0:
        return factuality * factuality_weight  # VoltAgent's score
    sim = 0.0 if similarity is None else similarity
    return (factuality_weight * factuality + answer_similarity_weight * sim) / (
        factuality_weight + answer_similarity_weight
    )


def ground_truth_text(ctx: StepContext) -> str:
    value = ctx.run.ground_truth
    if value is None or value == "":
        # autoevals' check_required: the scorer cannot run without an expected answer.
        raise ValueError("answer correctness needs the run's ground_truth")
    return value if isinstance(value, str) else str(value)


@register(RAGAS_ANSWER_CORRECTNESS.spec)
def create_ragas_answer_correctness_scorer(
    judge: Judge,
    factuality_weight: float = 1.0,
    answer_similarity_weight: float = 0.0,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
) -> Scorer:
    """VoltAgent's answer correctness; embeddings (if weighted) use the judge's endpoint and key."""
    if factuality_weight < 0 or answer_similarity_weight < 0:
        raise ValueError("Weights must be non-negative")
    if factuality_weight == 0 and answer_similarity_weight == 0:
        raise ValueError("At least one weight must be nonzero")

    def classify(ctx: StepContext) -> dict[str, str]:
        return {
            "question": delimit("question", user_text(ctx.run)),
            "answer": delimit("answer", answer_text(ctx.run)),
            "ground_truth": delimit("ground truth", ground_truth_text(ctx)),
        }

    async def analyze(ctx: StepContext) -> dict[str, float | None]:
        factuality = f1_score(ctx.preprocessed(Classification))
        if answer_similarity_weight == 0:
            return {"factuality": factuality, "similarity": None}
        vectors = await judge.embed([answer_text(ctx.run), ground_truth_text(ctx)], embedding_model)
        return {"factuality": factuality, "similarity": scaled_cosine(vectors[0], vectors[1])}

    def generate_score(ctx: StepContext) -> float:
        parts = ctx.analyzed(dict)
        return combined_score(
            parts["factuality"],
            parts["similarity"],
            factuality_weight=factuality_weight,
            answer_similarity_weight=answer_similarity_weight,
        )

    return RAGAS_ANSWER_CORRECTNESS.scorer(
        judge, needs={"input", "output", "ground_truth"}, extract=classify, score=generate_score
    ).analyze(analyze)
