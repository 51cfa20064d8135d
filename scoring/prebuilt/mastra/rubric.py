"""Rubric (Mastra's ``createRubricScorer``): does the output meet every required criterion of a checklist?

One ``analyze`` judge call grades the output against each criterion (``satisfied``, ``required``,
``reasoning``); the score is binary: ``scale`` when every required criterion is satisfied (every
criterion, when the judge marks none required), else 0, with no rounding. The reason is not asked of
the judge: it lists each criterion with a mark and the judge's reasoning, as Mastra formats it.

``criteria`` is a list of ``{"description", "required" (default true), "id"}`` or a string checklist
(one required criterion per non-empty line, leading ``-``, ``*``, ``•``, ``1.``, ``1)`` stripped).
Without criteria the scorer is Mastra's no-op: the judge is asked to return an empty analysis and
the score is 1 (not scaled), so a missing rubric never fails a run. Mastra also reads a per-run
``rubric`` from the request context or the run input; an AgentRun carries neither, so only the
``criteria`` option applies. Mastra's own quirks are kept: a judge that answers no criteria at all
passes (score 1), and the reason's header says "satisfied" only for a score of at least 1, so with
a ``scale`` below 1 a fully met rubric reads "not yet satisfied". Checked where Mastra does not:
``scale`` must be finite and > 0.

The prompts (``prompts/rubric/*.txt``) are Mastra's, with the task and the output (trace content) put
in data markers by ``delimit``; the criteria are configuration and stay as Mastra renders them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, StrictBool

from tracescore.scoring.framework.message_text import js_trim
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, user_text
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate, PromptFile
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

NO_RUBRIC_REASON = "No rubric was provided, so the rubric check passed by default."

# Mastra's list-marker pattern; JavaScript's \d is ASCII only, hence [0-9].
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|[0-9]+[.)])\s*")


class RubricCriterion(BaseModel):
    """One criterion: what the output must satisfy; ``required`` ones gate the score."""

    description: str
    required: bool = True
    id: str | None = None


class CriterionVerdict(BaseModel):
    criterion: str
    # Strict: "true" or 1 where a boolean belongs is an invalid answer (zod's z.boolean()).
    satisfied: StrictBool
    required: StrictBool
    reasoning: str


class RubricAnalysis(BaseModel):
    """The judge's verdict on every criterion (analyze)."""

    criteria: list[CriterionVerdict]
    overall_assessment: str = Field(alias="overallAssessment")


RUBRIC = JudgeTemplate(
    ScorerSpec(
        name="rubric",
        former_id="rubric-scorer",
        title="Rubric (LLM)",
        description=(
            "Grades an agent output against a rubric of criteria, returning 1 only when every required "
            "criterion is satisfied"
        ),
    ),
    __package__,
    "rubric",
    analyze=Ask("Judge the output against each rubric criterion", RubricAnalysis),
)


def parse_rubric_string(rubric: str) -> list[RubricCriterion]:
    """Mastra's ``parseRubricString``: each non-empty line, list marker stripped, is required."""
    lines = (js_trim(_LIST_MARKER.sub("", line, count=1)) for line in rubric.split("\n"))
    return [RubricCriterion(description=line) for line in lines if line]


def normalize_rubric(
    criteria: str | Sequence[RubricCriterion | Mapping[str, Any]] | None,
) -> list[RubricCriterion]:
    if not criteria:
        return []
    if isinstance(criteria, str):
        return parse_rubric_string(criteria)
    return [c if isinstance(c, RubricCriterion) else RubricCriterion.model_validate(c) for c in criteria]


def analyze_values(original_task: str, output: str, criteria: Sequence[RubricCriterion]) -> dict[str, str]:
    """The analyze prompt's values: the task, the numbered criteria and the output."""
    rendered = "\n".join(
        RUBRIC.prompt("criterion").render(
            number=str(i + 1), designation="required" if c.required else "optional", description=c.description
        )
        for i, c in enumerate(criteria)
    )
    return {
        "task": delimit("task", original_task) if original_task else RUBRIC.prompt("no_task").render(),
        "criteria": rendered,
        "output": delimit("output", output) if output else RUBRIC.prompt("no_output").render(),
    }


def rubric_score(analysis: RubricAnalysis, scale: float) -> float:
    """``scale`` when every gating criterion is satisfied, else 0; no criteria: 1."""
    if not analysis.criteria:
        return 1  # Mastra's no-op pass, deliberately not scaled
    required = [c for c in analysis.criteria if c.required]
    gating = required or analysis.criteria  # none marked required: all of them gate
    return (1 if all(c.satisfied for c in gating) else 0) * scale


def format_rubric_reason(score: float, analysis: RubricAnalysis) -> str:
    """Mastra's ``formatRubricReason``: a header, one line per criterion, what is left to do."""
    complete = score >= 1
    header = (
        "✅ Rubric satisfied: every required criterion is met."
        if complete
        else "❌ Rubric not yet satisfied."
    )

    def line(c: CriterionVerdict) -> str:
        mark = "✅" if c.satisfied else "❌"
        return f"{mark} [{'required' if c.required else 'optional'}] {c.criterion}\n   → {c.reasoning}"

    lines = [line(c) for c in analysis.criteria]
    unmet = sum(1 for c in analysis.criteria if c.required and not c.satisfied)
    noun = "criterion" if unmet == 1 else "criteria"
    footer = "" if complete else f"\n\nTo finish, address the {unmet} unmet required {noun} above."
    assessment = f"\n\n{analysis.overall_assessment}" if analysis.overall_assessment else ""
    body = "\n".join(lines)
    return f"{header}\n\n{body}{assessment}{footer}"


@register(RUBRIC.spec)
def create_rubric_scorer(
    judge: Judge,
    *,
    criteria: str | Sequence[RubricCriterion | Mapping[str, Any]] | None = None,
    scale: float = 1.0,
) -> Scorer:
    """Mastra's rubric scorer (id ``rubric-scorer``): ``scale`` if every required criterion is met, else 0."""
    if not math.isfinite(scale) or scale <= 0:
        # Mastra does not check; a zero or negative scale could only give scores outside [0, scale].
        raise ValueError("scale must be a finite number > 0")
    rubric = normalize_rubric(criteria)

    def analyze(ctx: StepContext) -> dict[str, str] | PromptFile:
        if not rubric:
            return PromptFile("no_rubric")  # without criteria Mastra still asks, with this fixed prompt
        return analyze_values(user_text(ctx.run), answer_text(ctx.run), rubric)

    def reason(ctx: StepContext) -> str:
        analysis = ctx.analyzed(RubricAnalysis)
        if not analysis.criteria:
            return NO_RUBRIC_REASON
        return format_rubric_reason(ctx.scored(), analysis)

    return RUBRIC.scorer(
        judge,
        scale=scale,
        needs={"output"},
        analyze=analyze,
        score=lambda ctx: rubric_score(ctx.analyzed(RubricAnalysis), scale),
    ).generate_reason(reason)
