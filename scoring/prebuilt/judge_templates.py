"""An LLM judge as a template: its prompt files, its answer models and its steps are data
(``JudgeTemplate``), and one pipeline turns a template into a scorer (``JudgeTemplate.scorer``).

A judge is declared once, beside its factory::

    FAITHFULNESS = JudgeTemplate(
        ScorerSpec(name="faithfulness", ...),
        __package__,
        "faithfulness",  # prompts/faithfulness/{instructions,extract,analyze,reason}.txt
        extract=Ask("Extract relevant statements from the LLM output", Claims),
        analyze=Ask("Score the relevance of the statements to the input", FaithfulnessVerdicts),
        reason=Ask("Reason about the results"),
    )

    @register(FAITHFULNESS.spec)
    def create_faithfulness_scorer(judge: Judge, scale: float = 1) -> Scorer:
        return FAITHFULNESS.scorer(
            judge,
            scale=scale,
            needs={"output"},
            # extract.txt has only {{output}}, the pipeline's: it needs no fill
            analyze=lambda ctx: {"claims": ..., "claim_count": ..., "context": ...},
            score=lambda ctx: verdict_share(...),
            reason=lambda ctx: {"verdicts": ..., "context": ...},
        )

The pipeline: the judge answers with the template's ``instructions`` file as its system
instructions; each ``Ask`` of the template is a prompt-object step -- ``extract`` the preprocess
step, then ``analyze``, and ``reason`` the generate_reason step -- whose prompt is its file rendered
with the values the factory's fill for that step returns (sync or async; a step whose file has only
standard placeholders needs none). The placeholders every judge means the same by are the
pipeline's unless the fill gives them: ``{{input}}`` (the user's
message) and ``{{output}}`` (the agent's answer), each in data markers, ``{{score}}`` and
``{{scale}}`` (as JavaScript prints numbers). A fill returns ``PromptFile(name, ...)`` instead when
the step sends another file of the template on some runs. Steps that are code (an embedding, a
reason written without the judge) are chained onto the scorer the pipeline returns.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import cast

from pydantic import BaseModel

from tracescore.scoring.framework.prompt_step import PromptFn, PromptObject
from tracescore.scoring.framework.prompt_templates import PROMPTS_FOLDER, SUFFIX, PromptTemplate, load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import Need, StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, js_number, user_text
from tracescore.scoring.prebuilt.registry import ScorerSpec


@dataclass(frozen=True)
class PromptFile:
    """Another prompt file of the template, and the values of its placeholders."""

    name: str
    values: Mapping[str, str] = field(default_factory=dict)


Filled = Mapping[str, str] | PromptFile
# What a factory gives for one of its template's asks: the values of the step's prompt file, or
# another file of the template and its values.
Fill = Callable[[StepContext], Filled] | Callable[[StepContext], Awaitable[Filled]]
ScoreFn = Callable[[StepContext], float]

# The placeholders every judge means the same by, from the step's context and the scorer's scale.
STANDARD_VALUES: Mapping[str, Callable[[StepContext, float], str]] = {
    "input": lambda ctx, _: delimit("input", user_text(ctx.run)),
    "output": lambda ctx, _: delimit("output", answer_text(ctx.run)),
    "score": lambda ctx, _: js_number(ctx.score),
    "scale": lambda _, scale: js_number(scale),
}


@dataclass(frozen=True)
class Ask:
    """One judge call of a template: what the step does, the model of the judge's answer (None: the
    judge answers in text, as a reason) and the prompt file (by default the step's own)."""

    description: str
    answer: type[BaseModel] | None = None
    prompt: str | None = None


@dataclass(frozen=True)
class JudgeTemplate:
    """A judge as data: what it is called, where its prompts are (``prompts/<folder>/`` of
    ``package``) and the judge calls of its steps."""

    spec: ScorerSpec
    package: str | None  # the judge module's ``__package__``
    folder: str
    extract: Ask | None = None
    analyze: Ask | None = None
    reason: Ask | None = None
    # The file of the judge's system instructions (None: the judge gets none of its own).
    instructions_file: str | None = "instructions"

    @property
    def instructions(self) -> str:
        """The judge's system instructions."""
        return "" if self.instructions_file is None else self.prompt(self.instructions_file).render()

    def instructed(self, judge: Judge) -> Judge:
        """``judge`` answering with this template's instructions (for the steps' own judge calls)."""
        return replace(judge, instructions=self.instructions)

    @property
    def prompt_texts(self) -> tuple[str, ...]:
        """The text of every prompt file of the template (includes resolved), by file name: what the
        scorer's version is derived from, whichever file a run sends."""
        folder = resources.files(self.package or "").joinpath(PROMPTS_FOLDER, *self.folder.split("/"))
        names = sorted(f.name.removesuffix(SUFFIX) for f in folder.iterdir() if f.name.endswith(SUFFIX))
        return tuple(self.prompt(name).text for name in names)

    def prompt(self, name: str) -> PromptTemplate:
        """The template's prompt file ``name`` (``prompts/<folder>/<name>.txt``)."""
        return load_prompt(self.package, f"{self.folder}/{name}")

    def _render(self, ctx: StepContext, filled: Filled, step_file: str, scale: float) -> str:
        """The prompt of a step: ``filled``'s file (``step_file`` for values alone) with its values,
        and the pipeline's for the standard placeholders the values leave out."""
        name, values = (filled.name, filled.values) if isinstance(filled, PromptFile) else (step_file, filled)
        prompt = self.prompt(name)
        standard = {
            key: STANDARD_VALUES[key](ctx, scale)
            for key in prompt.variables - values.keys()
            if key in STANDARD_VALUES
        }
        return prompt.render(**values, **standard)

    def scorer(
        self,
        judge: Judge,
        *,
        needs: Iterable[Need],
        score: ScoreFn,
        scale: float = 1.0,
        description: str | None = None,
        extract: Fill | None = None,
        analyze: Fill | None = None,
        reason: Fill | None = None,
    ) -> Scorer:
        """The scorer of this template: a fill for each of its asks, and the score of the answers.

        A ``scale`` of 0 is the default 1 (Mastra's ``options?.scale || 1``); ``description`` says
        more than the spec's when the options change what the scorer does.
        """
        scale = scale or 1
        built = self.spec.create_scorer(
            description=description,
            scale=scale,
            needs=frozenset(needs),
            judge=self.instructed(judge),
        ).with_prompts(*self.prompt_texts)
        if step := self._step(self.extract, extract, "extract", scale):
            built = built.preprocess(step)
        if step := self._step(self.analyze, analyze, "analyze", scale):
            built = built.analyze(step)
        built = built.generate_score(score)
        if step := self._step(self.reason, reason, "reason", scale):
            built = built.generate_reason(step)
        return built

    def _step(self, ask: Ask | None, fill: Fill | None, role: str, scale: float) -> PromptObject | None:
        """The prompt object of one ask (None when the template has no such ask). Without a fill,
        every placeholder of the step's file must be a standard one."""
        if ask is None:
            if fill is not None:
                raise ValueError(f"judge {self.spec.name!r} has no {role} ask to fill")
            return None
        step_file = ask.prompt or role
        if fill is None:
            own = self.prompt(step_file).variables - STANDARD_VALUES.keys()
            if own:
                raise ValueError(
                    f"judge {self.spec.name!r}: the {role} prompt needs a fill for {sorted(own)}"
                )
            fill = _no_values
        return PromptObject(
            ask.description, self._prompt_fn(fill, step_file, scale), output_schema=ask.answer
        )

    def _prompt_fn(self, fill: Fill, step_file: str, scale: float) -> PromptFn:
        """The step's ``create_prompt``: ``fill``'s values rendered, async when ``fill`` is."""
        if inspect.iscoroutinefunction(fill):
            awaited = cast(Callable[[StepContext], Awaitable[Filled]], fill)

            async def create_prompt_async(ctx: StepContext) -> str:
                return self._render(ctx, await awaited(ctx), step_file, scale)

            return create_prompt_async
        immediate = cast(Callable[[StepContext], Filled], fill)
        return lambda ctx: self._render(ctx, immediate(ctx), step_file, scale)


def _no_values(ctx: StepContext) -> Filled:
    return {}
