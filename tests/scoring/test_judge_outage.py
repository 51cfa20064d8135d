"""A judge outage leaves runs pending, not failed: they are tried again with backoff and scored when
the judge is back; only a judge that stays down past ``retry_max_age_seconds`` fails them. Failures
are logged once each, rate-limited per scorer. The judge is the local OpenAI-compatible server."""

from __future__ import annotations

import logging

import pytest

from tests.support.llm_server import LLMServer, error_reply, json_reply, text_reply
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink, until_done
from tracescore.schemas import TraceRound
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.failure_log import FailureLog
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

RUN = agent_run("Is this rude?", "Not at all, thank you.", trace_id="c" * 32, span_id="d" * 16)


def toxicity_rule(server: LLMServer) -> ScorerRule:
    judge = {"model": "openai/gpt-4o-mini", "api_base": server.api_base, "api_key": "k", "max_retries": 1}
    return ScorerRule(scorer="toxicity", options={"judge": judge, "scale": 1})


async def test_runs_wait_for_a_judge_outage_and_are_scored_when_it_is_back(
    llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Down for the first attempt (the call and its one retry), then answering.
    llm_server.script(
        error_reply(503),
        error_reply(503),
        json_reply({"verdicts": [{"verdict": "no", "reason": "polite"}]}),
        text_reply("The score is 0 because the answer is polite."),
    )
    sink, metrics = RecordingSink(), ScoringMetrics()
    config = ScoringConfig(rules=[toxicity_rule(llm_server)], retry_max_age_seconds=60)
    executor = ScoringExecutor(config, sink, metrics, flush_interval=0.05)
    await executor.start()
    round = TraceRound(trace_id=RUN.trace_id, since_unix_nano=1, through_unix_nano=2, reason="idle")
    try:
        with caplog.at_level(logging.WARNING, logger="tracescore.scoring.runtime.executor"):
            await executor.consume_runs([RUN], round)
            await executor.drain()  # the first attempt failed: the run waits, its round stays open
            assert sink.decisions == [] and sink.done == []
            assert metrics.registry.get_sample_value("tracescore_scoring_pending_retries") == 1
            assert executor.oldest_open() == 1
            await until_done(executor, sink)  # the retry comes after a second or so of backoff
    finally:
        await executor.shutdown()
    [decision] = sink.decisions
    assert (decision.decision, sink.records[0].score) == ("scored", 0.0)
    assert sink.done == [round]
    assert len(llm_server.chat_requests) == 4
    assert any("will be retried" in message and "toxicity" in message for message in caplog.messages)


async def test_a_judge_that_stays_down_past_the_max_age_fails_the_run(llm_server: LLMServer) -> None:
    llm_server.script(*[error_reply(503)] * 2)
    sink = RecordingSink()
    config = ScoringConfig(rules=[toxicity_rule(llm_server)], retry_max_age_seconds=0)
    executor = ScoringExecutor(config, sink, ScoringMetrics())
    await executor.start()
    try:
        await executor.consume_runs([RUN])
        await executor.drain()
    finally:
        await executor.shutdown()
    [decision] = sink.decisions
    assert decision.decision == "failed" and "ServiceUnavailable" in decision.detail


def test_failures_are_logged_once_each_and_repeats_summed_up_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    failures = FailureLog(logging.getLogger("test.failures"), interval_seconds=60, clock=lambda: now[0])
    bias, toxicity = "rule bias (scorer bias)", "rule toxicity (scorer toxicity)"
    with caplog.at_level(logging.WARNING, logger="test.failures"):
        for index in range(5):
            now[0] = index
            failures.failed(bias, "auth", f"trace t{index} span s{index}", "judge 401")
        failures.failed(bias, "timeout", "trace t5 span s5", "timed out\nafter 1 s")  # another kind
        failures.failed(toxicity, "auth", "trace t9 span s9", "judge 401")
        now[0] = 61.0
        failures.flush()  # the interval is over: one line for the four repeats
        now[0] = 70.0
        failures.failed(bias, "auth", "trace t6 span s6", "judge 401 again")  # still failing: counted
        now[0] = 121.0
        failures.flush()
        now[0] = 182.0
        failures.flush()  # a quiet interval: forgotten
        failures.failed(bias, "auth", "trace t7 span s7", "judge 401")
        failures.failed(bias, "auth", "trace t8 span s8", "judge 401")
        failures.flush(final=True)  # at shutdown
    assert caplog.messages == [
        "rule bias (scorer bias) failed on trace t0 span s0: judge 401",
        "rule bias (scorer bias) failed on trace t5 span s5: timed out after 1 s",
        "rule toxicity (scorer toxicity) failed on trace t9 span s9: judge 401",
        "rule bias (scorer bias): 4 more failure(s) of the same kind in the last 61 s; "
        "the latest on trace t4 span s4: judge 401",
        "rule bias (scorer bias): 1 more failure(s) of the same kind in the last 60 s; "
        "the latest on trace t6 span s6: judge 401 again",
        "rule bias (scorer bias) failed on trace t7 span s7: judge 401",
        "rule bias (scorer bias): 1 more failure(s) of the same kind in the last 0 s; "
        "the latest on trace t8 span s8: judge 401",
    ]


def test_a_recovery_is_one_line_with_the_failures_since_the_first(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    failures = FailureLog(logging.getLogger("test.failures"), interval_seconds=60, clock=lambda: now[0])
    who = "kafka receiver"
    with caplog.at_level(logging.WARNING, logger="test.failures"):
        failures.recovered(who, "reached b:9092 again")  # never failed: nothing to say
        for second in (10, 30, 70, 100):  # a summary at 70 s starts a new interval, the count goes on
            now[0] = second
            failures.failed(who, "unavailable", "b:9092", "NoBrokersAvailable")
        now[0] = 130.0
        failures.recovered(who, "reached b:9092 again")
        failures.recovered(who, "reached b:9092 again")  # said once
        now[0] = 200.0
        failures.failed(who, "unavailable", "b:9092", "NoBrokersAvailable")  # failing anew: in full
    assert caplog.messages == [
        "kafka receiver failed on b:9092: NoBrokersAvailable",
        "kafka receiver: 1 more failure(s) of the same kind in the last 60 s; the latest on b:9092: "
        "NoBrokersAvailable",
        "kafka receiver reached b:9092 again after 4 failure(s) in 120 s",
        "kafka receiver failed on b:9092: NoBrokersAvailable",
    ]
