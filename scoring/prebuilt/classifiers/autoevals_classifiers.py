"""autoevals' LLM classifiers (VoltAgent's factuality, summary, translation, humor, possible scorers).

Each classifier is data: an autoevals YAML template (``prompt``, ``choice_scores``, optional
``use_cot``) copied into ``prompts/`` (autoevals is MIT licensed, see ``prompts/NOTICE.md``). Its
``prompt`` is rendered by ``scoring.framework.prompt_templates`` with every value delimited as data,
then followed by the answer instructions (``prompts/classify_with_reasons.txt`` or
``prompts/classify.txt``). The judge must choose one of the template's choices; the choice is a
``Literal`` in the answer schema, so any other answer is a validation error (one repair round, then
a failure), never a score.
Score = ``choice_scores[choice]``; the run's label is the choice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, create_model

from tracescore.scoring.framework.prompt_templates import PROMPTS_FOLDER, PromptTemplate, load_prompt
from tracescore.scoring.framework.prompt_templates import template as text_template
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import Need, StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.ground_truth import expected_value
from tracescore.scoring.prebuilt.judge_helpers import answer_text, user_text
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

# autoevals' answer instructions, worded for a JSON answer instead of its ``select_choice`` tool call.
CLASSIFY_WITH_REASONS = load_prompt(__package__, "classify_with_reasons")
CLASSIFY = load_prompt(__package__, "classify")


# What fills a template: the user message, the assistant's answer, the run's ground truth.
Filler = Literal["input", "output", "expected"]


class ChoicePrompt(BaseModel):
    """An autoevals classifier template: the question and the score of each choice."""

    prompt: str
    choice_scores: dict[str, float]
    use_cot: bool | None = None


@cache
def load_template(name: str) -> ChoicePrompt:
    """The autoevals template ``name`` (e.g. ``factuality``): ``prompts/<name>.yaml`` of this package."""
    text = resources.files(__package__).joinpath(PROMPTS_FOLDER, f"{name}.yaml").read_text(encoding="utf-8")
    return ChoicePrompt.model_validate(yaml.safe_load(text))


def _strip(value: Any) -> Any:
    # autoevals strips the chosen label before looking it up; so do we.
    return value.strip() if isinstance(value, str) else value


class Choice(BaseModel):
    """A classifier judge's answer: one of the template's choices."""

    choice: str


class ReasonedChoice(BaseModel):
    """A classifier judge's answer with chain of thought: its reasons, then one of the choices."""

    reasons: str
    choice: str


def choice_schema(choices: list[str], use_cot: bool) -> type[Choice] | type[ReasonedChoice]:
    """A pydantic model whose ``choice`` must be one of ``choices`` (plus ``reasons`` with CoT)."""
    # The choices are the template's data: a Literal built at run time, which no static type names.
    choice_type: Any = Annotated[Literal[tuple(choices)], BeforeValidator(_strip)]
    if use_cot:
        return create_model("ClassifierChoice", __base__=ReasonedChoice, choice=(choice_type, ...))
    return create_model("ClassifierChoice", __base__=Choice, choice=(choice_type, ...))


