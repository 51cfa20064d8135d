"""run_evals: items scored by every scorer, errors kept per item, averages over successful scores."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tracescore.schemas import AgentRun
from tracescore.scoring import EvalItemResult, create_scorer, run_evals
from tracescore.scoring.framework.message_text import output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt import create_textual_difference_scorer
from tracescore.scoring.utils import create_agent_test_run


def _length_scorer() -> Scorer:
    """Score = output length / 10: easy to compute by hand."""
    return create_scorer(id="length", description="output length / 10", scale=10).generate_score(
        lambda ctx: len(output_text(ctx.run)) / 10
    )


def _picky_scorer() -> Scorer:
    """Fails on outputs containing 'boom', else 1."""

    def score(ctx: StepContext) -> float:
        if "boom" in output_text(ctx.run):
            raise RuntimeError("cannot score a boom")
        return 1.0

    return create_scorer(id="picky", description="fails on boom").generate_score(score)


async def test_precomputed_outputs_are_scored_and_averaged() -> None:
    data = [
        {"input": "q1", "output": "abcd"},
        {"input": "q2", "output": "boom!!"},
        {"input": "q3", "output": "ab"},
    ]
    result = await run_evals(data, [_length_scorer(), _picky_scorer()])
    assert result.scores == {"length": pytest.approx((0.4 + 0.6 + 0.2) / 3), "picky": 1.0}
    length, picky = result.scorers["length"], result.scorers["picky"]
    assert (length.n, length.errors, length.min, length.max) == (3, 0, 0.2, 0.6)
    assert (picky.n, picky.errors, picky.mean) == (2, 1, 1.0)
    failed = result.items[1]
    assert set(failed.scores) == {"length"}
    assert "cannot score a boom" in failed.errors["picky"]
    assert [item.index for item in result.items] == [0, 1, 2]
    assert result.summary.total_items == 3
    assert result.summary.failed_items == 0
    assert result.summary.duration_s >= 0


async def test_a_scorer_failing_everywhere_has_no_mean() -> None:
    result = await run_evals([{"input": "q", "output": "boom"}], [_picky_scorer()])
    assert result.scores == {"picky": None}
    assert (result.scorers["picky"].n, result.scorers["picky"].errors) == (0, 1)


async def test_a_run_without_what_a_scorer_reads_is_skipped_not_scored() -> None:
    async def silent(question: str) -> str:
        return ""  # an agent that answered nothing

    data = [{"input": "q1", "output": "abcd"}, {"input": "q2"}]
    result = await run_evals(data, [_length_scorer(), create_textual_difference_scorer()], target=silent)
    skipped = result.items[1]
    assert skipped.scores == {} and skipped.errors == {}
    assert skipped.skipped == {
        "length": "run has no output text",
        "textual-difference": "run has no output text",
    }
    length = result.scorers["length"]
    assert (length.n, length.errors, length.skipped_empty) == (1, 0, 1) and length.mean == pytest.approx(0.4)
    textual = result.scorers["textual-difference"]
    assert (textual.n, textual.skipped_empty) == (1, 1)


async def test_async_target_builds_the_run_from_the_input() -> None:
    async def agent(question: str) -> str:
        return question.upper()

    seen: list[AgentRun] = []

    def record(ctx: StepContext) -> float:
        seen.append(ctx.run)
        return 1.0

    recorder = create_scorer(id="rec", description="keeps the run").generate_score(record)
    result = await run_evals(
        [{"input": "abc", "ground_truth": "ABC", "context": ["doc"]}],
        [create_textual_difference_scorer(), recorder],
        target=agent,
    )
    # "abc" vs "ABC": no common character, so the LCS ratio is 0.
    assert result.scores["textual-difference"] == 0.0
    (run,) = seen
    assert [(m.role, m.content) for m in run.input.input_messages] == [("user", "abc")]
    assert [(m.role, m.content) for m in run.output] == [("assistant", "ABC")]
    assert (run.ground_truth, run.context) == ("ABC", ["doc"])


async def test_sync_target_runs_off_the_event_loop_and_may_return_messages_or_a_run() -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def agent(question: str) -> object:
        threads.append(threading.get_ident())
        if question == "run":
            return create_agent_test_run(output="from a run", input_messages="ignored?")
        return [{"role": "assistant", "content": "tool step"}, {"role": "assistant", "content": "xyz"}]

    result = await run_evals([{"input": "msgs"}, {"input": "run"}], [_length_scorer()], target=agent)
    assert threads and all(t != loop_thread for t in threads)
    # "tool step, xyz" is 14 characters; "from a run" is 10.
    assert [item.scores["length"].score for item in result.items] == [pytest.approx(1.4), 1.0]
    # A returned run keeps its own input; the item's input only fills a run that has none.
    assert result.items[1].run is not None
    assert result.items[1].run.input.input_messages[0].content == "ignored?"


async def test_a_failing_target_is_recorded_on_its_item() -> None:
    async def agent(question: str) -> str:
        if question == "bad":
            raise ConnectionError("agent down")
        return "fine"

    result = await run_evals([{"input": "bad"}, {"input": "good"}], [_length_scorer()], target=agent)
    assert result.items[0].error == "ConnectionError: agent down"
    assert result.items[0].scores == {}
    assert result.scores == {"length": pytest.approx(0.4)}
    assert result.summary.failed_items == 1


async def test_a_given_run_is_scored_as_is_with_the_items_ground_truth() -> None:
    run = create_agent_test_run(input_messages="hi", output="hello", trace_id="1" * 32, span_id="2" * 16)
    result = await run_evals([{"run": run.to_json_dict(), "ground_truth": "gt"}], [_length_scorer()])
    item = result.items[0]
    assert item.scores["length"].score == 0.5
    assert item.scores["length"].run_id == f"{'1' * 32}:{'2' * 16}"
    assert item.run is not None and item.run.ground_truth == "gt"


async def test_concurrency_bounds_items_in_flight_and_callbacks_see_every_item() -> None:
    in_flight = 0
    peak = 0

    async def agent(question: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return question

    completed: list[int] = []

    async def on_item_complete(item: EvalItemResult) -> None:
        completed.append(item.index)

    data = [{"input": f"q{i}"} for i in range(7)]
    result = await run_evals(
        data, [_length_scorer()], target=agent, concurrency=3, on_item_complete=on_item_complete
    )
    assert peak == 3
    assert sorted(completed) == list(range(7))
    assert result.summary.total_items == 7

    sync_seen: list[int] = []
    await run_evals(
        data[:2], [_length_scorer()], target=agent, on_item_complete=lambda r: sync_seen.append(r.index)
    )
    assert sync_seen == [0, 1]  # concurrency 1 (Mastra's default): in order


async def test_a_raising_callback_stops_the_evaluation() -> None:
    def callback(item: EvalItemResult) -> None:
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        await run_evals([{"input": "a", "output": "b"}], [_length_scorer()], on_item_complete=callback)


@pytest.mark.parametrize(
    ("data", "scorers", "message"),
    [
        ([], [_length_scorer()], "at least one data item"),
        ([{"input": "a", "output": "b"}], [], "at least one scorer"),
        ([{"input": "a", "output": "b"}], [_length_scorer(), _length_scorer()], "given twice: length"),
        ([{"input": "a"}], [_length_scorer()], "item 0 has no 'output' or 'run'"),
        ([{"output": "b"}], [_length_scorer()], "item 0 has no 'input'"),
    ],
)
async def test_invalid_calls_are_refused_before_anything_runs(
    data: list[dict[str, str]], scorers: list[Scorer], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await run_evals(data, scorers)


async def test_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        await run_evals([{"input": "a", "output": "b"}], [_length_scorer()], concurrency=0)
