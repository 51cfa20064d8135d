"""The create_scorer pipeline: steps, results, immutability, concurrency, errors."""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.runs import agent_run
from tracescore.scoring import Judge, ScorerError, StepContext, create_scorer
from tracescore.scoring.framework.evals import EvalItemResult


def answer(ctx: StepContext) -> str:
    return ctx.run.output[0].content


async def test_sync_and_async_steps_pass_results_along() -> None:
    seen: dict[str, Any] = {}

    def preprocess(ctx: StepContext) -> dict[str, int]:
        seen["preprocess"] = dict(ctx.results)
        return {"words": len(answer(ctx).split())}

    async def analyze(ctx: StepContext) -> dict[str, int]:
        await asyncio.sleep(0)
        seen["analyze"] = dict(ctx.results)
        return {"doubled": ctx.results["preprocess_step_result"]["words"] * 2}

    def generate_score(ctx: StepContext) -> float:
        seen["generate_score"] = dict(ctx.results)
        doubled: int = ctx.results["analyze_step_result"]["doubled"]
        return doubled / 10

    async def generate_reason(ctx: StepContext) -> str:
        seen["generate_reason"] = dict(ctx.results)
        return f"score {ctx.score} from {ctx.results['preprocess_step_result']['words']} words"

    scorer = (
        create_scorer(id="words", description="counts words")
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
    result = await scorer.run(agent_run("q", "one two three"))

    assert result.score == 0.6
    assert result.reason == "score 0.6 from 3 words"
    assert result.preprocess_step_result == {"words": 3}
    assert result.analyze_step_result == {"doubled": 6}
    assert result.scorer_id == "words"
    assert result.run_id == f"{'a' * 32}:{'b' * 16}"
    assert seen["preprocess"] == {}
    assert seen["analyze"] == {"preprocess_step_result": {"words": 3}}
    assert seen["generate_score"] == {
        "preprocess_step_result": {"words": 3},
        "analyze_step_result": {"doubled": 6},
    }
    assert seen["generate_reason"]["score"] == 0.6


async def test_context_reads_as_a_mapping_too() -> None:
    scorer = create_scorer(id="len", description="d").generate_score(
        lambda ctx: len(ctx["run"].output[0].content) / 10
    )
    assert (await scorer.run(agent_run("q", "abcde"))).score == 0.5


async def test_chaining_returns_a_new_scorer_and_keeps_the_original() -> None:
    base = create_scorer(id="base", description="d").preprocess(lambda ctx: 1)
    scored = base.generate_score(lambda ctx: 0.25)
    replaced = scored.generate_score(lambda ctx: 0.75)

    assert [step.name for step in base.steps] == ["preprocess"]
    assert (await scored.run(agent_run("q", "a"))).score == 0.25
    assert (await replaced.run(agent_run("q", "a"))).score == 0.75
    with pytest.raises(ScorerError, match="no generate_score step"):
        await base.run(agent_run("q", "a"))


async def test_steps_run_in_pipeline_order_whatever_the_chaining_order() -> None:
    order: list[str] = []

    def step(name: str, value: Any) -> Any:
        def fn(ctx: StepContext) -> Any:
            order.append(name)
            return value

        return fn

    scorer = (
        create_scorer(id="order", description="d")
        .generate_reason(step("generate_reason", "why"))
        .generate_score(step("generate_score", 1))
        .analyze(step("analyze", None))
        .preprocess(step("preprocess", None))
    )
    await scorer.run(agent_run("q", "a"))
    assert order == ["preprocess", "analyze", "generate_score", "generate_reason"]


async def test_concurrent_runs_keep_their_own_results() -> None:
    async def analyze(ctx: StepContext) -> dict[str, str]:
        # Later runs finish first, so any state shared between runs would show up mixed.
        await asyncio.sleep(0.002 * (50 - int(answer(ctx))))
        return {"seen": answer(ctx)}

    scorer = (
        create_scorer(id="echo", description="d")
        .preprocess(lambda ctx: {"answer": answer(ctx)})
        .analyze(analyze)
        .generate_score(lambda ctx: int(ctx.results["analyze_step_result"]["seen"]) / 100)
        .generate_reason(lambda ctx: ctx.results["preprocess_step_result"]["answer"])
    )
    runs = [agent_run("q", str(i), trace_id=f"{i:032x}") for i in range(50)]
    results = await asyncio.gather(*(scorer.run(run) for run in runs))

    for i, result in enumerate(results):
        assert result.score == i / 100
        assert result.reason == str(i)
        assert result.analyze_step_result == {"seen": str(i)}
        assert result.run_id == f"{i:032x}:{'b' * 16}"


def where(ctx: StepContext) -> dict[str, int]:
    return {"pid": os.getpid(), "thread": threading.get_ident()}


def place_of(ran: dict[str, int]) -> str:
    """Where a ``where`` step ran, seen from the test's event loop."""
    if ran["pid"] != os.getpid():
        return "worker"
    return "loop" if ran["thread"] == threading.get_ident() else "thread"


async def test_a_killable_step_runs_in_a_worker_process_every_time() -> None:
    scorer = create_scorer(id="where", description="d").preprocess(where, killable=True)
    scorer = scorer.generate_score(lambda ctx: 0.5)
    places = [place_of((await scorer.run(agent_run("q", "a"))).preprocess_step_result) for _ in range(3)]
    assert places == ["worker", "worker", "worker"]


async def test_a_sync_step_is_tried_in_a_thread_then_runs_on_the_loop_once_measured_cheap() -> None:
    scorer = create_scorer(id="where", description="d").preprocess(where).generate_score(lambda ctx: 0.5)
    places = [place_of((await scorer.run(agent_run("q", "a"))).preprocess_step_result) for _ in range(3)]
    assert places == ["thread", "loop", "loop"]
    # A run ten times the size is of another size class: tried in a thread again, then on the loop.
    longer = [place_of((await scorer.run(agent_run("q", "a" * 40))).preprocess_step_result) for _ in range(2)]
    assert longer == ["thread", "loop"]


async def test_a_step_measured_slow_moves_to_a_worker_process_and_stays_there_on_larger_runs() -> None:
    def slow(ctx: StepContext) -> dict[str, int]:
        time.sleep(0.005)  # five times the loop's budget of a step
        return where(ctx)

    scorer = create_scorer(id="slow", description="d").preprocess(slow).generate_score(lambda ctx: 0.5)
    places = [place_of((await scorer.run(agent_run("q", "a"))).preprocess_step_result) for _ in range(3)]
    assert places == ["thread", "worker", "worker"]
    # Slow on small runs is slow on larger ones: no thread first.
    larger = await scorer.run(agent_run("q", "a" * 1_000))
    assert place_of(larger.preprocess_step_result) == "worker"


async def test_the_loop_keeps_turning_while_a_step_runs_slow_for_the_first_time() -> None:
    def busy(ctx: StepContext) -> float:
        end = time.monotonic() + 0.5
        while time.monotonic() < end:  # Python code holding the interpreter lock
            pass
        return 0.5

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        scorer = create_scorer(id="busy", description="d").generate_score(busy)
        assert (await scorer.run(agent_run("q", "a"))).score == 0.5
    finally:
        ticker.cancel()
    # On the loop the step would have allowed no tick at all; in its thread it shares the lock.
    assert ticks >= 5


async def test_a_step_cancelled_by_a_timeout_in_its_thread_runs_in_a_worker_process_next() -> None:
    calls = 0

    def first_slow(ctx: StepContext) -> dict[str, int]:
        nonlocal calls
        calls += 1  # in this process's thread on the first run only
        if calls == 1:
            time.sleep(0.3)
        return where(ctx)

    scorer = create_scorer(id="stuck", description="d").preprocess(first_slow).generate_score(lambda ctx: 1)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await scorer.run(agent_run("q", "a"))
    again = await scorer.run(agent_run("q", "a"))
    assert place_of(again.preprocess_step_result) == "worker"


def test_killable_is_refused_for_async_functions_and_prompt_objects() -> None:
    async def fn(ctx: StepContext) -> float:
        return 1.0

    with pytest.raises(ValueError, match="killable=True is for sync functions"):
        create_scorer(id="x", description="d").generate_score(fn, killable=True)
    prompt = {"description": "d", "create_prompt": lambda ctx: "p"}
    with pytest.raises(ValueError, match="killable=True is for function steps"):
        create_scorer(id="x", description="d", judge=Judge("openai/gpt-4o-mini")).generate_reason(
            prompt, killable=True
        )


async def test_a_failing_step_raises_scorer_error_naming_scorer_and_step() -> None:
    def analyze(ctx: StepContext) -> None:
        raise KeyError("missing-field")

    scorer = create_scorer(id="fragile", description="d").analyze(analyze).generate_score(lambda ctx: 1.0)
    with pytest.raises(ScorerError) as info:
        await scorer.run(agent_run("q", "a"))
    assert info.value.scorer_id == "fragile"
    assert info.value.step == "analyze"
    assert (
        "'fragile'" in str(info.value)
        and "'analyze'" in str(info.value)
        and "missing-field" in str(info.value)
    )
    assert isinstance(info.value.__cause__, KeyError)


async def test_a_failing_async_reason_step_is_named_too() -> None:
    async def reason(ctx: StepContext) -> str:
        raise RuntimeError("judge down")

    scorer = create_scorer(id="r", description="d").generate_score(lambda ctx: 1).generate_reason(reason)
    with pytest.raises(ScorerError, match="generate_reason.*judge down"):
        await scorer.run(agent_run("q", "a"))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "0.5", None, True, [0.5]])
