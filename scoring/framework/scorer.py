"""The scorer pipeline: ``create_scorer`` and its preprocess -> analyze -> score -> reason steps.

A Python mirror of Mastra's ``createScorer``::

    from tracescore.scoring import create_scorer
    from tracescore.scoring.framework.message_text import output_text

    scorer = (
        create_scorer(id="answer-length", description="Longer answers score higher")
        .preprocess(lambda ctx: {"length": len(output_text(ctx.run))})
        .generate_score(lambda ctx: min(1.0, ctx.preprocessed(dict)["length"] / 500))
        .generate_reason(lambda ctx: f"score {ctx.score:.2f} from the answer length")
    )
    result = await scorer.run(run)  # an AgentRun, or a dict of the same shape

A step may also be a prompt object answered by an LLM judge (``create_scorer(judge=...)``); see
``scoring.framework.prompt_step``.

Each step receives a ``StepContext`` (``scoring.framework.steps``): the run, the earlier steps' results
through
typed accessors (``ctx.preprocessed(dict)``, ``ctx.analyzed(Verdicts)``) and, in generate_reason,
``ctx.score``. Steps may be sync or async. The score must be a finite number in [0, ``scale``];
anything else fails the run with a ``ScorerError`` naming the value, so it is never stored.

Where steps run is measured, not declared: an async step runs on the event loop; a sync step runs
on the loop while it is measured cheap at the run's size, and in a worker process
(``scoring.framework.step_workers``, off the loop and its interpreter lock) once it is measured
slow, where the scorer's timeout kills the worker and the work stops; a size it has not run at
yet is tried in a thread (``scoring.framework.step_placement``). So a sync step must be a function of
what it sees: return its result rather than change shared state. A step whose running time its
input does not bound (a user's regular expression, a solver) declares ``killable=True`` and always
runs in a worker process: a step that never returns gives no measurement, and a thread cannot be
stopped.

A scorer is an immutable builder: each chained call returns a new scorer and the scorer keeps no
per-run state, so one instance may score many runs concurrently.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from tracescore.schemas import AgentRun
from tracescore.schemas.errors import TracescoreError, is_retriable
from tracescore.scoring.framework.prompt_step import PromptObject, PromptStep
from tracescore.scoring.framework.scorer_result import NO_JUDGE, JudgeDetails
from tracescore.scoring.framework.scorer_result import ScorerResult as ScorerResult  # its home before
from tracescore.scoring.framework.step_placement import size_class
from tracescore.scoring.framework.steps import (
    DEFAULT_NEEDS,
    NEEDS,
    NO_RESULTS,
    STEP_ORDER,
    FunctionStep,
    Need,
    Step,
    StepContext,
    StepFn,
    StepName,
    maybe_awaitable,
    result_key,
)
from tracescore.scoring.judge import Judge, JudgeUsage, metered

# A step: a function, or a prompt object (``PromptObject`` or a dict of its keys) answered by a judge.
StepDef = StepFn | PromptObject | Mapping[str, Any]
# The label of a scored run (a classifier's choice, a check's pass/fail), from its score and results.
LabelFn = Callable[[StepContext], str | None]


class ScorerError(TracescoreError):
    """A scorer could not produce a score; names the scorer and the step that failed.

    ``retriable`` is the cause's: a judge that stayed unavailable may answer later, a step that
    raised on this run's data will raise again.
    """

    def __init__(
        self, scorer_id: str, step: str | None, message: str, *, retriable: bool | None = None
    ) -> None:
        where = f"scorer {scorer_id!r}" + (f", step {step!r}" if step else "")
        super().__init__(f"{where}: {message}", retriable=retriable)
        self.scorer_id = scorer_id
        self.step = step
        self.reason = message


_RESULT_KEYS: dict[StepName, str] = {name: result_key(name) for name in STEP_ORDER}
_REASON_KEY = _RESULT_KEYS["generate_reason"]
_PREPROCESS_KEY = _RESULT_KEYS["preprocess"]
_ANALYZE_KEY = _RESULT_KEYS["analyze"]


def _check_score(scorer_id: str, value: Any, scale: float) -> float:
    """The step's value as a score in [0, scale], or a ``ScorerError`` naming the value: the one
    check of a score's range in the pipeline (a ``ScorerResult`` holds only scores that passed it)."""
    # The common case first, without the ABC check of ``numbers.Real`` (a tenth of a heuristic
    # scorer's run): a float or int in range (NaN fails the comparison and goes the long way).
    if type(value) is float or type(value) is int:
        score = float(value)
        if 0.0 <= score <= scale:
            return score
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ScorerError(
            scorer_id, "generate_score", f"returned {value!r} ({type(value).__name__}), not a number"
        )
    score = float(value)
    if not math.isfinite(score):
        raise ScorerError(scorer_id, "generate_score", f"returned {score!r}, not a finite number")
    if not 0.0 <= score <= scale:
        raise ScorerError(
            scorer_id, "generate_score", f"returned {value!r}, outside its scale [0, {scale:g}]"
        )
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
    # Scores lie in [0, scale]; a step returning anything else fails the run.
    scale: float = 1.0
    # The scored run's label, from the context after generate_score (None: the scorer has no labels).
    label: LabelFn | None = None
    # The version of the scorer's code, declared (None: derived from its factory's module source);
    # its stored version adds a hash of its configuration (``scoring.runtime.scorer_version``).
    version: str | None = None
    # The text of the prompt templates its judge steps render (before their values are filled in):
    # part of its derived version, so that an edit of a template changes it.
    prompts: tuple[str, ...] = ()

    @property
    def judge_models(self) -> frozenset[str]:
        """The models of the judges its prompt steps ask (and of its default judge); a scorer whose
        own code calls a judge may use others."""
        judges = [step.judge for step in self.steps if isinstance(step, PromptStep)]
        if self.judge is not None:
            judges.append(self.judge)
        return frozenset(judge.model for judge in judges)

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

    def with_prompts(self, *texts: str) -> Scorer:
        """A new scorer that also declares these prompt templates' text (see ``prompts``)."""
        return replace(self, prompts=(*self.prompts, *texts))

    def preprocess(self, fn: StepDef, *, killable: bool = False) -> Scorer:
        """A new scorer with this preprocess step (replacing any earlier one); ``killable``: a sync
        step that always runs in a worker process, which the scorer's timeout kills."""
        return self._with_step("preprocess", fn, killable)

    def analyze(self, fn: StepDef, *, killable: bool = False) -> Scorer:
        return self._with_step("analyze", fn, killable)

    def generate_score(self, fn: StepDef, *, killable: bool = False) -> Scorer:
        return self._with_step("generate_score", fn, killable)

    def generate_reason(self, fn: StepDef, *, killable: bool = False) -> Scorer:
        return self._with_step("generate_reason", fn, killable)

    def _with_step(self, name: StepName, fn: StepDef, killable: bool) -> Scorer:
        new_step: Step
        if isinstance(fn, PromptObject | Mapping):
            if killable:
                raise ValueError(f"{name} of scorer {self.id!r}: killable=True is for function steps")
            try:
                new_step = PromptStep.build(name, fn, self.judge)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"scorer {self.id!r}: {exc}") from exc
        elif callable(fn):
            if killable and inspect.iscoroutinefunction(fn):
                raise ValueError(
                    f"{name} of scorer {self.id!r}: killable=True is for sync functions, not async ones"
                )
            new_step = FunctionStep(name, fn, killable)
        else:
            raise TypeError(
                f"{name} of scorer {self.id!r} must be a function or a prompt object, got {type(fn).__name__}"
            )
        kept = [step for step in self.steps if step.name != name]
        steps = sorted([*kept, new_step], key=lambda step: STEP_ORDER.index(step.name))
        return replace(self, steps=tuple(steps))

    @cached_property
    def _has_score_step(self) -> bool:
        return any(step.name == "generate_score" for step in self.steps)

    @cached_property
    def _reads_size(self) -> bool:
        """Whether a step is placed by the run's size (a sync function step)."""
        return any(isinstance(step, FunctionStep) and not step.is_async for step in self.steps)

    async def run(self, run: AgentRun | Mapping[str, Any]) -> ScorerResult:
        """Score one run. Raises ``ScorerError`` naming the step when a step fails or the score is
        not a number in [0, scale]."""
        agent_run = self._as_run(run)
        if not self._has_score_step:
            raise ScorerError(self.id, "generate_score", "the scorer has no generate_score step")
        results, prompts, score, usage = await self._run_steps(agent_run)
        label = None if self.label is None else self._label(StepContext(agent_run, results, score))
        # A run without trace and span ids (an eval item, a CLI run) gets a random id, as Mastra's:
        # None here, drawn when the result's ``run_id`` is first read.
        run_id = agent_run.run_id if (agent_run.trace_id or agent_run.span_id) else None
        judged = prompts or (usage is not None and usage.models)
        return ScorerResult(
            self.id,
            run_id,
            score,
            self.scale,
            results.get(_REASON_KEY),
            label,
            results.get(_PREPROCESS_KEY),
            results.get(_ANALYZE_KEY),
            _judge_details(prompts, usage) if judged else NO_JUDGE,
        )

    async def _run_steps(
        self, agent_run: AgentRun
    ) -> tuple[dict[str, Any], dict[str, str], float, JudgeUsage | None]:
        """The steps' results, the prompts sent, the score and the judge usage of the run (None:
        nothing was awaited, so no judge was asked)."""
        results: dict[str, Any] = {}
        prompts: dict[str, str] = {}
        score: float | None = None
        run_chars = agent_run.text_chars() if self._reads_size else 0
        size = size_class(run_chars)
        # The run's judge meter, entered before its first await: judge calls are coroutines, so a
        # sync step called right here cannot make one, and a heuristic run skips the meter's cost.
        meter: metered | None = None
        try:
            for step in self.steps:
                if step.name == "generate_reason":
                    visible: Mapping[str, Any] = {**results, "score": score}
                else:  # no copy before the first step: nothing to protect from it yet
                    visible = dict(results) if results else NO_RESULTS
                context = StepContext(agent_run, visible, score)
                prompt = None
                try:
                    # A sync function step measured cheap runs right here: no coroutine, no outcome.
                    if isinstance(step, FunctionStep) and step.runs_here(size):
                        value = step.call_here(context, size)
                        if maybe_awaitable(value):
                            meter = meter or _entered(metered())
                            value = await value
                    else:
                        meter = meter or _entered(metered())
                        value, prompt = await step.execute(context, run_chars)
                except Exception as exc:  # re-raised with the scorer and the step named
                    # Our own errors say what failed ("judge ... failed: ..."); others need their type.
                    why = str(exc) if isinstance(exc, TracescoreError) else f"{type(exc).__name__}: {exc}"
                    raise ScorerError(self.id, step.name, why, retriable=is_retriable(exc)) from exc
                if step.name == "generate_score":
                    score = _check_score(self.id, value, self.scale)
                elif step.name == "generate_reason" and value is not None and not isinstance(value, str):
                    raise ScorerError(self.id, step.name, f"returned {type(value).__name__}, not a string")
                results[_RESULT_KEYS[step.name]] = value
                if prompt is not None:
                    prompts[f"{step.name}_prompt"] = prompt
        finally:
            if meter is not None:
                meter.__exit__(None, None, None)
        if score is None:  # unreachable: generate_score ran (checked in run) or raised
            raise ScorerError(self.id, "generate_score", "produced no score")
        return results, prompts, score, None if meter is None else meter.usage

    def _label(self, context: StepContext) -> str | None:
        if self.label is None:
            return None
        try:
            label = self.label(context)
        except Exception as exc:
            raise ScorerError(self.id, "label", f"{type(exc).__name__}: {exc}") from exc
        if label is not None and not isinstance(label, str):
            raise ScorerError(self.id, "label", f"returned {type(label).__name__}, not a string")
        return label

    def _as_run(self, run: AgentRun | Mapping[str, Any]) -> AgentRun:
        if isinstance(run, AgentRun):
            return run
        try:
            return AgentRun.model_validate(run)
        except ValidationError as exc:
            raise ScorerError(self.id, None, f"the run is not a valid AgentRun: {exc}") from exc


