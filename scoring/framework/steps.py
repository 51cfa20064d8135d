"""The steps of a scorer pipeline: what a step sees (``StepContext``), what it returns, and function steps.

A scorer runs up to four steps in order -- preprocess, analyze, generate_score, generate_reason --
each a function (``FunctionStep``, here) or a prompt object answered by a judge
(``scoring.framework.prompt_step``). Each step sees the run and the results of the steps before it, read
through typed accessors::

    def generate_score(ctx: StepContext) -> float:
        return ctx.analyzed(Verdicts).fraction  # raises StepResultError if analyze gave no Verdicts
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.step_workers import step_workers

StepName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]
STEP_ORDER: tuple[StepName, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")
# ``ground_truth``: the run must carry one (evals and backfills do; live traces never do).
Need = Literal["input", "output", "context", "ground_truth"]
NEEDS: frozenset[Need] = frozenset({"input", "output", "context", "ground_truth"})
# What a scorer reads unless it says otherwise: the user's input text and the agent's output text.
DEFAULT_NEEDS: frozenset[Need] = frozenset({"input", "output"})

T = TypeVar("T")

# Runs under this many characters of text are small: a text comparison on one takes milliseconds
# (textual-difference at 20,000 characters: about 2 ms of CPU, measured), so nothing is left to stop.
SMALL_RUN_CHARS = 20_000
# On runs under this many characters a heavy step runs on the event loop itself (``loop_below_chars``)
# when its cost grows with the square of the text (LCS, Levenshtein, matching every pair of list
# items): at 8,000 characters such a step takes 0.1-0.3 ms, measured, no more than the hop to a
# thread and back costs (~0.1 ms), and a thread would hold the interpreter lock while it ran anyway.
# A step linear in its text stays under ~0.5 ms up to SMALL_RUN_CHARS, and runs on the loop up to
# there.
QUADRATIC_LOOP_CHARS = 8_000


def result_key(step: StepName) -> str:
    """The key of a step's result in ``StepContext.results`` (Mastra's ``analyzeStepResult``, snake_case)."""
    return f"{step}_step_result"


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


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """A step's value; for a prompt-object step also the prompt it sent."""

    value: Any
    prompt: str | None = None


class Step(Protocol):
    """One pipeline step: a ``FunctionStep`` or a prompt-object ``PromptStep`` (LLM judge)."""

    @property
    def name(self) -> StepName: ...

    async def execute(self, context: StepContext) -> StepOutcome: ...


StepFn = Callable[[StepContext], Any] | Callable[[StepContext], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class FunctionStep:
    """A step backed by a sync or async function; ``heavy`` sync functions run in a worker process
    (``scoring.framework.step_workers``), where a timeout stops them.

    A heavy step whose cost is bounded by its input may run closer: in a thread on runs under
    ``inline_below_chars`` characters, and right on the event loop on runs under
    ``loop_below_chars`` (where the step costs less than the thread hop would, ~0.1 ms).
    """

    name: StepName
    fn: StepFn
    heavy: bool = False
    inline_below_chars: int = 0  # a heavy step bounded by its input runs in a thread on smaller runs
    loop_below_chars: int = 0  # ... and on the event loop on runs smaller than this

    def on_loop(self, run_chars: Callable[[], int]) -> bool:
        """Whether the step runs on the event loop itself for a run of ``run_chars()`` characters
        (else ``execute`` sends it to a thread or a worker process)."""
        return not self.heavy or (self.loop_below_chars > 0 and run_chars() < self.loop_below_chars)

    async def execute(self, context: StepContext) -> StepOutcome:
        run = context.run
        if self.on_loop(run.text_chars):
            value = self.fn(context)
        elif self.inline_below_chars and run.text_chars() < self.inline_below_chars:
            value = await step_workers().in_thread(self.fn, context)
        else:
            # Off the event loop and its interpreter lock, in a worker process that is killed if
            # the scorer's timeout fires while it runs.
            value = await step_workers().run(self.fn, context)
        if inspect.isawaitable(value):
            value = await value
        return StepOutcome(value)
