"""Noise sensitivity (LLM judge): how much distracting input changed the agent's answer.

A port of Mastra's ``createNoiseSensitivityScorerLLM``, for CI and offline evals: the run is the
agent's answer to a *noisy* query; the options give the clean answer (``baseline_response``) and
the noisy query. The judge rates five dimensions with an impact level and gives a robustness
score; the score is ``max(0, s - penalty)`` where ``s`` is the judge's robustness score, replaced
by the mean impact weight when that is lower and differs by more than ``discrepancy_threshold``,
and ``penalty = min(major issues x major_issue_per_item, max_major_issue_penalty)``; rounded to
two decimals. The prompts are ``prompts/noise_sensitivity/*.txt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import (
    MastraOptions,
    answer_text,
    round_to_two_decimals,
    user_text,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

ImpactLevel = Literal["none", "minimal", "moderate", "significant", "severe"]


class ImpactWeights(MastraOptions):
    none: float = 1.0
    minimal: float = 0.85
    moderate: float = 0.6
    significant: float = 0.3
    severe: float = 0.1


class NoisePenalties(MastraOptions):
    major_issue_per_item: float = 0.1
    max_major_issue_penalty: float = 0.3


class NoiseScoring(MastraOptions):
    """Mastra's ``options.scoring``; every field has Mastra's default."""

    impact_weights: ImpactWeights = ImpactWeights()
    penalties: NoisePenalties = NoisePenalties()
    discrepancy_threshold: float = 0.2


class DimensionImpact(BaseModel):
    dimension: str
    impactLevel: ImpactLevel  # the judge's JSON keys, as in Mastra's schema
    specificChanges: str
    noiseInfluence: str


class NoiseAnalysis(BaseModel):
    dimensions: list[DimensionImpact]
    overallAssessment: str
    majorIssues: list[str] = []
    robustnessScore: Annotated[float, Field(ge=0.0, le=1.0, strict=True)]


NOISE_SENSITIVITY = JudgeTemplate(
    ScorerSpec(
        name="noise-sensitivity",
        former_id="noise-sensitivity-scorer",
        title="Noise Sensitivity (LLM)",
        description=(
            "Evaluates how robust an agent is when exposed to irrelevant, distracting, or misleading "
            "information"
        ),
        example={
            "baseline_response": "Paris is the capital of France.",
            "noisy_query": "What is the capital of France, the country of cheese?",
        },
    ),
    __package__,
    "noise_sensitivity",
    analyze=Ask("Analyze the impact of noise on agent response quality", NoiseAnalysis),
    reason=Ask("Generate human-readable explanation of noise sensitivity evaluation"),
)


def noise_score(analysis: NoiseAnalysis, scoring: NoiseScoring) -> float:
    """Mastra's formula (see the module docstring), rounded to two decimals."""
    final = max(0.0, min(1.0, analysis.robustnessScore))
    if analysis.dimensions:
        weights = scoring.impact_weights
        total = 0.0
        for dimension in analysis.dimensions:  # summed in order, as Mastra's reduce does
            total += getattr(weights, dimension.impactLevel)
        calculated = total / len(analysis.dimensions)
        # Conservative: only when the judge's score and the impact levels disagree, take the lower.
        if abs(final - calculated) > scoring.discrepancy_threshold:
            final = min(final, calculated)
    penalties = scoring.penalties
    penalty = min(
        len(analysis.majorIssues) * penalties.major_issue_per_item, penalties.max_major_issue_penalty
    )
    return round_to_two_decimals(max(0.0, final - penalty))


def assessment_text(analysis: NoiseAnalysis) -> str:
    """The judge's own findings, as the reason prompt shows them (they describe trace content)."""
    issues = (
        NOISE_SENSITIVITY.prompt("major_issues").render(
            issues="\n".join(f"- {issue}" for issue in analysis.majorIssues)
        )
        if analysis.majorIssues
        else ""
    )
    return NOISE_SENSITIVITY.prompt("assessment").render(
        impacts=", ".join(f"{d.dimension}: {d.impactLevel} impact" for d in analysis.dimensions),
        major_issues=issues,
        overall_assessment=analysis.overallAssessment,
    )


@register(NOISE_SENSITIVITY.spec)
def create_noise_sensitivity_scorer(
    judge: Judge,
    baseline_response: str,
    noisy_query: str,
    noise_type: str | None = None,
    scoring: NoiseScoring | Mapping[str, Any] | None = None,
) -> Scorer:
    """Mastra's ``noise-sensitivity-scorer`` judged by ``judge``; the run answers ``noisy_query``."""
    if not baseline_response or not noisy_query:
        raise ValueError("Both baselineResponse and noisyQuery are required for Noise Sensitivity scoring")
    settings = NoiseScoring.model_validate(scoring or {})
    noise_type_line = (
        NOISE_SENSITIVITY.prompt("noise_type").render(noise_type=noise_type) if noise_type else ""
    )

    def analyze(ctx: StepContext) -> dict[str, str]:
        original_query, noisy_response = user_text(ctx.run), answer_text(ctx.run)
        if not original_query or not noisy_response:
            raise ValueError("Both original query and noisy response are required for evaluation")
        return {
            "user_query": delimit("original user query", original_query),
            "baseline_response": delimit("baseline agent response", baseline_response),
            "noisy_query": delimit("noisy user query", noisy_query),
            "noisy_response": delimit("noisy agent response", noisy_response),
            "noise_type_line": noise_type_line,
        }

    def reason(ctx: StepContext) -> dict[str, str]:
        return {
            "user_query": delimit("original query", user_text(ctx.run)),
            "assessment": delimit("assessment", assessment_text(ctx.analyzed(NoiseAnalysis))),
        }

    return NOISE_SENSITIVITY.scorer(
        judge,
        needs=("input", "output"),
        analyze=analyze,
        score=lambda ctx: noise_score(ctx.analyzed(NoiseAnalysis), settings),
        reason=reason,
    )
