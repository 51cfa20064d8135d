"""Prompt alignment: the judge's analysis (Mastra's ``analyzeOutputSchema``) and how its four
dimension scores are weighted into the score, per evaluation mode."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StrictBool

EvaluationMode = Literal["user", "system", "both"]
# Strict: a judge answering "0.5" or "yes" where a number or a boolean belongs is invalid.
Unit = Annotated[float, Field(ge=0.0, le=1.0, strict=True)]

# (intent, requirements, completeness, appropriateness), Mastra's SCORING_WEIGHTS.
USER_WEIGHTS = (0.4, 0.3, 0.2, 0.1)
SYSTEM_WEIGHTS = (0.35, 0.35, 0.15, 0.15)
BOTH_USER_WEIGHT, BOTH_SYSTEM_WEIGHT = 0.7, 0.3


class IntentAlignment(BaseModel):
    score: Unit
    primaryIntent: str  # the judge's JSON keys, as in Mastra's schema
    isAddressed: StrictBool
    reasoning: str


class Requirement(BaseModel):
    requirement: str
    isFulfilled: StrictBool
    reasoning: str


class RequirementsFulfillment(BaseModel):
    requirements: list[Requirement]
    overallScore: Unit


class Completeness(BaseModel):
    score: Unit
    missingElements: list[str]
    reasoning: str


class ResponseAppropriateness(BaseModel):
    score: Unit
    formatAlignment: StrictBool
    toneAlignment: StrictBool
    reasoning: str


class AlignmentAnalysis(BaseModel):
    """The judge's analysis (Mastra's analyzeOutputSchema); every score must lie in [0, 1]."""

    intentAlignment: IntentAlignment
    requirementsFulfillment: RequirementsFulfillment
    completeness: Completeness
    responseAppropriateness: ResponseAppropriateness
    overallAssessment: str


def weighted_alignment(analysis: AlignmentAnalysis, mode: EvaluationMode) -> float:
    """The weighted sum of the four dimension scores for ``mode`` (before scale and rounding)."""
    dimensions = (
        analysis.intentAlignment.score,
        analysis.requirementsFulfillment.overallScore,
        analysis.completeness.score,
        analysis.responseAppropriateness.score,
    )
    weights = SYSTEM_WEIGHTS if mode == "system" else USER_WEIGHTS

    def total(ws: tuple[float, ...]) -> float:
        # Summed left to right, as Mastra's expression is, so floats match it exactly.
        result = 0.0
        for dimension, weight in zip(dimensions, ws, strict=True):
            result += dimension * weight
        return result

    if mode != "both":
        return total(weights)
    user_score = total(USER_WEIGHTS)
    system_score = user_score  # Mastra scores "both" from one analysis: system = user
    return user_score * BOTH_USER_WEIGHT + system_score * BOTH_SYSTEM_WEIGHT
