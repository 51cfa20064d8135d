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
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

ImpactLevel = Literal["none", "minimal", "moderate", "significant", "severe"]

NOISE_SENSITIVITY_INSTRUCTIONS = load_prompt(__package__, "noise_sensitivity/instructions").render()
ANALYZE_PROMPT = load_prompt(__package__, "noise_sensitivity/analyze")
NOISE_TYPE_PROMPT = load_prompt(__package__, "noise_sensitivity/noise_type")
REASON_PROMPT = load_prompt(__package__, "noise_sensitivity/reason")
ASSESSMENT_PROMPT = load_prompt(__package__, "noise_sensitivity/assessment")
MAJOR_ISSUES_PROMPT = load_prompt(__package__, "noise_sensitivity/major_issues")


class _Options(BaseModel):
    # Mastra's nested option names (impactWeights, majorIssuePerItem, ...) or snake_case.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class ImpactWeights(_Options):
    none: float = 1.0
    minimal: float = 0.85
    moderate: float = 0.6
    significant: float = 0.3
    severe: float = 0.1


class Penalties(_Options):
    major_issue_per_item: float = 0.1
    max_major_issue_penalty: float = 0.3


class NoiseScoring(_Options):
    """Mastra's ``options.scoring``; every field has Mastra's default."""

    impact_weights: ImpactWeights = ImpactWeights()
    penalties: Penalties = Penalties()
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


def create_analyze_prompt(
    user_query: str, baseline_response: str, noisy_query: str, noisy_response: str, noise_type: str | None
) -> str:
    return ANALYZE_PROMPT.render(
        user_query=delimit("original user query", user_query),
        baseline_response=delimit("baseline agent response", baseline_response),
        noisy_query=delimit("noisy user query", noisy_query),
        noisy_response=delimit("noisy agent response", noisy_response),
        noise_type_line=NOISE_TYPE_PROMPT.render(noise_type=noise_type) if noise_type else "",
    )


def create_reason_prompt(user_query: str, score: float, analysis: NoiseAnalysis) -> str:
    issues = (
        MAJOR_ISSUES_PROMPT.render(issues="\n".join(f"- {issue}" for issue in analysis.majorIssues))
        if analysis.majorIssues
        else ""
    )
    # The judge's own findings describe trace content: they go back in as data.
    findings = ASSESSMENT_PROMPT.render(
        impacts=", ".join(f"{d.dimension}: {d.impactLevel} impact" for d in analysis.dimensions),
        major_issues=issues,
        overall_assessment=analysis.overallAssessment,
    )
    return REASON_PROMPT.render(
        user_query=delimit("original query", user_query),
        score=js_number(score),
        assessment=delimit("assessment", findings),
    )


NOISE_SENSITIVITY = ScorerSpec(
    name="noise-sensitivity",
    former_id="noise-sensitivity-scorer",
    title="Noise Sensitivity (LLM)",
    description=(
        "Evaluates how robust an agent is when exposed to irrelevant, distracting, or misleading information"
    ),
    example={
        "baseline_response": "Paris is the capital of France.",
        "noisy_query": "What is the capital of France, the country of cheese?",
    },
)


@register(NOISE_SENSITIVITY)
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
    judge = replace(judge, instructions=NOISE_SENSITIVITY_INSTRUCTIONS)

    def analyze_prompt(ctx: StepContext) -> str:
        original_query = get_user_message_from_run_input(ctx.run) or ""
        noisy_response = get_assistant_message_from_run_output(ctx.run) or ""
        if not original_query or not noisy_response:
            raise ValueError("Both original query and noisy response are required for evaluation")
        return create_analyze_prompt(
            original_query, baseline_response, noisy_query, noisy_response, noise_type
        )

    def reason_prompt(ctx: StepContext) -> str:
        return create_reason_prompt(
            get_user_message_from_run_input(ctx.run) or "", ctx.scored(), ctx.analyzed(NoiseAnalysis)
        )

    return (
        NOISE_SENSITIVITY.create_scorer(needs=("input", "output"), judge=judge)
        .analyze(
            {
                "description": "Analyze the impact of noise on agent response quality",
                "output_schema": NoiseAnalysis,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(lambda ctx: noise_score(ctx.analyzed(NoiseAnalysis), settings))
        .generate_reason(
            {
                "description": "Generate human-readable explanation of noise sensitivity evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
