"""The scorer pipeline: ``create_scorer`` and its preprocess -> analyze -> score -> reason steps.

A Python mirror of Mastra's ``createScorer``::

    from scoring import create_scorer
    from scoring.text import output_text

    scorer = (
        create_scorer(id="answer-length", description="Longer answers score higher")
        .preprocess(lambda ctx: {"length": len(output_text(ctx.run))})
        .generate_score(lambda ctx: min(1.0, ctx.results["preprocess_step_result"]["length"] / 500))
        .generate_reason(lambda ctx: f"score {ctx.score:.2f} from the answer length")
    )
    result = await scorer.run(run)  # an AgentRun, or a dict of the same shape

A step may also be a prompt object answered by an LLM judge (``create_scorer(judge=...)``); see
``scoring.prompt_step``.

Each step receives a ``StepContext`` with ``run`` and ``results`` (``preprocess_step_result``,
``analyze_step_result``; for ``generate_reason`` also ``score``). Steps may be sync or async.

Threads: a sync step runs inline on the event loop, so it must be cheap. Declare a CPU-heavy sync
step with ``heavy=True`` and it runs through ``asyncio.to_thread``, keeping the loop responsive.
(A thread cannot be cancelled: when the executor's timeout fires, the thread finishes on its own.)

A scorer is an immutable builder: each chained call returns a new scorer and the scorer keeps no
per-run state, so one instance may score many runs concurrently.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import to_jsonable_python

from schemas import AgentRun, Score
from scoring.judge import Judge, JudgeUsage, metered
from scoring.prompt_step import PromptObject, PromptStep

StepName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]
# ``ground_truth``: the run must carry one (evals and backfills do; live traces never do).
Need = Literal["input", "output", "context", "ground_truth"]
# What a scorer reads unless it says otherwise: the user's input text and the agent's output text.
DEFAULT_NEEDS: frozenset[Need] = frozenset({"input", "output"})
STEP_ORDER: tuple[StepName, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")


class ScorerError(Exception):
    """A scorer could not produce a score; names the scorer and the step that failed."""

    def __init__(self, scorer_id: str, step: str | None, message: str) -> None:
        where = f"scorer {scorer_id!r}" + (f", step {step!r}" if step else "")
        super().__init__(f"{where}: {message}")
        self.scorer_id = scorer_id
        self.step = step


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a step sees. Readable as attributes (``ctx.run``) or keys (``ctx["run"]``)."""

    run: AgentRun
    results: Mapping[str, Any]
    score: float | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in ("run", "results", "score"):
            raise KeyError(key)
        return getattr(self, key)


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
# A function, or a prompt object (``PromptObject`` or a dict of its keys) answered by a judge.
StepDef = StepFn | PromptObject | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class FunctionStep:
    """A step backed by a sync or async function; ``heavy`` sync functions run in a thread."""

    name: StepName
    fn: StepFn
    heavy: bool = False

    async def execute(self, context: StepContext) -> StepOutcome:
        if self.heavy:
            value = await asyncio.to_thread(self.fn, context)
        else:
            value = self.fn(context)
        if inspect.isawaitable(value):
            value = await value
        return StepOutcome(value)


class ScorerResult(BaseModel):
    """The outcome of one scorer run (Mastra's run result, snake_case)."""

    model_config = ConfigDict(frozen=True)

    scorer_id: str
    run_id: str
    score: float
    reason: str | None = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    # Filled by prompt-object (LLM judge) steps; None for function steps.
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    # Usage summed over every judge call of the run, prompt-object steps and the steps' own code
    # alike (distinct models comma-joined, in first-use order).
    judge_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def step_results(self) -> dict[str, Any]:
        """The step results as JSON-safe data (non-finite floats become null)."""
        raw = {
            "preprocess_step_result": self.preprocess_step_result,
            "analyze_step_result": self.analyze_step_result,
        }
        data = to_jsonable_python(raw, inf_nan_mode="null", fallback=repr)
        return {key: value for key, value in data.items() if value is not None}

    def to_score(self, name: str | None = None, *, scale: float = 1.0) -> Score:
        """This result as a ``schemas.Score`` (raises if the score lies outside [0, scale])."""
        return Score(
            name=name or self.scorer_id,
            value=self.score,
            reason=self.reason,
            scale=scale,
            metadata=self.step_results(),
        )