def _entered(meter: metered) -> metered:
    """``meter``, entered (``Scorer._run_steps`` exits it)."""
    meter.__enter__()
    return meter


def _judge_details(prompts: dict[str, str], usage: JudgeUsage | None) -> JudgeDetails:
    """The prompts a run's judge steps sent and its judges' usage (``usage`` None: nothing was
    awaited; a judge answered when ``usage.models`` is set, though maybe with zero tokens)."""
    return JudgeDetails(
        preprocess_prompt=prompts.get("preprocess_prompt"),
        analyze_prompt=prompts.get("analyze_prompt"),
        generate_score_prompt=prompts.get("generate_score_prompt"),
        generate_reason_prompt=prompts.get("generate_reason_prompt"),
        judge_model=",".join(usage.models) if usage is not None and usage.models else None,
        input_tokens=usage.input_tokens if usage is not None else 0,
        output_tokens=usage.output_tokens if usage is not None else 0,
        cost_usd=usage.cost_usd if usage is not None else 0.0,
    )


def create_scorer(
    *,
    id: str,
    description: str,
    name: str | None = None,
    type: str = "agent",
    needs: frozenset[Need] | set[Need] | tuple[Need, ...] = DEFAULT_NEEDS,
    judge: Judge | None = None,
    scale: float = 1.0,
    label: LabelFn | None = None,
    version: str | None = None,
) -> Scorer:
    """Start a scorer pipeline (Mastra's ``createScorer``); add steps by chaining.

    ``needs`` names the run content the scorer reads (``input``, ``output``, ``context``,
    ``ground_truth``); runs without it are skipped (decision ``skipped_empty``) rather than
    scored on empty text.
    ``judge`` answers the prompt-object steps that have no judge of their own.
    ``scale``: scores lie in [0, scale]; any other value fails the run, and is never stored.
    ``label``: the scored run's label (e.g. a choice or pass/fail), from the step context.
    ``version``: the version of the scorer's code, the first part of the version stored with its
    scores (default: a hash of the factory's module source; ``scoring.runtime.scorer_version``).
    """
    if not id:
        raise ValueError("a scorer needs an id")
    if type != "agent":
        raise ValueError(f"scorer type {type!r} is not supported (only 'agent')")
    unknown = set(needs) - NEEDS
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; use input, output, context, ground_truth")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    return Scorer(
        id=id,
        description=description,
        name=name or id,
        type=type,
        needs=frozenset(needs),
        judge=judge,
        scale=scale,
        label=label,
        version=version,
    )
