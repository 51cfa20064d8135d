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
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field, StrictBool

from tracescore.scoring.framework.message_text import js_trim
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

RUBRIC_INSTRUCTIONS = load_prompt(__package__, "rubric/instructions").render()
ANALYZE_PROMPT = load_prompt(__package__, "rubric/analyze")
CRITERION_PROMPT = load_prompt(__package__, "rubric/criterion")
NO_TASK = load_prompt(__package__, "rubric/no_task").render()
NO_OUTPUT = load_prompt(__package__, "rubric/no_output").render()
# Without criteria Mastra still asks the judge, with this fixed prompt.
NO_RUBRIC_PROMPT = load_prompt(__package__, "rubric/no_rubric").render()
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


def analyze_prompt(original_task: str, output: str, criteria: Sequence[RubricCriterion]) -> str:
    rendered = "\n".join(
        CRITERION_PROMPT.render(
            number=str(i + 1), designation="required" if c.required else "optional", description=c.description
        )
        for i, c in enumerate(criteria)
    )
    return ANALYZE_PROMPT.render(
        task=delimit("task", original_task) if original_task else NO_TASK,
        criteria=rendered,
        output=delimit("output", output) if output else NO_OUTPUT,
    )


def rubric_score(analysis: RubricAnalysis | None, scale: float) -> float:
    """``scale`` when every gating criterion is satisfied, else 0; no analysis or criteria: 1."""
    if analysis is None or not analysis.criteria:
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


RUBRIC = ScorerSpec(
    name="rubric",
    former_id="rubric-scorer",
    title="Rubric (LLM)",
    description=(
        "Grades an agent output against a rubric of criteria, returning 1 only when every required "
        "criterion is satisfied"
    ),
)


@register(RUBRIC)
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

    def prompt(ctx: StepContext) -> str:
        if not rubric:
            return NO_RUBRIC_PROMPT
        return analyze_prompt(
            get_user_message_from_run_input(ctx.run) or "",
            get_assistant_message_from_run_output(ctx.run) or "",
            rubric,
        )

    def reason(ctx: StepContext) -> str:
        analysis = ctx.maybe("analyze", RubricAnalysis)
        if analysis is None or not analysis.criteria:
            return NO_RUBRIC_REASON
        return format_rubric_reason(ctx.score if ctx.score is not None else 0, analysis)

    return (
        RUBRIC.create_scorer(
            scale=scale or 1, needs={"output"}, judge=replace(judge, instructions=RUBRIC_INSTRUCTIONS)
        )
        .analyze(
            {
                "description": "Judge the output against each rubric criterion",
                "output_schema": RubricAnalysis,
                "create_prompt": prompt,
            }
        )
        .generate_score(lambda ctx: rubric_score(ctx.maybe("analyze", RubricAnalysis), scale))
        .generate_reason(reason)
    )
