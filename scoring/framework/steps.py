"""The steps of a scorer pipeline: what a step sees (``StepContext``), what it returns, and function steps.

A scorer runs up to four steps in order -- preprocess, analyze, generate_score, generate_reason --
each a function (``FunctionStep``, here) or a prompt object answered by a judge
(``scoring.framework.prompt_step``). Each step sees the run and the results of the steps before it, read
through typed accessors::

    def generate_score(ctx: StepContext) -> float:
        return ctx.analyzed(Verdicts).fraction  # raises StepResultError if analyze gave no Verdicts
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.step_placement import Place, StepCost, size_class
from tracescore.scoring.framework.step_workers import step_workers

StepName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]
STEP_ORDER: tuple[StepName, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")
# ``ground_truth``: the run must carry one (evals and backfills do; live traces never do).
Need = Literal["input", "output", "context", "ground_truth"]
NEEDS: frozenset[Need] = frozenset({"input", "output", "context", "ground_truth"})
# What a scorer reads unless it says otherwise: the user's input text and the agent's output text.
DEFAULT_NEEDS: frozenset[Need] = frozenset({"input", "output"})

T = TypeVar("T")


def result_key(step: StepName) -> str:
    """The key of a step's result in ``StepContext.results`` (Mastra's ``analyzeStepResult``, snake_case)."""
    return f"{step}_step_result"


# What the first step sees: no results yet (shared, read-only: a step cannot change it).
NO_RESULTS: Mapping[str, Any] = MappingProxyType({})


class StepResultError(TypeError):
    """A step read an earlier step's result that is missing or of another type than it expects."""


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a step sees: the run, the earlier steps' results and (for generate_reason) the score.

    Read results with the typed accessors (``ctx.preprocessed(dict)``, ``ctx.analyzed(Verdicts)``);
    ``ctx.results`` holds them by key for steps written against Mastra's shape, and ``ctx["run"]``
    reads like Mastra's destructured context.
    """

    run: AgentRun
    results: Mapping[str, Any]
    score: float | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in ("run", "results", "score"):
            raise KeyError(key)
        return getattr(self, key)

    def result(self, step: StepName, kind: type[T]) -> T:
        """The result of ``step`` as a ``kind``; raises ``StepResultError`` when it is not one."""
        value = self.results.get(result_key(step))
        if not isinstance(value, kind):
            raise StepResultError(f"the {step} step's result is {type(value).__name__}, not {kind.__name__}")
        return value

    def maybe(self, step: StepName, kind: type[T]) -> T | None:
        """The result of ``step`` as a ``kind``, or None when the step gave None (or has not run)."""
        if self.results.get(result_key(step)) is None:
            return None
        return self.result(step, kind)

    def preprocessed(self, kind: type[T]) -> T:
        """The preprocess step's result as a ``kind``."""
        return self.result("preprocess", kind)

    def analyzed(self, kind: type[T]) -> T:
        """The analyze step's result as a ``kind``."""
        return self.result("analyze", kind)

    def judged(self, kind: type[T]) -> T:
        """In a prompt object's ``calculate_score``: the judge's answer to generate_score, as a ``kind``."""
        return self.result("generate_score", kind)

    def scored(self) -> float:
        """The score, in a generate_reason step (raises ``StepResultError`` before generate_score)."""
        if self.score is None:
            raise StepResultError("there is no score before the generate_score step")
        return self.score


class StepOutcome(NamedTuple):
    """A step's value; for a prompt-object step also the prompt it sent."""

    value: Any
    prompt: str | None = None


class Step(Protocol):
    """One pipeline step: a ``FunctionStep`` or a prompt-object ``PromptStep`` (LLM judge)."""

    @property
    def name(self) -> StepName: ...

    async def execute(self, context: StepContext, run_chars: int) -> StepOutcome:
        """The step's value on ``context``; ``run_chars``, the run's characters of text, tells a
        function step where to run."""
        ...


StepFn = Callable[[StepContext], Any] | Callable[[StepContext], Awaitable[Any]]

# What step functions return almost always: values of these types are never awaitable, and a
# set lookup is a tenth of ``inspect.isawaitable``'s cost on them (its ABC check).
_PLAIN_TYPES = frozenset({float, int, str, bool, dict, list, tuple, type(None)})


def maybe_awaitable(value: object) -> bool:
    """Whether a sync step's value is awaitable (a coroutine the step handed back)."""
    return type(value) not in _PLAIN_TYPES and inspect.isawaitable(value)


@dataclass(frozen=True, slots=True)
class FunctionStep:
    """A step backed by a sync or async function.

    An async function runs on the event loop. A sync one runs where its measured cost puts it
    (``scoring.framework.step_placement``): on the loop, in a thread or in a worker process. A sync
    step declared ``killable`` always runs in a worker process, which the scorer's timeout kills.
    """

    name: StepName
    fn: StepFn
    killable: bool = False
    # How long the step has taken, by size of run: where it runs next (shared by every run of the
    # scorer; a measurement, never a result).
    cost: StepCost = field(default_factory=StepCost, compare=False, repr=False)
    is_async: bool = field(init=False, compare=False, repr=False)
    # A sync step that is not killable: it runs right on the loop once measured cheap.
    maybe_here: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.fn))
        object.__setattr__(self, "maybe_here", not (self.is_async or self.killable))

    def runs_here(self, size: int) -> bool:
        """Whether the step runs right here on the loop on a run of size class ``size``: a sync step
        (not ``killable``) measured cheap at that size."""
        return self.maybe_here and size in self.cost.loop_sizes

    def call_here(self, context: StepContext, size: int) -> Any:
        """The step's value, called right here on the loop; a sampled run is timed (the time places
        its next runs). A sync function may hand back a coroutine: the caller awaits it
        (``maybe_awaitable``)."""
        if not self.cost.sampled():
            return self.fn(context)
        started = time.perf_counter()
        value = self.fn(context)
        self.cost.record(size, time.perf_counter() - started)
        return value

    async def execute(self, context: StepContext, run_chars: int) -> StepOutcome:
        if self.is_async:
            return StepOutcome(await self.fn(context))
        size = size_class(run_chars)
        if self.runs_here(size):
            value = self.call_here(context, size)
        else:
            value, seconds = await self._off_the_loop(context, size)
            self.cost.record(size, seconds)
        if maybe_awaitable(value):
            value = await value
        return StepOutcome(value)

    async def _off_the_loop(self, context: StepContext, size: int) -> tuple[Any, float]:
        place = Place.WORKER if self.killable else self.cost.place(size)
        workers = step_workers()
        started = time.perf_counter()
        try:
            if place is Place.THREAD:
                return await workers.in_thread(self.fn, context)
            return await workers.run(self.fn, context)
        except asyncio.CancelledError:  # the scorer timed out: the step took at least this long
            self.cost.record(size, time.perf_counter() - started)
            raise