def _check_score(scorer_id: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ScorerError(
            scorer_id, "generate_score", f"returned {value!r} ({type(value).__name__}), not a number"
        )
    score = float(value)
    if not math.isfinite(score):
        raise ScorerError(scorer_id, "generate_score", f"returned {score!r}, not a finite number")
    return score


@dataclass(frozen=True)
class Scorer:
    """A configured scorer pipeline. Build it with ``create_scorer``; run it with ``await run(...)``."""

    id: str
    description: str
    name: str
    type: str = "agent"
    steps: tuple[Step, ...] = field(default=())
    # The run content the scorer reads. A run that lacks one (capture off, redacted) is not scored:
    # the executor records ``skipped_empty`` instead of scoring empty strings.
    needs: frozenset[Need] = DEFAULT_NEEDS
    # The default judge of prompt-object steps (a step's own judge replaces it).
    judge: Judge | None = None

    def missing_needs(self, run: AgentRun) -> list[Need]:
        """The needed pieces of content this run does not have."""
        truth = run.ground_truth
        present = {
            "input": any(m.content.strip() for m in run.input.input_messages),
            "output": any(m.content.strip() for m in run.output),
            "context": any(c.strip() for c in run.context),
            "ground_truth": truth is not None and not (isinstance(truth, str) and not truth.strip()),
        }
        return sorted(need for need in self.needs if not present[need])

    def preprocess(self, fn: StepDef, *, heavy: bool = False) -> Scorer:
        """A new scorer with this preprocess step (replacing any earlier one)."""
        return self._with_step("preprocess", fn, heavy)

    def analyze(self, fn: StepDef, *, heavy: bool = False) -> Scorer:
        return self._with_step("analyze", fn, heavy)

    def generate_score(self, fn: StepDef, *, heavy: bool = False) -> Scorer:
        return self._with_step("generate_score", fn, heavy)

    def generate_reason(self, fn: StepDef, *, heavy: bool = False) -> Scorer:
        return self._with_step("generate_reason", fn, heavy)

    def _with_step(self, name: StepName, fn: StepDef, heavy: bool) -> Scorer:
        new_step: Step
        if isinstance(fn, PromptObject | Mapping):
            if heavy:
                raise ValueError(f"{name} of scorer {self.id!r}: heavy=True is for function steps")
            try:
                new_step = PromptStep.build(name, fn, self.judge)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"scorer {self.id!r}: {exc}") from exc
        elif callable(fn):
            if heavy and inspect.iscoroutinefunction(fn):
                raise ValueError(
                    f"{name} of scorer {self.id!r}: heavy=True is for sync functions, not async ones"
                )
            new_step = FunctionStep(name, fn, heavy)
        else:
            raise TypeError(
                f"{name} of scorer {self.id!r} must be a function or a prompt object, got {type(fn).__name__}"
            )
        kept = [step for step in self.steps if step.name != name]
        steps = sorted([*kept, new_step], key=lambda step: STEP_ORDER.index(step.name))
        return replace(self, steps=tuple(steps))

    async def run(self, run: AgentRun | Mapping[str, Any]) -> ScorerResult:
        """Score one run. Raises ``ScorerError`` naming the step when a step fails."""
        agent_run = self._as_run(run)
        if not any(step.name == "generate_score" for step in self.steps):
            raise ScorerError(self.id, "generate_score", "the scorer has no generate_score step")
        with metered() as usage:
            results, prompts, score = await self._run_steps(agent_run)
        run_id = agent_run.run_id if (agent_run.trace_id or agent_run.span_id) else str(uuid.uuid4())
        return ScorerResult(
            scorer_id=self.id,
            run_id=run_id,
            score=score,
            reason=results.get("generate_reason_step_result"),
            preprocess_step_result=results.get("preprocess_step_result"),
            analyze_step_result=results.get("analyze_step_result"),
            **_usage_fields(usage),
            **prompts,
        )

    async def _run_steps(self, agent_run: AgentRun) -> tuple[dict[str, Any], dict[str, str], float]:
        results: dict[str, Any] = {}
        prompts: dict[str, str] = {}
        score: float | None = None
        for step in self.steps:
            visible = dict(results)
            if step.name == "generate_reason":
                visible["score"] = score
            try:
                outcome = await step.execute(StepContext(run=agent_run, results=visible, score=score))
            except Exception as exc:  # re-raised with the scorer and the step named
                raise ScorerError(self.id, step.name, f"{type(exc).__name__}: {exc}") from exc
            if step.name == "generate_score":
                score = _check_score(self.id, outcome.value)
            if (
                step.name == "generate_reason"
                and outcome.value is not None
                and not isinstance(outcome.value, str)
            ):
                raise ScorerError(
                    self.id, step.name, f"returned {type(outcome.value).__name__}, not a string"
                )
            results[f"{step.name}_step_result"] = outcome.value
            if outcome.prompt is not None:
                prompts[f"{step.name}_prompt"] = outcome.prompt
        if score is None:  # unreachable: generate_score ran (checked in run) or raised
            raise ScorerError(self.id, "generate_score", "produced no score")
        return results, prompts, score

    def _as_run(self, run: AgentRun | Mapping[str, Any]) -> AgentRun:
        if isinstance(run, AgentRun):
            return run
        try:
            return AgentRun.model_validate(run)
        except ValidationError as exc:
            raise ScorerError(self.id, None, f"the run is not a valid AgentRun: {exc}") from exc


def _usage_fields(usage: JudgeUsage) -> dict[str, Any]:
    return {
        "judge_model": ",".join(usage.models) or None,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd,
    }


def create_scorer(
    *,
    id: str,
    description: str,
    name: str | None = None,
    type: str = "agent",
    needs: frozenset[Need] | set[Need] | tuple[Need, ...] = DEFAULT_NEEDS,
    judge: Judge | None = None,
) -> Scorer:
    """Start a scorer pipeline (Mastra's ``createScorer``); add steps by chaining.

    ``needs`` names the run content the scorer reads (``input``, ``output``, ``context``,
    ``ground_truth``); runs without it are skipped (decision ``skipped_empty``) rather than
    scored on empty text.
    ``judge`` answers the prompt-object steps that have no judge of their own.
    """
    if not id:
        raise ValueError("a scorer needs an id")
    if type != "agent":
        raise ValueError(f"scorer type {type!r} is not supported (only 'agent')")
    unknown = set(needs) - {"input", "output", "context", "ground_truth"}
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; use input, output, context, ground_truth")
    return Scorer(
        id=id, description=description, name=name or id, type=type, needs=frozenset(needs), judge=judge
    )
