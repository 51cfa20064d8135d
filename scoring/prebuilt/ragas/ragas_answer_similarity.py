"""RAGAS answer similarity (VoltAgent's ``createAnswerSimilarityScorer``): embeddings, no chat call.

The answer (the run's last assistant text) and the run's ``ground_truth`` (as it is when a string,
else its ``JSON.stringify`` text), each preceded by ``embedding_prefix``, are embedded in one
``litellm.aembedding`` call on the judge's endpoint. Their cosine similarity (``raw_score``; 0 when
either vector is all zeros, as the AI SDK's ``cosineSimilarity``) is rescaled so that
``embedding_expected_min`` (0.7) and below score 0 and 1 scores 1:
clamp((raw - min) / (1 - min), 0, 1), with ``min`` first clamped to [-1, 1]; a ``min`` of 1 keeps
the raw similarity, clamped to [0, 1]. A non-finite similarity scores 0.

VoltAgent's per-run ``params`` overrides of the minimum and the prefix are scorer options here,
and a NaN or infinite minimum is refused when the scorer is built (VoltAgent would score NaN).
"""

from __future__ import annotations

import math

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, metered
from tracescore.scoring.prebuilt.judge_helpers import answer_text, normalize_text
from tracescore.scoring.prebuilt.ragas.ragas_answer_correctness import DEFAULT_EMBEDDING_MODEL
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

DEFAULT_EXPECTED_MIN = 0.7


def cosine_similarity(a: list[float], b: list[float]) -> float:
    """The AI SDK's ``cosineSimilarity``: 0 for an empty or all-zero vector; unequal lengths raise.

    >>> cosine_similarity([3.0, 4.0], [4.0, 3.0])
    0.96
    """
    if len(a) != len(b):
        raise ValueError(f"embedding vectors must have the same length, got {len(a)} and {len(b)}")
    norm_a, norm_b = sum(x * x for x in a), sum(y * y for y in b)
    if norm_a == 0 or norm_b == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.sqrt(norm_a) * math.sqrt(norm_b))


def scale_embedding_score(score: float, expected_min: float) -> float:
    """VoltAgent's ``scaleEmbeddingScore``: similarity at or below ``expected_min`` is 0, 1 is 1.

    >>> scale_embedding_score(0.85, 0.7)
    0.5
    """
    if not math.isfinite(score):
        return 0.0
    floor = min(max(expected_min, -1.0), 1.0)
    if 1 - floor <= 0:
        return max(min(score, 1.0), 0.0)
    return min(max((score - floor) / (1 - floor), 0.0), 1.0)


RAGAS_ANSWER_SIMILARITY = ScorerSpec(
    name="ragas-answer-similarity",
    former_id="answerSimilarity",
    title="Answer Similarity",
    description="RAGAS answer similarity: embedding cosine of the answer and the ground truth",
)


@register(RAGAS_ANSWER_SIMILARITY)
def create_ragas_answer_similarity_scorer(
    judge: Judge,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    embedding_expected_min: float = DEFAULT_EXPECTED_MIN,
    embedding_prefix: str = "",
) -> Scorer:
    """VoltAgent's answer similarity; ``judge`` gives the embedding endpoint, key, timeout and retries."""
    if not embedding_model:
        raise ValueError("embedding_model must name an embedding model")
    if not math.isfinite(embedding_expected_min):
        raise ValueError(f"embedding_expected_min must be a finite number, not {embedding_expected_min!r}")

    async def analyze(ctx: StepContext) -> dict[str, float]:
        query = embedding_prefix + answer_text(ctx.run)
        reference = embedding_prefix + normalize_text(ctx.run.ground_truth)
        if not query.strip():  # VoltAgent's embedding step refuses an empty query
            raise ValueError("Embedding similarity requires a non-empty query value")
        with metered() as usage:  # VoltAgent reports the embedding call's tokens as ``usage``
            query_vector, reference_vector = await judge.embed([query, reference], embedding_model)
        raw = cosine_similarity(query_vector, reference_vector)
        return {
            "score": scale_embedding_score(raw, embedding_expected_min),
            "raw_score": raw,
            "usage": usage.input_tokens,
        }

    def generate_score(ctx: StepContext) -> float:
        return float(ctx.analyzed(dict)["score"])

    return (
        RAGAS_ANSWER_SIMILARITY.create_scorer(needs={"output", "ground_truth"}, judge=judge)
        .analyze(analyze)
        .generate_score(generate_score)
    )
