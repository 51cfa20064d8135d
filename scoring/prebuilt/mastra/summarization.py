"""Summarization (Mastra's ``createSummarizationScorer``): is a summary faithful to its source, and complete?

Three judge calls, as in Mastra. Preprocess: the judge extracts the summary's claims and says for each
whether the source supports it (``alignment``), and draws at most ``max_questions`` yes-questions from
the source. Analyze: without seeing the source, the judge says which questions the summary answers
(``coverage``). Then::

    alignment = supported claims / claims
    coverage  = answered questions / min(questions, max_questions)   (a question without a verdict is missing)
    score     = round2(min(alignment, coverage) x scale)             (0 when there is no claim or no question)

and the judge explains the score (reason). The summary is the last assistant message of the output
that has text; the source is ``source_extractor(run)`` when given, else the ``source`` option, else
the run's first user message (Mastra's precedence).

Checked where Mastra does not: ``scale`` must be finite and > 0 (else scores fall outside
[0, scale]) and ``max_questions`` a whole number (JavaScript would slice at a fraction).

The prompts (``prompts/summarization/*.txt``) are Mastra's, with the source, the summary (trace
content) and what the judge extracted from them put in data markers by ``delimit``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from pydantic import BaseModel, StrictBool

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import Need, StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import (
    extract_agent_response_messages,
    get_assistant_message_from_run_output,
    get_user_message_from_run_input,
)

SourceExtractor = Callable[[AgentRun], str]
DEFAULT_MAX_QUESTIONS = 10

SUMMARIZATION_AGENT_INSTRUCTIONS = load_prompt(__package__, "summarization/instructions").render()
SOURCE_JUDGEMENT_PROMPT = load_prompt(__package__, "summarization/source_judgement")
COVERAGE_PROMPT = load_prompt(__package__, "summarization/coverage")
REASON_PROMPT = load_prompt(__package__, "summarization/reason")


class AlignmentVerdict(BaseModel):
    claim: str
    supported: StrictBool  # "true" or 1 is an invalid answer, as for zod's z.boolean()
    reason: str


class SourceJudgement(BaseModel):
    """The summary's claims judged against the source, and questions drawn from it (preprocess)."""

    alignment: list[AlignmentVerdict]
    questions: list[str]


class CoverageVerdict(BaseModel):
    question: str
    answered: StrictBool
    reason: str


class Coverage(BaseModel):
    """Whether the summary answers each question (analyze)."""

    coverage: list[CoverageVerdict]


def source_judgement_prompt(source_text: str, summary: str, max_questions: int) -> str:
    return SOURCE_JUDGEMENT_PROMPT.render(
        max_questions=str(max_questions),
        source=delimit("source", source_text),
        summary=delimit("summary", summary),
    )


def coverage_prompt(summary: str, questions: list[str]) -> str:
    listed = "\n".join(f"[{index}] {question}" for index, question in enumerate(questions))
    return COVERAGE_PROMPT.render(
        summary=delimit("summary", summary),
        question_count=str(len(questions)),
        questions=delimit("questions", listed),
    )


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- none"


def reason_prompt(*, source_text: str, summary: str, score: float | None, scale: float, axes: Axes) -> str:
    return REASON_PROMPT.render(
        source=delimit("source", source_text),
        summary=delimit("summary", summary),
        score=js_number(score),
        scale=js_number(scale),
        alignment_score=js_number(round_to_two_decimals(axes.alignment_score)),
        coverage_score=js_number(round_to_two_decimals(axes.coverage_score)),
        unsupported_claims=delimit("unsupported claims", _bullets(axes.unsupported_claims)),
        unanswered_questions=delimit("unanswered questions", _bullets(axes.missing_questions)),
    )


def get_summary(run: AgentRun) -> str:
    """The last assistant message with text (an agent that fetches first has tool-only turns)."""
    responses = [text for text in extract_agent_response_messages(run) if text.strip()]
    if responses:
        return responses[-1]
    return get_assistant_message_from_run_output(run) or ""


def _ratio(matched: int, total: int) -> float:
    return 0.0 if total == 0 else min(1.0, matched / total)


@dataclass(frozen=True)
class Axes:
    """Mastra's ``measureAxes``: both ratios, the claims and questions behind them."""

    alignment_score: float
    coverage_score: float
    unsupported_claims: list[str]
    missing_questions: list[str]
    is_scorable: bool


