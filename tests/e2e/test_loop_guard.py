"""The loop guard: tracescore's own judge calls, traced and sent back to tracescore, are never scored.

A real ``tracescore serve`` runs with an OpenTelemetry SDK in its process exporting to its own
receiver (``tests.support.instrumented_serve``), so every judge call it makes comes back as a span.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.llm_server import LLMServer, answering
from tests.support.serve import ENV, free_port, stop, wait_healthy
from tests.support.sinks import RecordingSink
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas import AgentRun, Message, RunInput, Span
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.schemas.spans import AttributeValue
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.judge import DATA_PREAMBLE
from tracescore.scoring.judge.call_guard import JUDGE_SPAN_ATTRIBUTE
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics


def _send(grpc_port: int) -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": "support-app"}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_id = emit_scenario(provider.get_tracer("app"), SCENARIOS[3], time.time_ns())
    provider.shutdown()
    return trace_id


def _metric(base: str, name: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


async def test_judge_spans_sent_back_to_tracescore_are_never_scored(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.responder = answering({"verdicts": [{"verdict": "no", "reason": "polite"}]}, "It is polite.")
    grpc_port, http_port = free_port(), free_port()
    judge = {"model": "openai/gpt-4o-mini", "api_base": llm_server.api_base, "api_key": "test-key"}
    config = {
        "store": str(tmp_path / "store"),
        "receiver": {"grpc_port": grpc_port, "http_port": http_port},
        "assembly": {"idle_seconds": 0.3},
        "scoring": {
            "rules": [{"scorer": "toxicity", "options": {"judge": judge}}, {"scorer": "textual-difference"}]
        },
    }
    config_file = tmp_path / "tracescore.yaml"
    config_file.write_text(yaml.safe_dump(config))
    log = (tmp_path / "serve.log").open("w")
    proc = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-m", "tests.support.instrumented_serve", str(config_file)],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=ENV,
    )
    try:
        base = await asyncio.to_thread(wait_healthy, proc, http_port)
        trace_id = await asyncio.to_thread(_send, grpc_port)
        deadline = time.monotonic() + 60
        # The run's two judge calls come back as two traces and are recognised (after idle).
        while await asyncio.to_thread(_metric, base, "tracescore_loop_guarded_units_total") < 2:
            assert time.monotonic() < deadline, "the judge's spans were not seen"
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)  # room for a wrong decision to be written
    finally:
        assert stop(proc) == 0

    store = Store(str(tmp_path / "store"))
    await store.start()
    try:
        judge_spans = await store.query(
            "SELECT TraceId, SpanName FROM otel_traces WHERE SpanAttributes[{key:String}] = 'true'",
            {"key": JUDGE_SPAN_ATTRIBUTE},
        )
        decisions = await store.query("SELECT TraceId, ScorerId, Decision FROM score_decisions FINAL")
    finally:
        await store.shutdown()
    assert len(judge_spans) == 2 and {row["SpanName"] for row in judge_spans} == {"chat openai/gpt-4o-mini"}
    assert len(llm_server.chat_requests) == 2  # the run's own two calls, nothing judged the judge
    # Decisions exist for the user's run only: the judge's traces got none (not even skipped_empty).
    assert {row["TraceId"] for row in decisions} == {trace_id}
    assert {(row["ScorerId"], row["Decision"]) for row in decisions} == {
        ("toxicity", "scored"),
        ("textual-difference", "scored"),
    }


def _span(span_id: str, parent: str = "", /, **attributes: AttributeValue) -> Span:
    return Span(trace_id="e" * 32, span_id=span_id, parent_span_id=parent, name="chat", attributes=attributes)


async def test_calls_under_a_judge_span_or_with_the_judge_preamble_are_never_scored() -> None:
    judge_span = _span("1" * 16, **{JUDGE_SPAN_ATTRIBUTE: True})
    instrumented = _span("2" * 16, judge_span.span_id)  # an HTTP or LLM client's span under ours
    user_span = _span("3" * 16)
    trace = TraceView(spans={s.span_id: s for s in (judge_span, instrumented, user_span)})

    def run(span_id: str, system: str = "Be brief.") -> AgentRun:
        return AgentRun(
            trace_id="e" * 32,
            span_id=span_id,
            input=RunInput(
                input_messages=[Message(role="user", content="ab")],
                system_messages=[Message(role="system", content=system)],
            ),
            output=[Message(role="assistant", content="ba")],
        )

    # A judge prompt captured by an instrumentation that did not keep our span as its parent.
    captured = run("4" * 16, system=DATA_PREAMBLE + "\n\nYou grade answers.")
    trace = TraceView(spans={**trace.spans, "4" * 16: _span("4" * 16)})
    sink, metrics = RecordingSink(), ScoringMetrics()
    executor = ScoringExecutor(ScoringConfig(rules=[ScorerRule(scorer="textual-difference")]), sink, metrics)
    await executor.start()
    try:
        await executor.consume_runs(
            [run(instrumented.span_id), run(user_span.span_id), captured], trace=trace
        )
        await executor.drain()
    finally:
        await executor.shutdown()
    assert [d.span_id for d in sink.decisions] == [user_span.span_id]
    assert metrics.registry.get_sample_value("tracescore_loop_guarded_units_total") == 2
    assert sink.decisions[0].decision == "scored"