def render(template: ChoicePrompt, values: dict[str, str], use_cot: bool, *, name: str = "classifier") -> str:
    """The template with every variable's value delimited as data, and the answer instructions."""
    task = text_template(name, template.prompt).render(
        **{variable: delimit(variable, value) for variable, value in values.items()}
    )
    answer: PromptTemplate = CLASSIFY_WITH_REASONS if use_cot else CLASSIFY
    return answer.render(task=task, choices=json.dumps(list(template.choice_scores)))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class ClassifierTemplate:
    """An autoevals classifier as data: what it is called (its spec's name is its template's,
    ``prompts/<name>.yaml``) and what fills the template's placeholders.

    ``uses``: ``input`` (the user message), ``output`` (the assistant's answer), ``expected`` (the
    run's ground truth; a run without it fails).
    """

    spec: ScorerSpec
    uses: tuple[Filler, ...]

    def scorer(self, judge: Judge, *, use_cot: bool | None, extra: dict[str, str] | None = None) -> Scorer:
        """A scorer asking ``judge`` to classify; ``extra`` fills the template's other placeholders.
        ``use_cot`` defaults to the template's value, else True (as autoevals)."""
        name, uses = self.spec.name, self.uses
        template = load_template(name)
        cot = use_cot if use_cot is not None else template.use_cot if template.use_cot is not None else True
        schema = choice_schema(list(template.choice_scores), cot)

        def prompt(ctx: StepContext) -> str:
            values = dict(extra or {})
            if "input" in uses:
                values["input"] = user_text(ctx.run)
            if "output" in uses:
                values["output"] = answer_text(ctx.run)
            if "expected" in uses:
                values["expected"] = _text(expected_value(ctx, self.spec.id))
            return render(template, values, cot, name=name)

        def choice(ctx: StepContext) -> str:
            """The judge's choice: what the score is looked up by, and the run's label."""
            return ctx.analyzed(schema).choice

        needs: set[Need] = {"output"}
        if "input" in uses:
            needs.add("input")
        if "expected" in uses:
            needs.add("ground_truth")
        return (
            self.spec.create_scorer(needs=needs, judge=judge, label=choice)
            .with_prompts(template.model_dump_json(), CLASSIFY_WITH_REASONS.text, CLASSIFY.text)
            .analyze(
                {
                    "description": "Choose one of the allowed choices",
                    "output_schema": schema,
                    "create_prompt": prompt,
                }
            )
            .generate_score(lambda ctx: template.choice_scores[choice(ctx)])
        )


# The question, the answer and the expected answer.
GRADED: tuple[Filler, ...] = ("input", "output", "expected")

FACTUALITY = ClassifierTemplate(
    ScorerSpec(
        name="factuality",
        title="factuality",
        description="Checks the factual consistency of the output with the expected answer",
    ),
    uses=GRADED,
)


@register(FACTUALITY.spec)
def create_factuality_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Factuality: is the output factually consistent with the expected answer."""
    return FACTUALITY.scorer(judge, use_cot=use_cot)


SUMMARY = ClassifierTemplate(
    ScorerSpec(
        name="summary",
        title="summary",
        description="Compares the output summary of the input with the expected summary",
    ),
    uses=GRADED,
)


@register(SUMMARY.spec)
def create_summary_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Summary: is the output a better summary of the input than the expected one."""
    return SUMMARY.scorer(judge, use_cot=use_cot)


TRANSLATION = ClassifierTemplate(
    ScorerSpec(
        name="translation",
        title="translation",
        description="Checks the output translation against the expected translation",
        example={"language": "French"},
    ),
    uses=GRADED,
)


@register(TRANSLATION.spec)
def create_translation_scorer(judge: Judge, language: str, use_cot: bool | None = None) -> Scorer:
    """autoevals Translation: does the output translate the input from ``language`` as expected."""
    if not language:
        raise ValueError("translation needs the source language")
    return TRANSLATION.scorer(judge, use_cot=use_cot, extra={"language": language})


HUMOR = ClassifierTemplate(
    ScorerSpec(name="humor", title="humor", description="Judges whether the output is funny"),
    uses=("output",),
)


@register(HUMOR.spec)
def create_humor_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Humor: is the output funny."""
    return HUMOR.scorer(judge, use_cot=use_cot)


POSSIBLE = ClassifierTemplate(
    ScorerSpec(
        name="possible",
        title="possible",
        description="Checks that the output offers a solution rather than calling the task impossible",
    ),
    uses=("input", "output"),
)


@register(POSSIBLE.spec)
def create_possible_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Possible: does the output attempt the task instead of declaring it impossible."""
    return POSSIBLE.scorer(judge, use_cot=use_cot)
