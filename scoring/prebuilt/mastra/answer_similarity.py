"""Answer similarity (Mastra's ``createAnswerSimilarityScorer``): how close the answer is to the ground truth.

The judge splits the answer and the run's ``ground_truth`` into semantic units, then matches each
ground-truth unit (``exact``, ``semantic``, ``partial`` or ``missing``) and lists contradictions and
extra output units. Score: exact = 1 + exact_match_bonus, semantic = semantic_threshold, partial =
semantic_threshold / 2, missing = -missing_penalty, summed and divided by units x (1 +
exact_match_bonus); minus contradiction_penalty per contradiction and extra_info_penalty per extra
unit (at most 0.2); clamped to [0, 1], times ``scale``, rounded to two decimals. No ground-truth
units scores 0.

A run without ground truth (JavaScript-falsy: missing, ``""``, ``0``, ``false``) fails the scorer
when ``require_ground_truth`` (the default), else scores 0 -- the judge is still asked, as in Mastra.
The prompts are ``prompts/answer_similarity/*.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import (
    answer_text,
    js_pretty_json,
    js_text,
    js_truthy,
    round_to_two_decimals,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate, PromptFile
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

EXTRA_INFO_PENALTY_CAP = 0.2


class _Camel(BaseModel):
    # The judge answers in Mastra's camelCase keys; Python reads them in snake_case.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class SemanticUnits(_Camel):
    output_units: list[str]
    ground_truth_units: list[str]


class UnitMatch(_Camel):
    ground_truth_unit: str
    output_unit: str | None
    match_type: Literal["exact", "semantic", "partial", "missing"]
    explanation: str


class Contradiction(_Camel):
    output_unit: str
    ground_truth_unit: str
    explanation: str


class SimilarityAnalysis(_Camel):
    matches: list[UnitMatch]
    extra_in_output: list[str]
    contradictions: list[Contradiction]


ANSWER_SIMILARITY = JudgeTemplate(
    ScorerSpec(
        name="answer-similarity",
        former_id="answer-similarity-scorer",
        title="Answer Similarity Scorer",
        description="Evaluates how similar an agent output is to a ground truth answer for CI/CD testing",
    ),
    __package__,
    "answer_similarity",
    extract=Ask("Extract semantic units from output and ground truth", SemanticUnits),
    analyze=Ask("Compare semantic units between output and ground truth", SimilarityAnalysis),
    reason=Ask("Generate explanation of similarity score"),
)


@dataclass(frozen=True)
class SimilarityWeights:
    """What each kind of match counts for, and what contradictions and extra units cost."""

    semantic_threshold: float
    exact_match_bonus: float
    missing_penalty: float
    contradiction_penalty: float
    extra_info_penalty: float


def similarity_score(analysis: SimilarityAnalysis, weights: SimilarityWeights, scale: float) -> float:
    """Mastra's answer-similarity formula over the judge's analysis (see the module docstring)."""
    if not analysis.matches:
        return 0
    credit = {
        "exact": 1.0 + weights.exact_match_bonus,
        "semantic": weights.semantic_threshold,
        "partial": weights.semantic_threshold * 0.5,
        "missing": -weights.missing_penalty,
    }
    score = sum(credit[match.match_type] for match in analysis.matches)
    score /= len(analysis.matches) * (1.0 + weights.exact_match_bonus)
    score -= len(analysis.contradictions) * weights.contradiction_penalty
    score -= min(len(analysis.extra_in_output) * weights.extra_info_penalty, EXTRA_INFO_PENALTY_CAP)
    return round_to_two_decimals(max(0.0, min(1.0, score)) * scale)


@register(ANSWER_SIMILARITY.spec)
def create_answer_similarity_scorer(
    judge: Judge,
    require_ground_truth: bool = True,
    semantic_threshold: float = 0.8,
    exact_match_bonus: float = 0.2,
    missing_penalty: float = 0.15,
    contradiction_penalty: float = 1.0,
    extra_info_penalty: float = 0.05,
    scale: float = 1,
) -> Scorer:
    """Mastra's answer similarity scorer: compares the answer with the run's ``ground_truth``."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    if exact_match_bonus <= -1:
        raise ValueError("exact_match_bonus must be > -1")
    weights = SimilarityWeights(
        semantic_threshold, exact_match_bonus, missing_penalty, contradiction_penalty, extra_info_penalty
    )

    def texts(output: str, ground_truth: str) -> dict[str, str]:
        return {
            "output": delimit("agent output", output),
            "ground_truth": delimit("ground truth", ground_truth),
        }

    def extract(ctx: StepContext) -> dict[str, str]:
        if not js_truthy(ctx.run.ground_truth):
            if require_ground_truth:
                raise ValueError("Answer Similarity Scorer requires ground truth to be provided")
            return texts("", "")
        return texts(answer_text(ctx.run), js_text(ctx.run.ground_truth))

    def analyze(ctx: StepContext) -> dict[str, str]:
        units = ctx.preprocessed(SemanticUnits)
        return {
            "output_units": delimit("output units", js_pretty_json(units.output_units)),
            "ground_truth_units": delimit("ground truth units", js_pretty_json(units.ground_truth_units)),
        }

    def generate_score(ctx: StepContext) -> float:
        if not js_truthy(ctx.run.ground_truth):
            return 0
        return similarity_score(ctx.analyzed(SimilarityAnalysis), weights, scale)

    def reason(ctx: StepContext) -> dict[str, str] | PromptFile:
        if not js_truthy(ctx.run.ground_truth):
            return PromptFile("no_ground_truth_reason")  # Mastra sends this fixed text to the judge
        analysis = ctx.analyzed(SimilarityAnalysis).model_dump(by_alias=True)
        return {
            **texts(answer_text(ctx.run), js_text(ctx.run.ground_truth)),
            "analysis": delimit("analysis", js_pretty_json(analysis)),
        }

    return ANSWER_SIMILARITY.scorer(
        judge,
        scale=scale,
        needs={"output", "ground_truth"} if require_ground_truth else {"output"},
        extract=extract,
        analyze=analyze,
        score=generate_score,
        reason=reason,
    )
