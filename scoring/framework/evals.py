"""``run_evals``: score a data set with several scorers, optionally running an agent on each input.

A Python mirror of Mastra's ``runEvals``::

    from tracescore.scoring import run_evals
    from tracescore.scoring.prebuilt import create_content_similarity_scorer

    async def agent(question: str) -> str:
        return await my_agent.answer(question)

    result = await run_evals(
        data=[{"input": "What is 2+2?", "ground_truth": "4"}],
        scorers=[create_content_similarity_scorer()],
        target=agent,
        concurrency=4,
    )
    result.scores  # {"content-similarity-scorer": 0.12}: the mean per scorer id, as Mastra's

Each data item has ``input`` and optionally ``ground_truth``, ``context``, and either ``output`` (an
answer already produced) or ``run`` (a whole AgentRun to score as it is). Without those, ``target``
(a sync or async callable: input -> a string, a message list, or an AgentRun) produces the answer.
Differences from Mastra, on purpose: a scorer or target that fails is recorded on its item as an
error instead of aborting the whole evaluation; a run that lacks what a scorer reads (its ``needs``:
no output text, no ground truth...) is not scored but recorded as ``skipped_empty`` with the reason,
as the service records it; averages are over successful scores only (None when there are none,
where Mastra reports 0); and the scorers of one item run concurrently.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer, ScorerResult
from tracescore.scoring.runtime.empty_runs import empty_run_reason
from tracescore.scoring.utils import create_agent_test_run

Target = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]
ItemCallback = Callable[["EvalItemResult"], Any]
DEFAULT_CONCURRENCY = 1  # Mastra's default: one item at a time


class EvalItem(BaseModel):
    """One data item: what goes in, and optionally what came out."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    input: Any = None
    output: Any = None
    run: AgentRun | None = None
    ground_truth: Any = Field(default=None, alias="groundTruth")
    context: list[str] = Field(default_factory=list)


class EvalItemResult(BaseModel):
    """The outcome for one item: per scorer a result, an error, or why the run was skipped (its
    ``skipped_empty`` reason); or the target's error."""

    index: int
    run: AgentRun | None = None
    scores: dict[str, ScorerResult] = Field(default_factory=dict)
    errors: dict[str, str] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)
    error: str | None = None  # the target failed (or its output could not become a run)
    duration_s: float = 0.0


class ScorerSummary(BaseModel):
    """One scorer across the data set: statistics over its successful scores."""

    scorer_id: str
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    n: int = 0
    errors: int = 0
    skipped_empty: int = 0  # runs without the content the scorer reads: not scored


class EvalSummary(BaseModel):
    total_items: int
    failed_items: int  # items whose target failed; they have no scores
    duration_s: float


class RunEvalsResult(BaseModel):
    """``scores`` is Mastra's result shape (mean per scorer id); the rest adds detail."""

    scores: dict[str, float | None]
    scorers: dict[str, ScorerSummary]
    items: list[EvalItemResult]
    summary: EvalSummary


def _items(data: Sequence[EvalItem | Mapping[str, Any]], has_target: bool) -> list[EvalItem]:
    if not data:
        raise ValueError("run_evals needs at least one data item")
    items: list[EvalItem] = []
    for index, raw in enumerate(data):
        item = raw if isinstance(raw, EvalItem) else EvalItem.model_validate(raw)
        if item.run is None and item.output is None and not has_target:
            raise ValueError(f"data item {index} has no 'output' or 'run', and no target was given")
        if item.run is None and item.input is None:
            raise ValueError(f"data item {index} has no 'input'")
        items.append(item)
    return items


async def _call_target(target: Target, value: Any) -> Any:
    if inspect.iscoroutinefunction(target):
        return await target(value)
    # A sync agent likely blocks on I/O: a thread keeps the other items (and the loop) moving.
    produced = await asyncio.to_thread(target, value)
    return await produced if inspect.isawaitable(produced) else produced


def _as_run(item: EvalItem, output: Any) -> AgentRun:
    if isinstance(output, AgentRun | Mapping) and not _is_message(output):
        run = output if isinstance(output, AgentRun) else AgentRun.model_validate(output)
        if not run.input.input_messages and item.input is not None:
            given = create_agent_test_run(output=[], input_messages=item.input).input
            run = run.model_copy(update={"input": given})
    else:
        run = create_agent_test_run(output=output, input_messages=item.input)
    updates: dict[str, Any] = {}
    if item.ground_truth is not None:
        updates["ground_truth"] = item.ground_truth
    if item.context:
        updates["context"] = item.context
    return run.model_copy(update=updates) if updates else run


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and "role" in value


