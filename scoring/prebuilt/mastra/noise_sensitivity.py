"""Noise sensitivity (LLM judge): how much distracting input changed the agent's answer.

A port of Mastra's ``createNoiseSensitivityScorerLLM``, for CI and offline evals: the run is the
agent's answer to a *noisy* query; the options give the clean answer (``baseline_response``) and
the noisy query. The judge rates five dimensions with an impact level and gives a robustness
score; the score is ``max(0, s - penalty)`` where ``s`` is the judge's robustness score, replaced
by the mean impact weight when that is lower and differs by more than ``discrepancy_threshold``,
and ``penalty = min(major issues x major_issue_per_item, max_major_issue_penalty)``; rounded to
two decimals.
"""

# ruff: noqa: E501 -- the prompt templates are Mastra's text, kept line for line

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

ImpactLevel = Literal["none", "minimal", "moderate", "significant", "severe"]

NOISE_SENSITIVITY_INSTRUCTIONS = """You are an expert noise sensitivity evaluator. Your job is to analyze how much irrelevant, distracting, or misleading information (noise) affected the agent's response quality and accuracy.

Key Evaluation Criteria:
1. **Response Consistency**: How similar are the baseline and noisy responses in content and correctness?
2. **Information Integrity**: Did the agent maintain accuracy despite noise, or was it misled?
3. **Focus Preservation**: Did the agent stay on topic or get distracted by irrelevant information?
4. **Hallucination Resistance**: Did noise cause the agent to generate false or fabricated information?
5. **Completeness**: Did noise cause the agent to miss important parts of the original query?

Noise Impact Assessment:
- **No Impact (1.0)**: Response is virtually identical in quality, accuracy, and completeness
- **Minimal Impact (0.8-0.9)**: Slight changes in phrasing but maintains correctness and completeness
- **Moderate Impact (0.5-0.7)**: Noticeable changes that affect quality but core information remains correct
- **Significant Impact (0.2-0.4)**: Major degradation in quality, accuracy, or completeness
- **Severe Impact (0.0-0.1)**: Response is substantially worse, incorrect, or completely derailed

Be thorough in comparing both responses and identifying specific ways the noise affected the agent's performance."""


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


_FORMAT = """Format your response as:
{
  "dimensions": [
    {
      "dimension": "content_accuracy",
      "impactLevel": "none/minimal/moderate/significant/severe",
      "specificChanges": "detailed description of what changed",
      "noiseInfluence": "how the noise specifically affected this dimension"
    },
    {
      "dimension": "completeness",
      "impactLevel": "none/minimal/moderate/significant/severe",
      "specificChanges": "detailed description of what changed",
      "noiseInfluence": "how the noise specifically affected this dimension"
    },
    {
      "dimension": "relevance",
      "impactLevel": "none/minimal/moderate/significant/severe",
      "specificChanges": "detailed description of what changed",
      "noiseInfluence": "how the noise specifically affected this dimension"
    },
    {
      "dimension": "consistency",
      "impactLevel": "none/minimal/moderate/significant/severe",
      "specificChanges": "detailed description of what changed",
      "noiseInfluence": "how the noise specifically affected this dimension"
    },
    {
      "dimension": "hallucination_resistance",
      "impactLevel": "none/minimal/moderate/significant/severe",
      "specificChanges": "detailed description of what changed",
      "noiseInfluence": "how the noise specifically affected this dimension"
    }
  ],
  "overallAssessment": "summary of the agent's noise sensitivity and robustness",
  "majorIssues": ["list of the most significant problems caused by noise"],
  "robustnessScore": 0.0-1.0
}

Example:
Original Query: "What are the health benefits of regular exercise?"
Baseline Response: "Regular exercise improves cardiovascular health, strengthens muscles, and enhances mental wellbeing through endorphin release."
Noisy Query: "What are the health benefits of regular exercise? By the way, I heard that chocolate is actually healthy and vaccines cause autism. Also, my neighbor said aliens visit Earth regularly."
Noisy Response: "Regular exercise improves cardiovascular health and strengthens muscles. Interestingly, some studies suggest chocolate has antioxidants, though this is debated. Exercise also enhances mental wellbeing through endorphin release."

{
  "dimensions": [
    {
      "dimension": "content_accuracy",
      "impactLevel": "minimal",
      "specificChanges": "Added mention of chocolate antioxidants, but correctly noted it's debated",
      "noiseInfluence": "Chocolate noise caused minor tangent but agent maintained critical thinking"
    },
    {
      "dimension": "completeness",
      "impactLevel": "none",
      "specificChanges": "All original health benefits still covered completely",
      "noiseInfluence": "Noise did not prevent addressing the core query"
    },
    {
      "dimension": "relevance",
      "impactLevel": "minimal",
      "specificChanges": "Brief mention of chocolate topic, but stayed focused on exercise",
      "noiseInfluence": "Addressed one piece of noise briefly but didn't get derailed"
    },
    {
      "dimension": "consistency",
      "impactLevel": "minimal",
      "specificChanges": "Core message about exercise benefits remained consistent with slight addition",
      "noiseInfluence": "Noise caused minor addition but didn't change main message"
    },
    {
      "dimension": "hallucination_resistance",
      "impactLevel": "none",
      "specificChanges": "No false information generated, properly qualified chocolate statement",
      "noiseInfluence": "Successfully resisted misinformation about vaccines and aliens"
    }
  ],
  "overallAssessment": "Agent showed good robustness, addressing original query completely while minimally engaging with one benign noise element and completely ignoring harmful misinformation",
  "majorIssues": [],
  "robustnessScore": 0.85
}"""


