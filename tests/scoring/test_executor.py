"""The scoring executor: routing (filter, sampling), bounded execution, failures, flushing."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.scoring.test_workers import alive, spinning_scorer
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink
from tracescore.schemas import AgentRun, Message, RunInput, ToolInvocation
from tracescore.schemas.config import RunFilter, ScorerRule, ScoringConfig
from tracescore.schemas.errors import StoreError
from tracescore.scoring import StepContext, create_scorer
from tracescore.scoring.framework.message_text import output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.prebuilt import create_textual_difference_scorer
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

SALT = "test-salt"


def make_run(
    i: int,
    agent: str = "weather",
    service: str = "svc-a",
    status: Literal["ok", "error"] = "ok",
    user: str = "ab",
    answer: str = "ba",
) -> AgentRun:
    """Run number ``i`` ("ab" -> "ba" scores 0.5 on textual difference)."""
    return agent_run(
        user,
        answer,
        agent_name=agent,
        service_name=service,
        status=status,
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
    )


def config(*rules: ScorerRule, concurrency: int = 4, timeout: float = 5.0) -> ScoringConfig:
    return ScoringConfig(
        rules=list(rules), concurrency=concurrency, timeout_seconds=timeout, sampling_salt=SALT
    )


def registry_of(**scorers: Scorer) -> dict[str, Any]:
    """A registry of ready scorers (factories without options) beside the real prebuilt ones."""

    def factory_for(scorer: Scorer) -> Any:
        def factory() -> Scorer:
            return scorer

        return factory

    return {"textual-difference": create_textual_difference_scorer} | {
        name: factory_for(scorer) for name, scorer in scorers.items()
    }


@contextlib.asynccontextmanager
async def running(cfg: ScoringConfig, sink: RecordingSink, **kwargs: Any) -> AsyncIterator[ScoringExecutor]:
    executor = ScoringExecutor(cfg, sink, kwargs.pop("metrics", None) or ScoringMetrics(), **kwargs)
    await executor.start()
    try:
        yield executor
    finally:
        await executor.shutdown()


async def test_filters_route_runs_to_their_scorers() -> None:
    sink = RecordingSink()
    cfg = config(
        ScorerRule(scorer="textual-difference", filter=RunFilter(agent_name=["weather"])),
        ScorerRule(scorer="content-similarity", name="cs-errors", filter=RunFilter(status=["error"])),
        ScorerRule(
            scorer="tool-call-accuracy-code",
            options={"expectedTool": "search"},
            filter=RunFilter(service_name=["svc-b"], agent_name=["other"]),
        ),
    )
    runs = [make_run(1), make_run(2, agent="other", service="svc-b", status="error")]
    async with running(cfg, sink) as executor:
        await executor.consume_runs(runs)
        await executor.drain()

    t1, t2 = f"{1:032x}", f"{2:032x}"
    assert sink.kinds() == {
        (t1, "textual-difference"): "scored",
        (t1, "cs-errors"): "filtered",
        (t1, "tool-call-accuracy-code"): "filtered",
        (t2, "textual-difference"): "filtered",
        (t2, "cs-errors"): "scored",
        (t2, "tool-call-accuracy-code"): "scored",
    }
    scores = {(r.trace_id, r.scorer_id): r.score for r in sink.records}
    # "ab" vs "ba": textual difference 0.5, content similarity 0 (Mastra reference case c096);
    # no tool was called, so tool-call accuracy is 0.
    assert scores == {
        (t1, "textual-difference"): 0.5,
        (t2, "cs-errors"): 0.0,
        (t2, "tool-call-accuracy-code"): 0.0,
    }


async def test_rules_sharing_a_scorer_id_split_runs_by_their_disjoint_filters() -> None:
    sink = RecordingSink()
    cfg = config(
        ScorerRule(
            scorer="tool-call-accuracy-code",
            options={"expected_tool": "get_weather"},
            filter=RunFilter(agent_name=["weather"]),
        ),
        ScorerRule(
            scorer="tool-call-accuracy-code",
            options={"expected_tool": "search_flights"},
            filter=RunFilter(agent_name=["travel"]),
        ),
    )
    calls = {"weather": "get_weather", "travel": "get_weather", "chat": "get_weather"}
    runs = [
        make_run(i, agent=agent).model_copy(
            update={
                "output": [
                    Message(role="assistant", content="x", tool_invocations=[ToolInvocation(tool_name=tool)])
                ]
            }
        )
        for i, (agent, tool) in enumerate(calls.items())
    ]
    async with running(cfg, sink) as executor:
        assert executor.scorer_ids == ("tool-call-accuracy-code",)
        await executor.consume_runs(runs)
        await executor.drain()
    # One decision per (run, scorer id); each run scored with its own agent's options.
    assert [(int(d.trace_id, 16), d.decision) for d in sorted(sink.decisions, key=lambda d: d.trace_id)] == [
        (0, "scored"),
        (1, "scored"),
        (2, "filtered"),
    ]
    assert {int(r.trace_id, 16): r.score for r in sink.records} == {0: 1.0, 1: 0.0}


def independent_sample(key: str, rate: float) -> bool:
    """The sampling rule written out again from the design, not imported."""
    digest = hashlib.sha256(f"{SALT}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


async def test_sampling_decides_per_run_and_scorer() -> None:
    sink = RecordingSink()
    cfg = config(
        ScorerRule(scorer="textual-difference", sample_rate=0.5),
        ScorerRule(scorer="content-similarity", sample_rate=0.0),
    )
    runs = [make_run(i) for i in range(40)]
    async with running(cfg, sink) as executor:
        await executor.consume_runs(runs)
        await executor.drain()

    kinds = sink.kinds()
    expected_in = {
        run.trace_id for run in runs if independent_sample(f"{run.run_id}:textual-difference", 0.5)
    }
    assert 5 < len(expected_in) < 35  # the rate is neither 0 nor 1 on this sample
    for run in runs:
        in_sample = run.trace_id in expected_in
        assert kinds[(run.trace_id, "textual-difference")] == ("scored" if in_sample else "sampled_out")
        assert kinds[(run.trace_id, "content-similarity")] == "sampled_out"
    assert {r.trace_id for r in sink.records} == expected_in
    assert {r.scorer_id for r in sink.records} == {"textual-difference"}
    assert all(r.sample_rate == 0.5 for r in sink.records)
    assert all(d.sample_rate == 0.0 for d in sink.decisions if d.scorer_id == "content-similarity")


async def test_a_failing_scorer_gives_a_failed_decision_and_no_score() -> None:
    def broken(ctx: StepContext) -> float:
        raise RuntimeError("model returned garbage")

    sink = RecordingSink()
    scorers = registry_of(broken=create_scorer(id="broken-scorer", description="d").generate_score(broken))
    cfg = config(ScorerRule(scorer="broken"), ScorerRule(scorer="textual-difference"))
    async with running(cfg, sink, registry=scorers) as executor:
        await executor.consume_runs([make_run(1), make_run(2)])
        await executor.drain()

    failed = [d for d in sink.decisions if d.scorer_id == "broken-scorer"]
    assert [d.decision for d in failed] == ["failed", "failed"]
    assert all("generate_score" in d.detail and "model returned garbage" in d.detail for d in failed)
    assert {r.scorer_id for r in sink.records} == {"textual-difference"}  # the other rule still scores
    assert len(sink.records) == 2


async def test_tool_accuracy_on_a_run_without_input_is_skipped_not_failed() -> None:
    sink = RecordingSink()
    cfg = config(ScorerRule(scorer="tool-call-accuracy-code", options={"expected_tool": "search"}))
    run = make_run(1).model_copy(update={"input": RunInput()})
    async with running(cfg, sink) as executor:
        await executor.consume_runs([run])
        await executor.drain()
    assert sink.records == []
    [decision] = sink.decisions
    assert decision.decision == "skipped_empty"
    assert decision.detail == "run has no input text"


async def test_runs_without_the_content_a_scorer_needs_are_skipped_empty() -> None:
    sink = RecordingSink()
    scorers = registry_of(
        uses_context=create_scorer(id="uses-context", description="d", needs={"context"}).generate_score(
            lambda ctx: 1.0
        ),
        text=create_scorer(id="text", description="d").generate_score(lambda ctx: 1.0),
    )
    captured_off = make_run(1).model_copy(update={"input": RunInput(), "output": [], "content_missing": True})
    with_context = make_run(2).model_copy(update={"context": ["Paris is in France."]})
    cfg = config(ScorerRule(scorer="uses_context"), ScorerRule(scorer="text"))
    async with running(cfg, sink, registry=scorers) as executor:
        await executor.consume_runs([captured_off, with_context])
        await executor.drain()
    decisions = {(d.span_id, d.scorer_id): (d.decision, d.detail) for d in sink.decisions}
    assert decisions[(captured_off.span_id, "uses-context")] == (
        "skipped_empty",
        "run has no context text (content capture off or redacted)",
    )
    assert decisions[(captured_off.span_id, "text")] == (
        "skipped_empty",
        "run has no input or output text (content capture off or redacted)",
    )
    assert decisions[(with_context.span_id, "uses-context")] == ("scored", "")
    assert decisions[(with_context.span_id, "text")] == ("scored", "")
    assert {(r.span_id, r.scorer_id) for r in sink.records} == {
        (with_context.span_id, "uses-context"),
        (with_context.span_id, "text"),
    }


async def test_ground_truth_scorers_skip_live_runs_without_ground_truth() -> None:
    # Live traces carry no ground truth: the ground-truth scorers skip them instead of failing.
    sink = RecordingSink()
    cfg = config(ScorerRule(scorer="exact-match"), ScorerRule(scorer="levenshtein"))
    live = make_run(1)
    blank = make_run(2).model_copy(update={"ground_truth": "  "})
    captured_off = make_run(3).model_copy(update={"output": [], "content_missing": True})
    labelled = make_run(4).model_copy(update={"ground_truth": output_text(make_run(4))})
    async with running(cfg, sink) as executor:
        await executor.consume_runs([live, blank, captured_off, labelled])
        await executor.drain()
    decisions = {(d.span_id, d.scorer_id): (d.decision, d.detail) for d in sink.decisions}
    for run in (live, blank):
        assert decisions[(run.span_id, "exact-match")] == ("skipped_empty", "run has no ground truth")
    assert decisions[(captured_off.span_id, "levenshtein")] == (
        "skipped_empty",
        "run has no output text and no ground truth (content capture off or redacted)",
    )
    assert {(r.span_id, r.scorer_id, r.score) for r in sink.records} == {
        (labelled.span_id, "exact-match", 1.0),
        (labelled.span_id, "levenshtein", 1.0),
    }


async def test_a_scorer_over_its_timeout_fails() -> None:
    async def stuck(ctx: StepContext) -> float:
        await asyncio.sleep(30)
        return 1.0

    sink = RecordingSink()
    scorers = registry_of(stuck=create_scorer(id="stuck", description="d").generate_score(stuck))
    started = time.monotonic()
    async with running(config(ScorerRule(scorer="stuck"), timeout=0.1), sink, registry=scorers) as executor:
        await executor.consume_runs([make_run(1)])
        await executor.drain()
    assert time.monotonic() - started < 5
    assert sink.records == []
    [decision] = sink.decisions
    assert (decision.decision, decision.detail) == ("failed", "timed out after 0.1 s")


async def test_a_killable_step_over_its_timeout_fails_and_stops(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    sink = RecordingSink()
    scorers = registry_of(spinner=spinning_scorer(pid_file))
    async with running(config(ScorerRule(scorer="spinner"), timeout=1.0), sink, registry=scorers) as executor:
        await executor.consume_runs([make_run(1)])
        await executor.drain()
    [decision] = sink.decisions
    assert (decision.decision, decision.detail) == ("failed", "timed out after 1 s")
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(pid):  # the step's work stopped with its worker process
        assert time.monotonic() < deadline, "the timed-out step still runs"
        await asyncio.sleep(0.05)


async def test_concurrency_stays_within_the_bound() -> None:
    active = 0
    peak = 0

    async def probe(ctx: StepContext) -> float:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return 1.0

    sink = RecordingSink()
    scorers = registry_of(probe=create_scorer(id="probe", description="d").generate_score(probe))
    async with running(config(ScorerRule(scorer="probe"), concurrency=3), sink, registry=scorers) as executor:
        await executor.consume_runs([make_run(i) for i in range(40)])
        await executor.drain()
    assert peak == 3
    assert len(sink.records) == 40


async def test_a_full_queue_makes_consume_runs_wait_and_drops_nothing() -> None:
    gate = asyncio.Event()
    started = 0

    async def gated(ctx: StepContext) -> float:
        nonlocal started
        started += 1
        await gate.wait()
        return 1.0

    sink = RecordingSink()
    scorers = registry_of(gated=create_scorer(id="gated", description="d").generate_score(gated))
    async with running(config(ScorerRule(scorer="gated"), concurrency=1), sink, registry=scorers) as executor:
        producer = asyncio.create_task(executor.consume_runs([make_run(i) for i in range(20)]))
        await asyncio.sleep(0.05)
        assert not producer.done()  # one job running, the queue full: the producer waits
        assert started == 1
        gate.set()
        await asyncio.wait_for(producer, 5)
        await executor.drain()
    assert len(sink.records) == 20
    assert len({r.trace_id for r in sink.records}) == 20


async def test_shutdown_finishes_in_flight_work_and_flushes() -> None:
    async def slow(ctx: StepContext) -> float:
        await asyncio.sleep(0.05)
        return 0.25

    sink = RecordingSink()
    scorers = registry_of(slow=create_scorer(id="slow", description="d").generate_score(slow))
    executor = ScoringExecutor(
        config(ScorerRule(scorer="slow")), sink, ScoringMetrics(), registry=scorers, flush_interval=3600
    )
    await executor.start()
    await executor.consume_runs([make_run(i) for i in range(6)])
    await asyncio.sleep(0.15)
    assert sink.writes == []  # scored but still buffered: the periodic flush is an hour away
    await executor.consume_runs([make_run(i) for i in range(6, 10)])
    await executor.shutdown()
    assert sorted(int(r.trace_id, 16) for r in sink.records) == list(range(10))
    assert all(r.score == 0.25 for r in sink.records)

    writes = len(sink.writes)
    await executor.shutdown()  # idempotent
    assert len(sink.writes) == writes
    with pytest.raises(RuntimeError):
        await executor.consume_runs([make_run(99)])
    with pytest.raises(RuntimeError):
        await executor.start()


async def test_shutdown_before_start_is_safe_and_consume_needs_start() -> None:
    sink = RecordingSink()
    executor = ScoringExecutor(config(ScorerRule(scorer="textual-difference")), sink, ScoringMetrics())
    with pytest.raises(RuntimeError, match="start"):
        await executor.consume_runs([make_run(1)])
    await executor.shutdown()
    await executor.shutdown()
    assert sink.writes == []


async def test_the_periodic_flush_retries_after_a_sink_failure(caplog: pytest.LogCaptureFixture) -> None:
    sink = RecordingSink(fail_first=1)
    async with running(
        config(ScorerRule(scorer="textual-difference")), sink, flush_interval=0.02
    ) as executor:
        await executor.consume_runs([make_run(i) for i in range(3)])
        for _ in range(200):
            if len(sink.records) == 3:
                break
            await asyncio.sleep(0.01)
    assert sorted(int(r.trace_id, 16) for r in sink.records) == [0, 1, 2]  # written once, after a retry
    assert any("writing scores failed" in message for message in caplog.messages)


async def test_rows_are_written_at_once_when_no_write_ran_for_the_flush_interval() -> None:
    sink = RecordingSink()
    async with running(config(ScorerRule(scorer="textual-difference")), sink, flush_interval=0.5) as executor:
        await asyncio.sleep(0.6)  # quiet: nothing to write for longer than the interval
        submitted = time.monotonic()
        await executor.consume_runs([make_run(1)])
        for _ in range(100):
            if sink.records:
                break
            await asyncio.sleep(0.01)
        waited = time.monotonic() - submitted
    assert waited < 0.25  # not at the next tick of a 0.5 s timer


async def test_drain_reports_a_sink_failure_and_keeps_the_rows() -> None:
    sink = RecordingSink(fail_first=1)
    async with running(
        config(ScorerRule(scorer="textual-difference")), sink, flush_interval=3600
    ) as executor:
        await executor.consume_runs([make_run(1), make_run(2)])
        with pytest.raises(ConnectionError):
            await executor.drain()
        await executor.drain()
    assert sorted(int(r.trace_id, 16) for r in sink.records) == [1, 2]
    assert len(sink.decisions) == 2


async def test_a_permanent_store_error_sets_the_write_aside_at_once_and_counts_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = ScoringMetrics()
    refused = StoreError("insert into scores failed: Code: 53. Type mismatch", retriable=False)
    sink = RecordingSink(fail_first=1, error=refused)
    async with running(
        config(ScorerRule(scorer="textual-difference")), sink, metrics=metrics, flush_interval=3600
    ) as executor:
        await executor.consume_runs([make_run(1), make_run(2)])
        await executor.drain()  # no error: the refused rows are not kept for another try
        await executor.consume_runs([make_run(3)])
        await executor.drain()
    assert [int(r.trace_id, 16) for r in sink.records] == [3]  # later rows are not blocked
    assert sink.attempts == 2
    dropped = "tracescore_scoring_rows_dropped_total"
    assert metrics.registry.get_sample_value(dropped, {"kind": "score"}) == 2
    assert metrics.registry.get_sample_value(dropped, {"kind": "decision"}) == 2
    assert any(
        "refused 2 score rows and 2 decisions for good" in message
        and "Type mismatch" in message
        and "scored again on the next start" in message
        for message in caplog.messages
    )


async def test_a_retriable_store_error_keeps_the_rows_for_the_next_write() -> None:
    sink = RecordingSink(fail_first=1, error=StoreError("cannot reach ClickHouse", retriable=True))
    async with running(
        config(ScorerRule(scorer="textual-difference")), sink, flush_interval=3600
    ) as executor:
        await executor.consume_runs([make_run(1)])
        with pytest.raises(StoreError):
            await executor.drain()
        await executor.drain()
    assert [int(r.trace_id, 16) for r in sink.records] == [1]


async def test_score_rows_carry_the_run_and_rule() -> None:
    sink = RecordingSink()
    cfg = config(ScorerRule(scorer="textual-difference", name="td-live", sample_rate=1.0))
    async with running(cfg, sink, source="backfill") as executor:
        await executor.consume_runs([make_run(7, agent="weather", service="svc-a")])
        await executor.drain()
    [record] = sink.records
    assert (record.trace_id, record.span_id) == (f"{7:032x}", f"{7:016x}")
    assert (record.scorer_id, record.score, record.reason) == ("td-live", 0.5, "")
    assert (record.agent_name, record.service_name, record.source) == ("weather", "svc-a", "backfill")
    assert record.latency_ms >= 0
    # The declared version of the prebuilt scorer's code, and the hash of its configuration.
    assert re.fullmatch(r"1\+[0-9a-f]{8}", record.scorer_version)
    assert record.label == ""  # textual difference has no labels
    # "ab" vs "ba": Mastra's preprocess result (ratio, confidence, changes, lengthDiff).
    assert record.step_results == {
        "preprocess_step_result": {"ratio": 0.5, "confidence": 1.0, "changes": 1, "length_diff": 0.0}
    }
    json.dumps(record.step_results, allow_nan=False)
    [decision] = sink.decisions
    assert (decision.scorer_id, decision.decision, decision.source) == ("td-live", "scored", "backfill")


async def test_a_labelled_scorer_labels_its_rows() -> None:
    sink = RecordingSink()
    rule = ScorerRule(scorer="check-includes", options={"expected": "BA"})  # case-insensitive by default
    async with running(config(rule), sink) as executor:
        await executor.consume_runs([make_run(1), make_run(2, answer="ab")])
        await executor.drain()
    assert sorted((int(r.trace_id, 16), r.score, r.label) for r in sink.records) == [
        (1, 1.0, "pass"),
        (2, 0.0, "fail"),
    ]


async def test_a_score_outside_the_scorers_scale_is_a_failed_decision_and_no_row() -> None:
    overconfident = create_scorer(id="overconfident", description="d").generate_score(lambda ctx: 1.7)
    not_a_number = create_scorer(id="nan", description="d").generate_score(lambda ctx: float("nan"))
    sink = RecordingSink()
    registry = {"overconfident": lambda: overconfident, "nan": lambda: not_a_number}
    cfg = config(ScorerRule(scorer="overconfident"), ScorerRule(scorer="nan"))
    async with running(cfg, sink, registry=registry) as executor:
        await executor.consume_runs([make_run(1)])
        await executor.drain()
    assert sink.records == []
    details = {d.scorer_id: (d.decision, d.detail) for d in sink.decisions}
    assert details["overconfident"][0] == details["nan"][0] == "failed"
    assert "returned 1.7, outside its scale [0, 1]" in details["overconfident"][1]
    assert "returned nan, not a finite number" in details["nan"][1]


async def test_metrics_count_decisions_and_scores() -> None:
    metrics = ScoringMetrics()
    sink = RecordingSink()
    cfg = config(
        ScorerRule(scorer="textual-difference", filter=RunFilter(agent_name=["weather"])),
        ScorerRule(scorer="content-similarity", sample_rate=0.0),
    )
    async with running(cfg, sink, metrics=metrics) as executor:
        await executor.consume_runs([make_run(1), make_run(2), make_run(3, agent="other")])
        await executor.drain()

    def count(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    decisions = "tracescore_scoring_decisions_total"
    assert count(decisions, scorer="textual-difference", decision="scored") == 2
    assert count(decisions, scorer="textual-difference", decision="filtered") == 1
    assert count(decisions, scorer="content-similarity", decision="sampled_out") == 3
    assert count("tracescore_scores_written_total") == 2


def test_a_bad_rule_fails_at_construction() -> None:
    metrics, sink = ScoringMetrics(), RecordingSink()
    with pytest.raises(
        ValueError,
        match=r"scoring\.rules\[1\] \(nope\): unknown scorer 'nope' \('tracescore scorers' lists all \d+\)",
    ):
        ScoringExecutor(
            config(ScorerRule(scorer="textual-difference"), ScorerRule(scorer="nope")), sink, metrics
        )
    with pytest.raises(
        ValueError,
        match=r"no option 'ignoreCas'; did you mean 'ignore_case'\? \(its options: ignore_case, ignore_white",
    ):
        ScoringExecutor(
            config(ScorerRule(scorer="content-similarity", options={"ignoreCas": 1})), sink, metrics
        )
    with pytest.raises(ValueError, match="Either expectedTool or expectedToolOrder must be provided"):
        ScoringExecutor(config(ScorerRule(scorer="tool-call-accuracy-code")), sink, metrics)
    with pytest.raises(ValueError, match="both store scores as 'textual-difference'"):
        ScoringExecutor(
            config(ScorerRule(scorer="textual-difference"), ScorerRule(scorer="textual-difference")),
            sink,
            metrics,
        )
    with pytest.raises(ValueError, match="both store scores as 'tool-call-accuracy-code' for the same runs"):
        ScoringExecutor(
            config(
                ScorerRule(scorer="tool-call-accuracy-code", options={"expected_tool": "a"}),
                ScorerRule(
                    scorer="tool-call-accuracy-code",
                    options={"expected_tool": "b"},
                    filter=RunFilter(agent_name=["travel"]),
                ),
            ),
            sink,
            metrics,
        )
    named = ScoringExecutor(
        config(ScorerRule(scorer="textual-difference"), ScorerRule(scorer="textual-difference", name="td-2")),
        sink,
        metrics,
    )
    assert named.scorer_ids == ("textual-difference", "td-2")


async def test_registry_accepts_names_ids_and_both_option_spellings() -> None:
    run = make_run(1)
    run = run.model_copy(
        update={
            "output": [
                Message(role="assistant", content="x", tool_invocations=[ToolInvocation(tool_name="b")])
            ]
        }
    )
    camel = build_scorer("tool-call-accuracy-code", {"expectedTool": "b", "strictMode": True})
    snake = build_scorer("tool-call-accuracy-code", {"expected_tool": "b", "strict_mode": True})
    assert (await camel.run(run)).score == (await snake.run(run)).score == 1.0
    with pytest.raises(ValueError, match="given twice"):
        build_scorer("content-similarity", {"ignoreCase": True, "ignore_case": False})
    with pytest.raises(ValueError, match="invalid options"):
        build_scorer("tool-call-accuracy-code", {"expectedToolOrder": "a,b"})
    assert build_scorer("content-similarity").id == "content-similarity"
