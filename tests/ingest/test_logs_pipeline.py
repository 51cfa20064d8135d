"""Log records end to end: with their trace through the assembler to the transform, into ``otel_logs``
through a running Service (HTTP and Kafka), and through ``tracescore inspect --logs``.

The legacy fixture (GenAI semconv v1.28-v1.36, content in log records) has two traces of one chat span
each; every message is a log record joined to its span only by trace and span id.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.clock import ManualClock
from tests.support.fixture_files import OTLP_DIR
from tests.support.otlp import http_request
from tests.support.serve import tracescore
from tests.support.service import running_service, service_config
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.cli import build_parser
from tracescore.ingest.cli.serve_command import service_config as cli_service_config
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.decode import decode_logs, decode_traces
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.service import Service
from tracescore.ingest.transform.correlate import LOG_BODY_ATTRIBUTE, attach_logs
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import AgentRun, LogRecord, Span, SpanBatch, TraceRound
from tracescore.schemas.config import AssemblyConfig

LEGACY = "otel_genai_semconv__legacy-event-based-semconv-v1-28-v1-36-content-in-logrecords"
LEGACY_TRACES = OTLP_DIR / f"{LEGACY}.traces.json"
LEGACY_LOGS = OTLP_DIR / f"{LEGACY}.logs.json"
FIRST_TRACE, FIRST_CHAT = "4d6fdb451bb0e300a3ebbf2b434e9fa0", "591a967493a73908"
SECOND_TRACE, SECOND_CHAT = "c2e67b0aab4586984e72753e4b2a2f83", "80ab5126c616b43a"
FIRST_EVENTS = [
    "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.user.message",
    "gen_ai.choice",
]  # fmt: skip
SECOND_EVENTS = [
    "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.user.message",
    "gen_ai.assistant.message", "gen_ai.tool.message", "gen_ai.choice",
]  # fmt: skip
JSON = {"Content-Type": "application/json"}
SCORERS = {"content-similarity", "textual-difference"}
FINAL_ANSWER = "The weather in Paris is currently rainy with a temperature of 57°F."


def legacy_batches() -> tuple[SpanBatch, SpanBatch]:
    traces = decode_traces("otlp_json", LEGACY_TRACES.read_bytes())
    return traces, decode_logs("otlp_json", LEGACY_LOGS.read_bytes())


def sample(service: Service, name: str, **labels: str) -> float | None:
    return service.metrics.registry.get_sample_value(name, labels)


def all_text(run: AgentRun) -> str:
    return json.dumps(run.to_json_dict(), ensure_ascii=False)


# --- assembler -> transform ------------------------------------------------------------------------


class RunRecorder:
    """A TraceConsumer that keeps what the assembler hands on and the runs the transform builds from it."""

    def __init__(self) -> None:
        self.received: list[tuple[list[Span], list[LogRecord]]] = []
        self.runs: list[AgentRun] = []

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        self.received.append((list(spans), list(logs)))
        self.runs.extend(build_runs(spans, logs))


@pytest.mark.parametrize("logs_first", [False, True], ids=["spans-first", "logs-first"])
async def test_assembled_trace_carries_its_log_records_to_the_transform(logs_first: bool) -> None:
    traces, logs = legacy_batches()
    recorder, clock = RunRecorder(), ManualClock()
    config = AssemblyConfig(idle_seconds=1.0)
    assembler = TraceAssembler(config, next=recorder, metrics=Metrics(), clock=clock)
    for part in (logs, traces) if logs_first else (traces, logs):
        await assembler.consume_spans(part)
    clock.advance(1.0)
    await assembler.flush_ready()

    by_trace = {spans[0].trace_id: (spans, records) for spans, records in recorder.received}
    assert set(by_trace) == {FIRST_TRACE, SECOND_TRACE}
    expected = ((FIRST_TRACE, FIRST_CHAT, FIRST_EVENTS), (SECOND_TRACE, SECOND_CHAT, SECOND_EVENTS))
    for trace_id, chat_id, events in expected:
        spans, records = by_trace[trace_id]
        assert [s.span_id for s in spans] == [chat_id]
        assert [r.event_name for r in records] == events
        assert {(r.trace_id, r.span_id) for r in records} == {(trace_id, chat_id)}
        # Correlation puts each record on its span as an event: its name, its body beside its attributes.
        [chat] = attach_logs(spans, records)
        added = chat.events[len(spans[0].events) :]
        assert [e.name for e in added] == events
        assert added[1].attributes[LOG_BODY_ATTRIBUTE] == {"content": "Hi, I am planning a trip to France."}
        assert added[1].attributes["gen_ai.system"] == "openai"
    tool = by_trace[SECOND_TRACE][1][5]
    assert tool.body == {"content": "rainy, 57°F", "id": "call_VSPygqKTWdrhaFErNvMV18Yl"}

    # One run per chat span, rooted where the records were attached.
    assert sorted((r.trace_id, r.span_id) for r in recorder.runs) == [
        (FIRST_TRACE, FIRST_CHAT), (SECOND_TRACE, SECOND_CHAT)
    ]  # fmt: skip
    # The GenAI adapter reads the attached events as messages: the content exists only in the logs.
    first, second = sorted(recorder.runs, key=lambda r: r.trace_id)
    assert (first.trace_id, second.trace_id) == (FIRST_TRACE, SECOND_TRACE)
    assert "What's the weather in Paris?" in all_text(first)
    assert "What's the weather in Paris?" in all_text(second)
    assert second.output[-1].content == FINAL_ANSWER


# --- a running Service over HTTP ---------------------------------------------------------------------


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    async with running_service(service_config(tmp_path)) as svc:
        yield svc


async def assert_run_scored_or_skipped(service: Service, trace_id: str, root: str) -> None:
    """Each scorer decided on the run rooted at ``root``; a 'scored' decision has its score row."""
    decisions = {d["scorer_id"]: d for d in await service.scores.trace_decisions(trace_id)}
    assert set(decisions) == SCORERS
    assert {d["span_id"] for d in decisions.values()} == {root}
    scores = {s["scorer_id"] for s in await service.scores.trace_scores(trace_id)}
    for scorer, decision in decisions.items():
        # A scorer skips a run that lacks the text it compares (the first chat ends in a tool call).
        assert decision["decision"] in ("scored", "skipped_empty"), decision
        assert (scorer in scores) == (decision["decision"] == "scored")


@pytest.mark.parametrize("logs_first", [False, True], ids=["traces-then-logs", "logs-then-traces"])
async def test_fixture_traces_and_logs_posted_to_the_service(service: Service, logs_first: bool) -> None:
    base = f"http://127.0.0.1:{service.http.port}"
    posts = [("/v1/traces", LEGACY_TRACES), ("/v1/logs", LEGACY_LOGS)]
    for path, file in reversed(posts) if logs_first else posts:
        reply = await http_request("POST", base + path, data=file.read_bytes(), headers=JSON)
        assert (reply.status, reply.json()) == (200, {})
    await service.flush()

    rows = await service.store.query(
        "SELECT TraceId, SpanId, EventName, Body, ServiceName FROM otel_logs ORDER BY Timestamp"
    )
    assert [(r["TraceId"], r["SpanId"], r["EventName"]) for r in rows] == [
        *((FIRST_TRACE, FIRST_CHAT, e) for e in FIRST_EVENTS),
        *((SECOND_TRACE, SECOND_CHAT, e) for e in SECOND_EVENTS),
    ]
    assert rows[3]["Body"] == '{"content":"What\'s the weather in Paris?"}'
    assert {r["ServiceName"] for r in rows} == {"weather-agent-demo"}
    assert sample(service, "tracescore_logs_stored_total") == 12
    assert sample(service, "tracescore_logs_received_total", transport="http") == 12
    await assert_run_scored_or_skipped(service, FIRST_TRACE, FIRST_CHAT)
    await assert_run_scored_or_skipped(service, SECOND_TRACE, SECOND_CHAT)


# --- Kafka: the collector's otlp_logs topic ------------------------------------------------------------


def sdk_records() -> tuple[bytes, bytes, str, str]:
    """One chat span and its GenAI log records, encoded as the collector's kafka exporter writes them
    (one OTLP protobuf export request per record): (spans record, logs record, trace id, span id)."""
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    resource = Resource.create({"service.name": "kafka-logs"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    logger = logger_provider.get_logger("opentelemetry.instrumentation.openai_v2", "2.1b0")
    with tracer_provider.get_tracer("e2e").start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "gpt-4o")
        logger.emit(event_name="gen_ai.user.message", body={"content": "What's the weather in Paris?"})
        logger.emit(
            event_name="gen_ai.choice",
            body={"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Rainy."}},
        )
        context = span.get_span_context()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return (
        encode_spans(spans.get_finished_spans()).SerializeToString(),
        encode_logs(logs.get_finished_logs()).SerializeToString(),
        format(context.trace_id, "032x"),
        format(context.span_id, "016x"),
    )


async def test_kafka_logs_topic_to_otel_logs_and_bad_records_to_the_dead_letter_topic(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.create_topics([NewTopic("otlp_spans", 1, 1), NewTopic("otlp_logs", 1, 1)])
    admin.close()
    spans_record, logs_record, trace_id, span_id = sdk_records()
    garbage = b"\x0a\xff\xffnot an otlp request"
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    producer.send("otlp_logs", logs_record)
    producer.send("otlp_logs", garbage)
    producer.send("otlp_spans", spans_record)
    producer.flush()
    producer.close()

    svc = Service(
        service_config(
            tmp_path,
            **{
                "kafka.bootstrap": kafka_bootstrap, "kafka.topic": "otlp_spans",
                "kafka.logs_topic": "otlp_logs", "kafka.group": "logs-e2e", "kafka.session_timeout_ms": 6000,
            },
        )
    )  # fmt: skip
    await svc.start()
    try:
        assert svc.kafka is not None
        await svc.kafka.wait_assigned()
        deadline = time.monotonic() + 30
        while True:
            rows = await svc.store.query(
                "SELECT TraceId, SpanId, EventName, Body FROM otel_logs ORDER BY Timestamp"
            )
            stored_spans = await svc.store.query("SELECT count() AS n FROM otel_traces")
            if (len(rows) >= 2 and stored_spans[0]["n"] >= 1) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        # A span in the store may not have reached the assembler yet (the consumer hands it on after the
        # commit): flush until the run is decided, as a released trace is.
        while True:
            await svc.flush()
            if await svc.scores.trace_decisions(trace_id) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert [(r["TraceId"], r["SpanId"], r["EventName"]) for r in rows] == [
            (trace_id, span_id, "gen_ai.user.message"), (trace_id, span_id, "gen_ai.choice")
        ]  # fmt: skip
        assert rows[0]["Body"] == '{"content":"What\'s the weather in Paris?"}'
        assert sample(svc, "tracescore_logs_received_total", transport="kafka") == 2
        assert sample(svc, "tracescore_dead_letters_total") == 1
        await assert_run_scored_or_skipped(svc, trace_id, span_id)
    finally:
        await svc.shutdown()

    def parked() -> list[Any]:
        dlq = KafkaConsumer(bootstrap_servers=kafka_bootstrap, consumer_timeout_ms=3000)
        partitions = dlq.partitions_for_topic("otlp_spans.dlq") or ()
        dlq.assign([TopicPartition("otlp_spans.dlq", p) for p in partitions])
        dlq.seek_to_beginning()
        found = list(dlq)
        dlq.close()
        return found

    [dead] = await asyncio.to_thread(parked)
    headers = dict(dead.headers)
    assert dead.value == garbage
    assert headers["tracescore.source.topic"] == b"otlp_logs"
    assert b"ExportLogsServiceRequest" in headers["tracescore.error"]


# --- configuration and the command line ----------------------------------------------------------------


def test_kafka_logs_topic_from_flag_and_environment() -> None:
    args = build_parser().parse_args(
        ["serve", "--kafka-bootstrap", "h:9092", "--kafka-logs-topic", "otlp_logs"]
    )
    config = cli_service_config(args)
    assert (config.kafka.enabled, config.kafka.topic, config.kafka.logs_topic) == (True, None, "otlp_logs")
    assert config.kafka.dlq_topic == "otlp_logs.dlq"

    env = {
        "TRACESCORE_KAFKA_BOOTSTRAP": "h:9092",
        "TRACESCORE_KAFKA_LOGS_TOPIC": "logs",
        "TRACESCORE_KAFKA_TOPIC": "spans",
    }
    kafka = load_config(environ=env).kafka
    assert (kafka.topic, kafka.logs_topic, kafka.dlq_topic) == ("spans", "logs", "spans.dlq")

    with pytest.raises(ValueError, match="must be different topics"):
        load_config(environ={**env, "TRACESCORE_KAFKA_LOGS_TOPIC": "spans"})
    with pytest.raises(ValueError, match="both bootstrap and topic"):
        load_config(environ={"TRACESCORE_KAFKA_LOGS_TOPIC": "logs"})


def test_inspect_with_logs_gives_each_trace_its_records() -> None:
    done = tracescore("inspect", str(LEGACY_TRACES), "--logs", str(LEGACY_LOGS))
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)
    assert [(r["trace_id"], r["span_id"], r["model"]) for r in runs] == [
        (FIRST_TRACE, FIRST_CHAT, "gpt-4o"), (SECOND_TRACE, SECOND_CHAT, "gpt-4o")
    ]  # fmt: skip
    assert "What's the weather in Paris?" in json.dumps(runs[1], ensure_ascii=False)
    assert runs[1]["output"][-1]["content"] == FINAL_ANSWER
    # Without --logs the same spans carry no message content at all.
    bare = json.loads(tracescore("inspect", str(LEGACY_TRACES)).stdout)
    assert "What's the weather in Paris?" not in json.dumps(bare, ensure_ascii=False)

    wrong = tracescore("inspect", str(LEGACY_TRACES), "--logs", str(LEGACY_TRACES))
    assert wrong.returncode == 2
    assert (
        wrong.stderr == f"tracescore: error: {LEGACY_TRACES}: holds spans (resourceSpans), not log records\n"
    )