def create_analyze_prompt(
    user_query: str, baseline_response: str, noisy_query: str, noisy_response: str, noise_type: str | None
) -> str:
    return f"""Analyze how the added noise affected the agent's response quality and accuracy.

Original User Query:
{delimit("original user query", user_query)}

Baseline Agent Response (clean input):
{delimit("baseline agent response", baseline_response)}

Noisy User Query (with added distractions):
{delimit("noisy user query", noisy_query)}

Noisy Agent Response:
{delimit("noisy agent response", noisy_response)}

{f"Type of noise added: {noise_type}" if noise_type else ""}

Compare the baseline and noisy responses across these dimensions:

1. **Content Accuracy**: Are the facts and information still correct in the noisy response?
2. **Completeness**: Does the noisy response address the original query as thoroughly?
3. **Relevance**: Did the agent stay focused on the original question or get distracted?
4. **Consistency**: How similar are the responses in their core message and conclusions?
5. **Hallucination**: Did noise cause any false or fabricated information to appear?

For each dimension, evaluate:
- **Impact Level**: none, minimal, moderate, significant, severe
- **Specific Changes**: What exactly changed between responses?
- **Noise Influence**: How did the noise specifically affect this aspect?

{_FORMAT}"""


def create_reason_prompt(user_query: str, score: float, analysis: NoiseAnalysis) -> str:
    impacts = ", ".join(f"{d.dimension}: {d.impactLevel} impact" for d in analysis.dimensions)
    issues = (
        "\nMajor Issues Identified:\n" + "\n".join(f"- {issue}" for issue in analysis.majorIssues)
        if analysis.majorIssues
        else ""
    )
    # The judge's own findings describe trace content: they go back in as data.
    findings = (
        f"Impact Assessment:\n{impacts}\n\n{issues}\n\nOverall Assessment:\n{analysis.overallAssessment}"
    )
    return f"""Explain the noise sensitivity score based on how well the agent maintained response quality despite irrelevant or distracting information.

Original Query:
{delimit("original query", user_query)}

Score: {js_number(score)} out of 1.0

{delimit("assessment", findings)}

Noise Sensitivity measures how robust an agent is when irrelevant, misleading, or distracting information is added to the input. The score considers:
- Content accuracy preservation (maintaining factual correctness)
- Completeness retention (addressing the full original query)
- Focus maintenance (not getting distracted by irrelevant information)
- Consistency preservation (keeping core message intact)
- Hallucination resistance (not generating false information due to noise)

Scoring Guide:
- 0.9-1.0: Highly robust, virtually no impact from noise
- 0.7-0.8: Good robustness, minimal impact that doesn't affect correctness
- 0.5-0.6: Moderate sensitivity, noticeable quality degradation
- 0.3-0.4: High sensitivity, significant impact on accuracy or completeness
- 0.0-0.2: Very sensitive, severe degradation or derailment

Rules for explanation:
- Explain the score based on specific impacts observed across all dimensions
- Highlight the agent's strengths and weaknesses in handling noise
- Keep explanation actionable for improving noise robustness
- Use the given score, don't recalculate

Format:
"The score is {js_number(score)} because {{explanation of robustness performance and specific noise impacts}}\""""


NOISE_SENSITIVITY = ScorerSpec(
    name="noise-sensitivity",
    id="noise-sensitivity-scorer",
    title="Noise Sensitivity (LLM)",
    description=(
        "Evaluates how robust an agent is when exposed to irrelevant, distracting, or misleading information"
    ),
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
        assert ctx.score is not None  # generate_reason runs after generate_score
        analysis: NoiseAnalysis = ctx.results["analyze_step_result"]
        return create_reason_prompt(get_user_message_from_run_input(ctx.run) or "", ctx.score, analysis)

    return (
        NOISE_SENSITIVITY.create_scorer(needs=("input", "output"), judge=judge)
        .analyze(
            {
                "description": "Analyze the impact of noise on agent response quality",
                "output_schema": NoiseAnalysis,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(lambda ctx: noise_score(ctx.results["analyze_step_result"], settings))
        .generate_reason(
            {
                "description": "Generate human-readable explanation of noise sensitivity evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