async def test_a_score_that_is_not_a_finite_number_is_rejected(bad: Any) -> None:
    scorer = create_scorer(id="bad-score", description="d").generate_score(lambda ctx: bad)
    with pytest.raises(ScorerError, match="generate_score") as info:
        await scorer.run(agent_run("q", "a"))
    assert info.value.step == "generate_score"


async def test_integer_scores_become_floats() -> None:
    result = (
        await create_scorer(id="int", description="d").generate_score(lambda ctx: 1).run(agent_run("q", "a"))
    )
    assert result.score == 1.0 and isinstance(result.score, float)


async def test_a_reason_that_is_not_text_is_rejected() -> None:
    scorer = (
        create_scorer(id="r", description="d").generate_score(lambda ctx: 1).generate_reason(lambda ctx: 42)
    )
    with pytest.raises(ScorerError, match="not a string"):
        await scorer.run(agent_run("q", "a"))


async def test_dict_runs_are_accepted_in_snake_and_camel_case() -> None:
    scorer = create_scorer(id="len", description="d").generate_score(
        lambda ctx: len(ctx.run.input.input_messages[0].content) / 10
    )
    snake = {
        "trace_id": "t",
        "span_id": "s",
        "input": {"input_messages": [{"role": "user", "content": "abc"}]},
    }
    camel = {"traceId": "t", "spanId": "s", "input": {"inputMessages": [{"role": "user", "content": "abcd"}]}}
    assert (await scorer.run(snake)).score == 0.3
    result = await scorer.run(camel)
    assert result.score == 0.4
    assert result.run_id == "t:s"