def measure_axes(judgement: SourceJudgement | None, coverage: Coverage | None, max_questions: int) -> Axes:
    # Coverage counts against the questions asked, not the verdicts returned: a judge that
    # answers only some of them cannot raise the score by staying silent; extra verdicts drop.
    questions = judgement.questions if judgement else []
    alignment = judgement.alignment if judgement else []
    total_questions = min(len(questions), max_questions)
    judged_questions = questions[:total_questions]
    judged_coverage = (coverage.coverage if coverage else [])[:total_questions]
    return Axes(
        alignment_score=_ratio(sum(v.supported for v in alignment), len(alignment)),
        coverage_score=_ratio(sum(v.answered for v in judged_coverage), total_questions),
        unsupported_claims=[v.claim for v in alignment if not v.supported],
        missing_questions=[
            q
            for index, q in enumerate(judged_questions)
            if not (index < len(judged_coverage) and judged_coverage[index].answered)
        ],
        is_scorable=bool(alignment) and total_questions > 0,
    )


def summarization_score(axes: Axes, scale: float) -> float:
    if not axes.is_scorable:
        return 0
    return round_to_two_decimals(min(axes.alignment_score, axes.coverage_score) * scale)


SUMMARIZATION = ScorerSpec(
    name="summarization",
    former_id="summarization-scorer",
    title="Summarization Scorer",
    description=(
        "A scorer that evaluates whether a summary stays faithful to its source text and preserves the "
        "information the source states"
    ),
)


@register(SUMMARIZATION)
def create_summarization_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    source: str | None = None,
    source_extractor: SourceExtractor | None = None,
    max_questions: int = DEFAULT_MAX_QUESTIONS,
) -> Scorer:
    """Mastra's summarization scorer (id ``summarization-scorer``): min(alignment, coverage) x ``scale``."""
    if isinstance(max_questions, bool) or not isinstance(max_questions, int):
        raise ValueError("maxQuestions must be a whole number")  # JavaScript would slice at a fraction
    if max_questions < 1:
        raise ValueError("maxQuestions must be at least 1 for Summarization scoring")
    if not math.isfinite(scale) or scale <= 0:
        # Mastra does not check; a zero or negative scale could only give scores outside [0, scale].
        raise ValueError("scale must be a finite number > 0")

    def source_text(run: AgentRun) -> str:
        if source_extractor is not None:
            return source_extractor(run)
        if source is not None:  # Mastra's `??`: an empty source is still the source
            return source
        return get_user_message_from_run_input(run) or ""

    def axes(ctx: StepContext) -> Axes:
        return measure_axes(
            ctx.maybe("preprocess", SourceJudgement), ctx.maybe("analyze", Coverage), max_questions
        )

    def questions(ctx: StepContext) -> list[str]:
        judgement = ctx.maybe("preprocess", SourceJudgement)
        return (judgement.questions if judgement else [])[:max_questions]

    # The source is the user's message unless the options give it: only then is the input needed.
    needs: set[Need] = (
        {"output"} if source is not None or source_extractor is not None else {"input", "output"}
    )
    return (
        SUMMARIZATION.create_scorer(
            scale=scale or 1, needs=needs, judge=replace(judge, instructions=SUMMARIZATION_AGENT_INSTRUCTIONS)
        )
        .preprocess(
            {
                "description": (
                    "Judge each summary claim against the source and draw coverage questions from it"
                ),
                "output_schema": SourceJudgement,
                "create_prompt": lambda ctx: source_judgement_prompt(
                    source_text(ctx.run), get_summary(ctx.run), max_questions
                ),
            }
        )
        .analyze(
            {
                "description": "Answer the coverage questions using only the summary",
                "output_schema": Coverage,
                "create_prompt": lambda ctx: coverage_prompt(get_summary(ctx.run), questions(ctx)),
            }
        )
        .generate_score(lambda ctx: summarization_score(axes(ctx), scale))
        .generate_reason(
            {
                "description": "Explain which axis produced the summarization score",
                "create_prompt": lambda ctx: reason_prompt(
                    source_text=source_text(ctx.run),
                    summary=get_summary(ctx.run),
                    score=ctx.score,
                    scale=scale,
                    axes=axes(ctx),
                ),
            }
        )
    )
