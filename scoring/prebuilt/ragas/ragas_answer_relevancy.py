"""RAGAS answer relevancy (VoltAgent's ``answerRelevancy``), by embeddings or by word overlap.

The judge, ``strictness`` times, writes the question the answer would answer and flags whether the
answer is noncommittal ("I don't know"). Then, with ``similarity``:

- ``"embedding"`` (the default, autoevals' formula): each generated question and the run's input
  question are embedded (``litellm.aembedding``) and compared by cosine similarity, rescaled as
  autoevals' ``EmbeddingSimilarity``: max((cos - 0.7) / 0.3, 0). Score = mean over the questions,
  or 0 when any question was flagged noncommittal (autoevals' rule).
- ``"word_overlap"`` (VoltAgent's TypeScript formula): a question whose lower-cased word set has a
  Jaccard overlap with the input's above 0.5 counts 1, above 0.3 ``uncertainty_weight`` (0.3), else
  0; score = mean over the questions, or 0 when the share of noncommittal questions exceeds
  ``noncommittal_threshold`` (0.5). No embedding call.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Literal

from pydantic import BaseModel

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, user_text
from tracescore.scoring.prebuilt.judge_templates import JudgeTemplate
from tracescore.scoring.prebuilt.ragas.ragas_answer_correctness import DEFAULT_EMBEDDING_MODEL, scaled_cosine
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class GeneratedQuestion(BaseModel):
    question: str
    noncommittal: Literal[0, 1]


class QuestionSimilarity(BaseModel):
    question: str
    noncommittal: bool
    similarity: float


Similarity = Literal["embedding", "word_overlap"]


def relevancy_score(results: list[QuestionSimilarity]) -> float:
    """autoevals: the mean similarity, or 0 when any question was noncommittal."""
    if not results or any(r.noncommittal for r in results):
        return 0.0
    return sum(r.similarity for r in results) / len(results)


def word_overlap(text1: str, text2: str) -> float:
    """VoltAgent's similarity: Jaccard overlap of the whitespace-split word sets (as JS ``split``)."""
    words1, words2 = set(re.split(r"\s+", text1)), set(re.split(r"\s+", text2))
    union = words1 | words2
    return len(words1 & words2) / len(union) if union else 0.0


def word_overlap_score(
    questions: list[GeneratedQuestion],
    user_input: str,
    uncertainty_weight: float,
    noncommittal_threshold: float,
) -> float:
    """VoltAgent's score: 0 above the noncommittal share, else 1 / ``uncertainty_weight`` / 0 per question."""
    if not questions:
        return 0.0
    if sum(q.noncommittal for q in questions) / len(questions) > noncommittal_threshold:
        return 0.0
    target = user_input.lower()
    total = 0.0
    for question in questions:
        overlap = word_overlap(question.question.lower(), target)
        if overlap > 0.5:
            total += 1
        elif overlap > 0.3:
            total += uncertainty_weight
    return total / len(questions)


RAGAS_ANSWER_RELEVANCY = JudgeTemplate(
    ScorerSpec(
        name="ragas-answer-relevancy",
        former_id="answerRelevancy",
        title="Answer Relevancy",
        description="RAGAS answer relevancy: questions generated from the answer vs the input",
    ),
    __package__,
    "answer_relevancy",  # the judge's calls are the steps' own code: it asks ``strictness`` times
)


@register(RAGAS_ANSWER_RELEVANCY.spec)
def create_ragas_answer_relevancy_scorer(
    judge: Judge,
    strictness: int = 3,
    temperature: float = 0.5,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    similarity: Similarity = "embedding",
    uncertainty_weight: float = 0.3,
    noncommittal_threshold: float = 0.5,
) -> Scorer:
    """Answer relevancy from ``strictness`` generated questions (see the module doc for ``similarity``)."""
    if strictness < 1:
        raise ValueError("strictness must be >= 1")
    if similarity not in ("embedding", "word_overlap"):
        raise ValueError(f"similarity must be 'embedding' or 'word_overlap', not {similarity!r}")
    if not 0 <= uncertainty_weight <= 1 or not 0 <= noncommittal_threshold <= 1:
        raise ValueError("uncertainty_weight and noncommittal_threshold must lie in [0, 1]")
    # autoevals samples the questions at temperature 0.5 so that they differ.
    generator = RAGAS_ANSWER_RELEVANCY.instructed(replace(judge, temperature=temperature))

    async def preprocess(ctx: StepContext) -> list[GeneratedQuestion]:
        prompt = RAGAS_ANSWER_RELEVANCY.prompt("generate_question").render(
            answer=delimit("answer", answer_text(ctx.run)),
            context=delimit("context", "\n".join(ctx.run.context)),
        )
        # Sequential, as VoltAgent: one question per call.
        return [(await generator.structured(prompt, GeneratedQuestion)).value for _ in range(strictness)]

    async def analyze(ctx: StepContext) -> list[QuestionSimilarity]:
        questions: list[GeneratedQuestion] = ctx.preprocessed(list)
        if similarity == "word_overlap":
            target = (user_text(ctx.run)).lower()
            return [
                QuestionSimilarity(
                    question=q.question,
                    noncommittal=bool(q.noncommittal),
                    similarity=word_overlap(q.question.lower(), target),
                )
                for q in questions
            ]
        if any(q.noncommittal for q in questions):  # scores 0 whatever the similarity: no embeddings
            return [
                QuestionSimilarity(question=q.question, noncommittal=bool(q.noncommittal), similarity=0)
                for q in questions
            ]
        vectors = await judge.embed(
            [user_text(ctx.run), *(q.question for q in questions)],
            embedding_model,
        )
        return [
            QuestionSimilarity(
                question=q.question, noncommittal=False, similarity=scaled_cosine(v, vectors[0])
            )
            for q, v in zip(questions, vectors[1:], strict=True)
        ]

    def score(ctx: StepContext) -> float:
        if similarity == "word_overlap":
            user_input = user_text(ctx.run)
            questions: list[GeneratedQuestion] = ctx.preprocessed(list)
            return word_overlap_score(questions, user_input, uncertainty_weight, noncommittal_threshold)
        return relevancy_score(ctx.analyzed(list))

    def noncommittal(results: list[QuestionSimilarity]) -> bool:
        flagged = sum(r.noncommittal for r in results)
        if similarity == "word_overlap":
            return bool(results) and flagged / len(results) > noncommittal_threshold
        return flagged > 0

    def reason(ctx: StepContext) -> str:
        results: list[QuestionSimilarity] = ctx.analyzed(list)
        if noncommittal(results):
            return "Answer is noncommittal"
        return f"Generated {len(results)} questions with relevancy score {ctx.score:.2f}"

    return (
        RAGAS_ANSWER_RELEVANCY.scorer(generator, needs={"input", "output"}, score=score)
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_reason(reason)
    )