async def test_an_invalid_dict_run_is_a_scorer_error() -> None:
    scorer = create_scorer(id="v", description="d").generate_score(lambda ctx: 1)
    with pytest.raises(ScorerError, match="not a valid AgentRun"):
        await scorer.run({"output": [{"role": "narrator", "content": "x"}]})


async def test_a_run_without_ids_gets_a_fresh_run_id() -> None:
    scorer = create_scorer(id="v", description="d").generate_score(lambda ctx: 1)
    first = await scorer.run({})
    second = await scorer.run({})
    assert first.run_id and second.run_id and first.run_id != second.run_id


async def test_a_drawn_run_id_stays_the_same_once_read() -> None:
    result = await create_scorer(id="v", description="d").generate_score(lambda ctx: 1).run({})
    assert result.run_id == result.run_id == result.model_dump()["run_id"]


async def test_a_result_dumps_alone_and_inside_a_pydantic_model() -> None:
    scorer = (
        create_scorer(id="dump", description="d")
        .preprocess(lambda ctx: {"words": 2})
        .generate_score(lambda ctx: 0.5)
        .generate_reason(lambda ctx: "half")
    )
    result = await scorer.run(agent_run("q", "a b"))
    dumped = result.model_dump(mode="json")
    assert {key: dumped[key] for key in ("scorer_id", "score", "reason", "preprocess_step_result")} == {
        "scorer_id": "dump",
        "score": 0.5,
        "reason": "half",
        "preprocess_step_result": {"words": 2},
    }
    assert (dumped["judge_model"], dumped["input_tokens"], dumped["cost_usd"]) == (None, 0, 0.0)
    item = EvalItemResult(index=0, scores={"dump": result})
    assert item.model_dump(mode="json")["scores"]["dump"] == dumped
    assert item.scores["dump"] is result
    assert result == await scorer.run(agent_run("q", "a b"))
    assert "score=0.5" in repr(result)


