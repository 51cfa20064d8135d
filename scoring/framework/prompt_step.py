"""Prompt-object steps: a scorer step answered by an LLM judge (Mastra's createScorer prompt mode).

A step given as a prompt object instead of a function::

    scorer = (
        create_scorer(id="relevance", description="…", judge=Judge("openai/gpt-4o-mini", "You grade."))
        .analyze({
            "description": "Judge each statement",
            "output_schema": Verdicts,                      # a pydantic model
            "create_prompt": lambda ctx: f"Judge:\\n{delimit('output', output_text(ctx.run))}",
        })
        .generate_score(lambda ctx: ctx.results["analyze_step_result"].fraction)
        .generate_reason({"description": "Explain", "create_prompt": lambda ctx: f"Why {ctx.score}?"})
    )

As in Mastra: ``preprocess`` and ``analyze`` prompt objects need ``output_schema`` and their result
is the validated model instance; a ``generate_score`` prompt object either has no schema (the judge
answers ``{"score": number}`` and the step result is that number) or has ``output_schema`` and
``calculate_score``, which turns the judge's answer into the score (Mastra's prompt mode); a
``generate_reason`` prompt object's result is the judge's text. ``create_prompt`` may be sync or
async. A step's own ``judge`` replaces the scorer's (``create_scorer(judge=...)``). The prompt sent
is recorded on the result (``analyze_prompt`` …) with the judge's model, tokens and cost.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from tracescore.scoring.framework.steps import StepContext, StepName, StepOutcome, result_key
from tracescore.scoring.judge import Judge, JudgeResult

PromptFn = Callable[[StepContext], str] | Callable[[StepContext], Awaitable[str]]
_KEYS = frozenset({"description", "output_schema", "create_prompt", "judge", "calculate_score"})


class ScoreAnswer(BaseModel):
    """What a ``generate_score`` prompt object asks the judge for."""

    score: float


@dataclass(frozen=True)
class PromptObject:
    """A step definition answered by a judge (the dict form takes the same keys)."""

    description: str
    create_prompt: PromptFn
    output_schema: type[BaseModel] | None = None
    judge: Judge | None = None
    # generate_score only, with output_schema: turns the judge's structured answer (given to it as
    # ``ctx.judged(Schema)``) into the number (Mastra's calculateScore).
    calculate_score: Callable[[StepContext], Any] | None = None


def as_prompt_object(definition: PromptObject | Mapping[str, Any]) -> PromptObject:
    """``definition`` as a ``PromptObject``; a mapping may hold only the ``PromptObject`` keys."""
    if isinstance(definition, PromptObject):
        return definition
    unknown = set(definition) - _KEYS
    if unknown:
        raise ValueError(f"unknown prompt object keys {sorted(unknown)}; use {sorted(_KEYS)}")
    if "description" not in definition or "create_prompt" not in definition:
        raise ValueError("a prompt object needs 'description' and 'create_prompt'")
    return PromptObject(**definition)


@dataclass(frozen=True)
class PromptStep:
    """A pipeline step that renders a prompt and asks a judge (implements
    ``scoring.framework.steps.Step``)."""

    name: StepName
    definition: PromptObject
    judge: Judge

    @classmethod
    def build(
        cls, name: StepName, definition: PromptObject | Mapping[str, Any], default_judge: Judge | None
    ) -> PromptStep:
        """Check the definition for ``name`` once, when the scorer is built, not at run time."""
        prompt_object = as_prompt_object(definition)
        if not callable(prompt_object.create_prompt):
            raise ValueError(f"{name}: create_prompt must be a function")
        has_schema = prompt_object.output_schema is not None
        schema = prompt_object.output_schema
        schema_is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        if prompt_object.calculate_score is not None and name != "generate_score":
            raise ValueError(f"{name}: calculate_score belongs to generate_score only")
        if name in ("preprocess", "analyze"):
            if not schema_is_model:
                raise ValueError(f"{name}: a prompt object needs output_schema, a pydantic model")
        elif name == "generate_score" and (has_schema or prompt_object.calculate_score is not None):
            # Mastra's prompt-mode generateScore: a schema for the judge's answer and a function
            # that turns that answer into the score; both or neither (then the judge answers {score}).
            if not schema_is_model or not callable(prompt_object.calculate_score):
                raise ValueError(
                    "generate_score: a prompt object with output_schema needs calculate_score, and the other"
                    " way round (output_schema must be a pydantic model)"
                )
        elif has_schema:
            raise ValueError(
                f"{name}: a prompt object takes no output_schema (the judge answers "
                + ("a number)" if name == "generate_score" else "text)")
            )
        judge = prompt_object.judge or default_judge
        if judge is None:
            raise ValueError(f"{name}: a prompt object needs a judge (create_scorer(judge=...) or its own)")
        return cls(name, prompt_object, judge)

    async def execute(self, context: StepContext, run_chars: int) -> StepOutcome:
        """Render the prompt and ask the judge (on the event loop: the judge call is I/O, whatever
        the run's size)."""
        prompt = self.definition.create_prompt(context)
        if inspect.isawaitable(prompt):
            prompt = await prompt
        if not isinstance(prompt, str):
            raise TypeError(f"create_prompt returned {type(prompt).__name__}, not a string")
        result: JudgeResult[Any]
        if self.name == "generate_score" and self.definition.calculate_score is not None:
            assert self.definition.output_schema is not None  # checked in build()
            result = await self.judge.structured(prompt, self.definition.output_schema)
            answer = replace(context, results={**context.results, result_key("generate_score"): result.value})
            value: Any = self.definition.calculate_score(answer)
            if inspect.isawaitable(value):
                value = await value
        elif self.name == "generate_score":
            result = await self.judge.structured(prompt, ScoreAnswer)
            value = result.value.score
        elif self.name == "generate_reason":
            result = await self.judge.text(prompt)
            value = result.value
        else:
            assert self.definition.output_schema is not None  # checked in build()
            result = await self.judge.structured(prompt, self.definition.output_schema)
            value = result.value
        return StepOutcome(value, prompt=prompt)
