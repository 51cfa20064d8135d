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
from dataclasses import dataclass

from pydantic import BaseModel, StrictBool

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import Need, StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, js_number, round_to_two_decimals, user_text
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import extract_agent_response_messages

SourceExtractor = Callable[[AgentRun], str]
DEFAULT_MAX_QUESTIONS = 10


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


SUMMARIZATION = JudgeTemplate(
    ScorerSpec(
        name="summarization",
        former_id="summarization-scorer",
        title="Summarization Scorer",
        description=(
            "A scorer that evaluates whether a summary stays faithful to its source text and preserves the "
            "information the source states"
        ),
    ),
    __package__,
    "summarization",
    extract=Ask(
        "Judge each summary claim against the source and draw coverage questions from it",
        SourceJudgement,
        prompt="source_judgement",
    ),
    analyze=Ask("Answer the coverage questions using only the summary", Coverage, prompt="coverage"),
    reason=Ask("Explain which axis produced the summarization score"),
)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- none"


def get_summary(run: AgentRun) -> str:
    """The last assistant message with text (an agent that fetches first has tool-only turns)."""
    responses = [text for text in extract_agent_response_messages(run) if text.strip()]
    if responses:
        return responses[-1]
    return answer_text(run)


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


def measure_axes(judgement: SourceJudgement, coverage: Coverage, max_questions: int) -> Axes:
    # Coverage counts against the questions asked, not the verdicts returned: a judge that
    # answers only some of them cannot raise the score by staying silent; extra verdicts drop.
    questions, alignment = judgement.questions, judgement.alignment
    total_questions = min(len(questions), max_questions)
    judged_questions = questions[:total_questions]
    judged_coverage = coverage.coverage[:total_questions]
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


@register(SUMMARIZATION.spec)
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

    def texts(ctx: StepContext) -> dict[str, str]:
        """The source (the extractor's, else the option, else the user's message) and the summary."""
        if source_extractor is not None:
            source_text = source_extractor(ctx.run)
        elif source is not None:  # Mastra's `??`: an empty source is still the source
            source_text = source
        else:
            source_text = user_text(ctx.run)
        return {"source": delimit("source", source_text), "summary": delimit("summary", get_summary(ctx.run))}

    def axes(ctx: StepContext) -> Axes:
        return measure_axes(ctx.preprocessed(SourceJudgement), ctx.analyzed(Coverage), max_questions)

    def coverage(ctx: StepContext) -> dict[str, str]:
        questions = ctx.preprocessed(SourceJudgement).questions[:max_questions]
        listed = "\n".join(f"[{index}] {question}" for index, question in enumerate(questions))
        return {
            "summary": delimit("summary", get_summary(ctx.run)),
            "question_count": str(len(questions)),
            "questions": delimit("questions", listed),
        }

    def reason(ctx: StepContext) -> dict[str, str]:
        measured = axes(ctx)
        return {
            **texts(ctx),
            "alignment_score": js_number(round_to_two_decimals(measured.alignment_score)),
            "coverage_score": js_number(round_to_two_decimals(measured.coverage_score)),
            "unsupported_claims": delimit("unsupported claims", _bullets(measured.unsupported_claims)),
            "unanswered_questions": delimit("unanswered questions", _bullets(measured.missing_questions)),
        }

    # The source is the user's message unless the options give it: only then is the input needed.
    needs: set[Need] = (
        {"output"} if source is not None or source_extractor is not None else {"input", "output"}
    )
    return SUMMARIZATION.scorer(
        judge,
        scale=scale,
        needs=needs,
        extract=lambda ctx: {**texts(ctx), "max_questions": str(max_questions)},
        analyze=coverage,
        score=lambda ctx: summarization_score(axes(ctx), scale),
        reason=reason,
    )