async def _score_item(
    index: int, item: EvalItem, scorers: Sequence[Scorer], target: Target | None
) -> EvalItemResult:
    started = time.perf_counter()
    try:
        if item.run is not None:
            run = _as_run(item, item.run)
        elif item.output is not None or target is None:  # _items refused items with neither
            run = _as_run(item, item.output)
        else:
            run = _as_run(item, await _call_target(target, item.input))
    except Exception as exc:  # the agent's failure belongs to this item, not to the whole evaluation
        return EvalItemResult(
            index=index, error=f"{type(exc).__name__}: {exc}", duration_s=time.perf_counter() - started
        )
    skipped = {s.id: reason for s in scorers if (reason := empty_run_reason(s, run)) is not None}
    scoring = [scorer for scorer in scorers if scorer.id not in skipped]
    outcomes = await asyncio.gather(*(scorer.run(run) for scorer in scoring), return_exceptions=True)
    scores: dict[str, ScorerResult] = {}
    errors: dict[str, str] = {}
    for scorer, outcome in zip(scoring, outcomes, strict=True):
        if isinstance(outcome, ScorerResult):
            scores[scorer.id] = outcome
        elif isinstance(outcome, Exception):
            errors[scorer.id] = str(outcome) or type(outcome).__name__
        else:  # CancelledError and other BaseExceptions are not a scorer's failure: let them through
            raise outcome
    return EvalItemResult(
        index=index,
        run=run,
        scores=scores,
        errors=errors,
        skipped=skipped,
        duration_s=time.perf_counter() - started,
    )


def _summaries(scorers: Sequence[Scorer], results: Sequence[EvalItemResult]) -> dict[str, ScorerSummary]:
    summaries: dict[str, ScorerSummary] = {}
    for scorer in scorers:
        values = [r.scores[scorer.id].score for r in results if scorer.id in r.scores]
        errors = sum(1 for r in results if scorer.id in r.errors)
        skipped = sum(1 for r in results if scorer.id in r.skipped)
        summaries[scorer.id] = ScorerSummary(
            scorer_id=scorer.id,
            mean=sum(values) / len(values) if values else None,
            min=min(values, default=None),
            max=max(values, default=None),
            n=len(values),
            errors=errors,
            skipped_empty=skipped,
        )
    return summaries


async def run_evals(
    data: Sequence[EvalItem | Mapping[str, Any]],
    scorers: Sequence[Scorer],
    target: Target | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_item_complete: ItemCallback | None = None,
) -> RunEvalsResult:
    """Score every item with every scorer; ``concurrency`` items are in flight at once.

    ``on_item_complete`` (sync or async) receives each ``EvalItemResult`` as it finishes; an
    exception it raises stops the evaluation. Items come back in data order whatever the order
    they finished in.
    """
    if not scorers:
        raise ValueError("run_evals needs at least one scorer")
    ids = [scorer.id for scorer in scorers]
    if duplicated := sorted({i for i in ids if ids.count(i) > 1}):
        raise ValueError(f"scorer ids must be unique; given twice: {', '.join(duplicated)}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    items = _items(data, target is not None)
    started = time.perf_counter()
    results: list[EvalItemResult | None] = [None] * len(items)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(items)):
        queue.put_nowait(index)

    async def worker() -> None:
        while not queue.empty():
            index = queue.get_nowait()
            result = await _score_item(index, items[index], scorers, target)
            results[index] = result
            if on_item_complete is not None:
                returned = on_item_complete(result)
                if inspect.isawaitable(returned):
                    await returned

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(items))):
                group.create_task(worker())
    except ExceptionGroup as failed:  # only the callback raises here; hand its error back as it is
        raise failed.exceptions[0] from None
    done = [result for result in results if result is not None]
    summaries = _summaries(scorers, done)
    return RunEvalsResult(
        scores={scorer_id: summary.mean for scorer_id, summary in summaries.items()},
        scorers=summaries,
        items=done,
        summary=EvalSummary(
            total_items=len(done),
            failed_items=sum(1 for r in done if r.error is not None),
            duration_s=time.perf_counter() - started,
        ),
    )
