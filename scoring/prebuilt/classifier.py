"""autoevals' LLM classifiers (VoltAgent's factuality, summary, translation, humor, possible scorers).

Each classifier is data: an autoevals YAML template (``prompt``, ``choice_scores``, optional
``use_cot``) copied into ``data/autoevals_templates`` (autoevals is MIT licensed, see
``data/NOTICE.md``). The judge must choose one of the template's choices; the choice is a
``Literal`` in the answer schema, so any other answer is a validation error (one repair round, then
a failure), never a score. Score = ``choice_scores[choice]``.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, create_model

from scoring.judge import Judge, delimit
from scoring.prebuilt.ground_truth import expected_value
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import Need, StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

# autoevals' suffixes, worded for a JSON answer instead of its ``select_choice`` tool call.
COT_SUFFIX = (
    "Answer with a JSON object: put your reasoning, step by step to be sure that your conclusion is "
    'correct, in "reasons" (avoid simply stating the correct answer at the outset), then set "choice" '
    "to a single choice from {choices}."
)
NO_COT_SUFFIX = 'Answer with a JSON object whose "choice" is a single choice from {choices}.'

# Mustache variables of the templates: {{name}} and {{{name}}} (unescaped; the same here).
_VARIABLE = re.compile(r"\{\{\{?\s*(\w+)\s*\}?\}\}")


class Template(BaseModel):
    prompt: str
    choice_scores: dict[str, float]
    use_cot: bool | None = None


@cache
def load_template(name: str) -> Template:
    """The autoevals template ``name`` (e.g. ``factuality``) from this package's data."""
    text = (
        resources.files("scoring.prebuilt")
        .joinpath("data", "autoevals_templates", f"{name}.yaml")
        .read_text(encoding="utf-8")
    )
    return Template.model_validate(yaml.safe_load(text))


def _strip(value: Any) -> Any:
    # autoevals strips the chosen label before looking it up; so do we.
    return value.strip() if isinstance(value, str) else value


def choice_schema(choices: list[str], use_cot: bool) -> type[BaseModel]:
    """A pydantic model whose ``choice`` must be one of ``choices`` (plus ``reasons`` with CoT)."""
    choice_type = Annotated[Literal[tuple(choices)], BeforeValidator(_strip)]  # type: ignore[valid-type]
    if use_cot:
        return create_model("ClassifierChoice", reasons=(str, ...), choice=(choice_type, ...))
    return create_model("ClassifierChoice", choice=(choice_type, ...))


def render(template: Template, values: dict[str, str], use_cot: bool) -> str:
    """The template with every variable's value delimited as data, and the answer instructions."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ValueError(f"template variable {name!r} has no value")
        return delimit(name, values[name])

    choices = json.dumps(list(template.choice_scores))
    suffix = (COT_SUFFIX if use_cot else NO_COT_SUFFIX).format(choices=choices)
    return f"{_VARIABLE.sub(fill, template.prompt)}\n{suffix}"


def _choice(ctx: StepContext) -> str:
    """The judge's choice (the label of a classified run)."""
    choice: str = ctx.analyzed(BaseModel).choice  # type: ignore[attr-defined]  # built by choice_schema
    return choice


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def create_classifier_scorer(
    judge: Judge,
    spec: ScorerSpec,
    *,
    template_name: str,
    uses: tuple[str, ...],
    extra: dict[str, str] | None = None,
    use_cot: bool | None = None,
) -> Scorer:
    """A scorer asking ``judge`` to classify with autoevals template ``template_name``.

    ``uses`` names what fills the template: ``input`` (the user message), ``output`` (the
    assistant's answer), ``expected`` (the run's ground truth; a run without it fails).
    ``use_cot`` defaults to the template's value, else True (as autoevals).
    """
    template = load_template(template_name)
    cot = use_cot if use_cot is not None else template.use_cot if template.use_cot is not None else True
    schema = choice_schema(list(template.choice_scores), cot)

    def prompt(ctx: StepContext) -> str:
        values = dict(extra or {})
        if "input" in uses:
            values["input"] = get_user_message_from_run_input(ctx.run) or ""
        if "output" in uses:
            values["output"] = get_assistant_message_from_run_output(ctx.run) or ""
        if "expected" in uses:
            values["expected"] = _text(expected_value(ctx, spec.id))
        return render(template, values, cot)

    def score(ctx: StepContext) -> float:
        return template.choice_scores[_choice(ctx)]

    needs: set[Need] = {"output"} | ({"input"} if "input" in uses else set())
    if "expected" in uses:
        needs.add("ground_truth")
    return (
        spec.create_scorer(needs=needs, judge=judge, label=_choice)
        .analyze(
            {
                "description": "Choose one of the allowed choices",
                "output_schema": schema,
                "create_prompt": prompt,
            }
        )
        .generate_score(score)
    )


FACTUALITY = ScorerSpec(
    name="factuality",
    id="factuality",
    title="factuality",
    description="Checks the factual consistency of the output with the expected answer",
)


@register(FACTUALITY)
def create_factuality_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Factuality: is the output factually consistent with the expected answer."""
    return create_classifier_scorer(
        judge,
        FACTUALITY,
        template_name="factuality",
        uses=("input", "output", "expected"),
        use_cot=use_cot,
    )


SUMMARY = ScorerSpec(
    name="summary",
    id="summary",
    title="summary",
    description="Compares the output summary of the input with the expected summary",
)


@register(SUMMARY)
def create_summary_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Summary: is the output a better summary of the input than the expected one."""
    return create_classifier_scorer(
        judge,
        SUMMARY,
        template_name="summary",
        uses=("input", "output", "expected"),
        use_cot=use_cot,
    )


TRANSLATION = ScorerSpec(
    name="translation",
    id="translation",
    title="translation",
    description="Checks the output translation against the expected translation",
)


@register(TRANSLATION)
def create_translation_scorer(judge: Judge, language: str, use_cot: bool | None = None) -> Scorer:
    """autoevals Translation: does the output translate the input from ``language`` as expected."""
    if not language:
        raise ValueError("translation needs the source language")
    return create_classifier_scorer(
        judge,
        TRANSLATION,
        template_name="translation",
        uses=("input", "output", "expected"),
        extra={"language": language},
        use_cot=use_cot,
    )


HUMOR = ScorerSpec(
    name="humor",
    id="humor",
    title="humor",
    description="Judges whether the output is funny",
)


@register(HUMOR)
def create_humor_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Humor: is the output funny."""
    return create_classifier_scorer(
        judge,
        HUMOR,
        template_name="humor",
        uses=("output",),
        use_cot=use_cot,
    )


POSSIBLE = ScorerSpec(
    name="possible",
    id="possible",
    title="possible",
    description="Checks that the output offers a solution rather than calling the task impossible",
)


@register(POSSIBLE)
def create_possible_scorer(judge: Judge, use_cot: bool | None = None) -> Scorer:
    """autoevals Possible: does the output attempt the task instead of declaring it impossible."""
    return create_classifier_scorer(
        judge,
        POSSIBLE,
        template_name="possible",
        uses=("input", "output"),
        use_cot=use_cot,
    )
