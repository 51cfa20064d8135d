"""Summarization (Mastra's ``createSummarizationScorer``): is the summary faithful to its source, and complete?

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

The prompts are Mastra's, with the source, the summary (trace content) and what the judge extracted
from them put in data markers by ``delimit``.
"""

# ruff: noqa: E501 -- the prompts are Mastra's text verbatim, long lines included

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from pydantic import BaseModel, StrictBool

from schemas import AgentRun
from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import Need, StepContext
from scoring.utils import (
    extract_agent_response_messages,
    get_assistant_message_from_run_output,
    get_user_message_from_run_input,
)

SourceExtractor = Callable[[AgentRun], str]
DEFAULT_MAX_QUESTIONS = 10

SUMMARIZATION_AGENT_INSTRUCTIONS = """You are a strict summarization evaluator. Your job is to determine whether a summary is factually faithful to its source text and whether it preserves the information the source states.

Key Principles:
1. Judge only against the text you are given, never against prior knowledge
2. A claim is supported only when the source states or directly implies it
3. Treat approximations as deviations when the source is precise: "about 2020" does not match "2020"
4. Allow semantically equivalent phrasing: "founded in Boston" matches "based in Boston"
5. Judge each claim and each question independently
6. Factual accuracy and information coverage are separate concerns and are judged separately"""


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
    return f"""Complete two independent parts.

Part 1 (alignment): extract the atomic claims the summary makes, then decide whether the source text supports each one.
- A claim is a single statement that asserts one piece of information
- Break compound statements into individual claims
- Include factual assertions such as numbers, dates, and quantities
- Exclude questions, commands, and purely stylistic text
- Set "supported" to true only when the source states or directly implies the claim, and to false when the source contradicts it or does not contain it
- Return an empty list when the summary makes no claims

Part 2 (questions): write at most {max_questions} closed-ended questions drawn from the source text.
- Every question must be answerable as "yes" from the source text alone
- Cover the most important facts and main points first
- Each question must be specific, unambiguous, and verifiable from the source
- Choose the questions from the source alone. Do not let the summary influence which facts you pick, and do not skip a fact because the summary omits it
- Never write questions that could be answered "maybe" or "partially"
- Return an empty list when the source text is empty

Matching guidelines for Part 1:
- Dates, numbers, and proper nouns must match exactly: "2020" does not match "about 2020", "ABC Corp" does not match "ABC Company"
- Domain terms must match exactly: "quantum supremacy" does not match "quantum advantage"
- General phrasing may differ when the meaning holds: "developed technology" matches "made breakthroughs"
- Weaker or stronger claims do not match: "became successful" does not match "dominated the market"

Format:
{{
    "alignment": [
        {{
            "claim": "the claim the summary makes",
            "supported": true,
            "reason": "why the source does or does not support this claim"
        }}
    ],
    "questions": ["a question the source answers with yes"]
}}

Example:
Source Text: "Company Y was established in Boston in 2015. Their first ML model achieved 95% accuracy. The company relocated to Seattle in 2018."
Summary: "Company Y, founded in Boston in 2015, built an ML model with 99% accuracy."

{{
    "alignment": [
        {{
            "claim": "Company Y was founded in Boston in 2015",
            "supported": true,
            "reason": "The source states the company was established in Boston in 2015"
        }},
        {{
            "claim": "Company Y built an ML model with 99% accuracy",
            "supported": false,
            "reason": "The source states 95% accuracy, which contradicts 99%"
        }}
    ],
    "questions": [
        "Was Company Y established in Boston in 2015?",
        "Did their first ML model achieve 95% accuracy?",
        "Did the company relocate to Seattle in 2018?"
    ]
}}

Source Text:
{delimit("source", source_text)}

Summary:
{delimit("summary", summary)}

JSON:
"""


def coverage_prompt(summary: str, questions: list[str]) -> str:
    listed = "\n".join(f"[{index}] {question}" for index, question in enumerate(questions))
    return f"""Decide whether each question can be answered from the summary below. The summary is the only evidence you have, and you must not rely on prior knowledge.

Summary:
{delimit("summary", summary)}

Number of questions: {len(questions)}

Questions:
{delimit("questions", listed)}

Set "answered" to true only when the summary holds enough information to answer the question, and to false when the summary omits or contradicts that information.

Matching guidelines:
- Dates, numbers, and proper nouns must match exactly: "2020" does not match "about 2020", "ABC Corp" does not match "ABC Company"
- Domain terms must match exactly: "quantum supremacy" does not match "quantum advantage"
- General phrasing may differ when the meaning holds: "developed technology" matches "made breakthroughs"
- Weaker or stronger claims do not match: "became successful" does not match "dominated the market"

The number of verdicts MUST MATCH the number of questions exactly.

Format:
{{
    "coverage": [
        {{
            "question": "the question being answered",
            "answered": true,
            "reason": "why the summary can or cannot answer this question"
        }}
    ]
}}

Example:
Summary: "Company Y, founded in Boston in 2015, built an ML model with 99% accuracy."
Questions: ["Was Company Y established in Boston in 2015?", "Did their first ML model achieve 95% accuracy?", "Did the company relocate to Seattle in 2018?"]

{{
    "coverage": [
        {{
            "question": "Was Company Y established in Boston in 2015?",
            "answered": true,
            "reason": "The summary states the company was founded in Boston in 2015"
        }},
        {{
            "question": "Did their first ML model achieve 95% accuracy?",
            "answered": false,
            "reason": "The summary reports 99% accuracy, so the question cannot be answered as asked"
        }},
        {{
            "question": "Did the company relocate to Seattle in 2018?",
            "answered": false,
            "reason": "The summary does not mention the relocation"
        }}
    ]
}}"""


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- none"


def reason_prompt(*, source_text: str, summary: str, score: float | None, scale: float, axes: Axes) -> str:
    unsupported = delimit("unsupported claims", _bullets(axes.unsupported_claims))
    missing = delimit("unanswered questions", _bullets(axes.missing_questions))
    return f"""Explain the summarization score for the given summary.

Source Text:
{delimit("source", source_text)}

Summary:
{delimit("summary", summary)}

Score: {js_number(score)} out of {js_number(scale)}
Alignment score: {js_number(round_to_two_decimals(axes.alignment_score))}
Coverage score: {js_number(round_to_two_decimals(axes.coverage_score))}
Claims the source does not support:
{unsupported}
Questions the summary cannot answer:
{missing}

Summarization takes the lower of two scores, so the weaker axis decides the result:
- Alignment = supported claims / total claims
- Coverage = answered questions / total questions
- Score = min(alignment, coverage) × scale

Rules for explanation:
- Name the axis that produced the score
- Point at the specific claims or questions behind it
- Keep the explanation short and concrete
- Use the given score, don't recalculate

Format:
"The score is {js_number(score)} because {{explanation of the summarization quality}}"

Example responses:
"The score is 0.5 because coverage was the weaker axis: the summary answers 2 of 4 questions from the source and leaves out both the employee count and the relocation date."
"The score is 0.67 because alignment was the weaker axis: the claim about 99% accuracy contradicts the source, which reports 95%."
"The score is 1.0 because every claim in the summary is supported by the source and the summary answers every question drawn from it.\""""


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
    id="summarization-scorer",
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
            ctx.results.get("preprocess_step_result"), ctx.results.get("analyze_step_result"), max_questions
        )

    def questions(ctx: StepContext) -> list[str]:
        judgement: SourceJudgement | None = ctx.results.get("preprocess_step_result")
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
                "description": "Judge each summary claim against the source and draw coverage questions from it",
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