@dataclass(frozen=True)
class Found:
    name: str
    weight: float


async def test_result_converts_to_a_score_with_json_safe_step_results() -> None:
    scorer = (
        create_scorer(id="conv", description="d")
        .preprocess(lambda ctx: {"found": [Found("a", 0.5)], "spread": math.nan})
        .generate_score(lambda ctx: 0.5)
        .generate_reason(lambda ctx: "half")
    )
    result = await scorer.run(agent_run("q", "a"))
    score = result.to_score("my-name")
    assert (score.name, score.value, score.reason) == ("my-name", 0.5, "half")
    assert score.metadata == {
        "preprocess_step_result": {"found": [{"name": "a", "weight": 0.5}], "spread": None}
    }
    json.dumps(score.metadata, allow_nan=False)
    assert result.to_score().name == "conv"


async def test_a_score_outside_the_scale_fails_the_run_naming_the_value() -> None:
    too_big = create_scorer(id="big", description="d").generate_score(lambda ctx: 3)
    with pytest.raises(ScorerError, match=r"returned 3, outside its scale \[0, 1\]"):
        await too_big.run(agent_run("q", "a"))
    negative = create_scorer(id="neg", description="d").generate_score(lambda ctx: -0.1)
    with pytest.raises(ScorerError, match=r"returned -0.1, outside its scale"):
        await negative.run(agent_run("q", "a"))
    on_five = create_scorer(id="five", description="d", scale=5).generate_score(lambda ctx: 3)
    score = (await on_five.run(agent_run("q", "a"))).to_score()
    assert (score.value, score.scale) == (3.0, 5)
    with pytest.raises(ValueError, match="scale must be a positive number"):
        create_scorer(id="zero", description="d", scale=0)


async def test_a_label_function_labels_the_result_and_its_score() -> None:
    scorer = create_scorer(
        id="lab", description="d", label=lambda ctx: "high" if (ctx.score or 0) > 0.5 else "low"
    ).generate_score(lambda ctx: 0.75)
    result = await scorer.run(agent_run("q", "a"))
    assert (result.label, result.to_score().label) == ("high", "high")
    unlabelled = (
        await create_scorer(id="nol", description="d").generate_score(lambda ctx: 1).run(agent_run("q", "a"))
    )
    assert unlabelled.label is None


async def test_result_is_frozen() -> None:
    result = (
        await create_scorer(id="f", description="d").generate_score(lambda ctx: 1).run(agent_run("q", "a"))
    )
    with pytest.raises(AttributeError):
        result.score = 0.0  # type: ignore[misc]


def test_create_scorer_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="needs an id"):
        create_scorer(id="", description="d")
    with pytest.raises(ValueError, match="not supported"):
        create_scorer(id="x", description="d", type="trajectory")
    with pytest.raises(TypeError, match="must be a function"):
        create_scorer(id="x", description="d").generate_score(0.5)  # type: ignore[arg-type]
    assert create_scorer(id="x", description="d").name == "x"
    assert create_scorer(id="x", description="d", name="Nice Name").name == "Nice Name"
