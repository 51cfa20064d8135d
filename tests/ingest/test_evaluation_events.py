"""Scores as ``gen_ai.evaluation.result`` events: the real OpenTelemetry SDK exporter sends them to a real
OTLP receiver on loopback (gRPC and HTTP), parented to the scored span; a receiver that is busy gets
them on retry; one that is down or slow never holds scoring up, and what is lost is counted."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypedDict

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import format_span_id, format_trace_id, get_current_span
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from tests.support.otlp import agent_trace_requests
from tests.support.otlp_logs import closed_endpoint, grpc_logs_receiver, logs_receiver
from tests.support.service import running_service, service_config
from tracescore.ingest.score_export.evaluation_events import (
    EVENT_NAME,
    EvaluationEventExporter,
    evaluation_attributes,
    span_context,
)
from tracescore.ingest.service import Service
from tracescore.schemas import ScoreRecord
from tracescore.schemas.durations import unix_nanos
from tracescore.schemas.export_config import OtlpExportConfig

ExportProtocol = Literal["grpc", "http/protobuf"]
PROTOCOLS: list[ExportProtocol] = ["grpc", "http/protobuf"]
TRACE = "5dbdf98695bd5785f3d3e61006ad2dba"
SPAN = "594f8d102c7c4a19"
CREATED = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


class ExportTimings(TypedDict):
    """OtlpExportConfig's timings, short enough for a test."""

    schedule_delay_seconds: float
    timeout_seconds: float
    shutdown_timeout_seconds: float


FAST: ExportTimings = {
    "schedule_delay_seconds": 0.05,
    "timeout_seconds": 5.0,
    "shutdown_timeout_seconds": 5.0,
}


def _record(scorer: str = "answer-relevancy", **fields: Any) -> ScoreRecord:
    row: dict[str, Any] = {
        "trace_id": TRACE,
        "span_id": SPAN,
        "scorer_id": scorer,
        "score": 0.75,
        "label": "relevant",
        "reason": "It answers the question asked.",
        "judge_model": "openai/gpt-4o-mini",
        "scorer_version": "2",
        "sample_rate": 0.5,
        "created_at": CREATED,
    }
    return ScoreRecord(**{**row, **fields})


def _sample(exporter: EvaluationEventExporter, name: str, **labels: str) -> float:
    return exporter.metrics.registry.get_sample_value(name, labels) or 0.0


# --- the event's shape ----------------------------------------------------------------------------


def test_attributes_are_the_conventions_and_namespaced_extras() -> None:
    record = _record()
    assert evaluation_attributes(record) == {
        "gen_ai.evaluation.name": "answer-relevancy",
        "gen_ai.evaluation.score.value": 0.75,
        "gen_ai.evaluation.score.label": "relevant",
        "gen_ai.evaluation.explanation": "It answers the question asked.",
        "gen_ai.evaluation.evaluator.id": "answer-relevancy",
        "gen_ai.evaluation.evaluator.version": "2",
        "gen_ai.evaluation.evaluator.type": "llm_judge",
        "tracescore.score.id": record.score_id,
        "tracescore.score.source": "live",
        "tracescore.judge.model": "openai/gpt-4o-mini",
        "tracescore.sample_rate": 0.5,
    }


def test_a_bare_score_has_only_what_it_holds() -> None:
    record = ScoreRecord(trace_id=TRACE, span_id=SPAN, scorer_id="textual-difference", score=1.0)
    assert evaluation_attributes(record) == {
        "gen_ai.evaluation.name": "textual-difference",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.evaluator.id": "textual-difference",
        "tracescore.score.id": record.score_id,
        "tracescore.score.source": "live",
    }


def test_the_event_is_in_the_scored_spans_context_at_the_score_time() -> None:
    scored = get_current_span(span_context(TRACE, SPAN)).get_span_context()
    assert (format_trace_id(scored.trace_id), format_span_id(scored.span_id)) == (TRACE, SPAN)
    assert scored.is_valid and scored.trace_flags.sampled
    assert unix_nanos(CREATED) == 1_740_832_215_123_456_000  # exact, to the microsecond
    assert unix_nanos(CREATED.replace(tzinfo=None)) == unix_nanos(CREATED)  # naive is UTC


@pytest.mark.parametrize(("trace_id", "span_id"), [("not-hex", SPAN), (TRACE, "abc"), ("0" * 32, SPAN)])
def test_ids_that_are_not_ids_give_an_unparented_event(trace_id: str, span_id: str) -> None:
    assert not get_current_span(span_context(trace_id, span_id)).get_span_context().is_valid


# --- the real SDK exporter to a real receiver -----------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_events_arrive_parented_to_the_scored_span(protocol: ExportProtocol) -> None:
    with logs_receiver(protocol) as receiver:
        config = OtlpExportConfig(
            endpoint=receiver.endpoint, protocol=protocol, headers={"X-Tenant": SecretStr("team-a")}, **FAST
        )
        exporter = EvaluationEventExporter(config, CollectorRegistry(), instance="tracescore-0")
        records = [_record(), _record("toxicity", score=0.0, label="", reason="", sample_rate=1.0)]
        exporter.submit(records)
        events = await receiver.inbox.wait_for(2)
        await exporter.shutdown()

    assert [event.event_name for event in events] == [EVENT_NAME, EVENT_NAME]
    assert [event.attributes for event in events] == [evaluation_attributes(r) for r in records]
    assert {(event.trace_id, event.span_id) for event in events} == {(TRACE, SPAN)}
    assert {event.time_unix_nano for event in events} == {unix_nanos(CREATED)}
    assert {event.scope for event in events} == {"tracescore.scores"}
    resource = events[0].resource
    assert resource["service.name"] == "tracescore" and resource["service.instance.id"] == "tracescore-0"
    assert receiver.inbox.headers[0]["x-tenant"] == "team-a"
    assert _sample(exporter, "tracescore_evaluation_events_sent_total") == 2
    assert _sample(exporter, "tracescore_evaluation_events_queued") == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_busy_receiver_gets_the_events_on_retry(protocol: ExportProtocol) -> None:
    with logs_receiver(protocol, refuse_first=1) as receiver:
        exporter = EvaluationEventExporter(
            OtlpExportConfig(endpoint=receiver.endpoint, protocol=protocol, **FAST), CollectorRegistry()
        )
        exporter.submit([_record()])
        events = await receiver.inbox.wait_for(1)
        await exporter.shutdown()

    assert receiver.inbox.refused == 1  # the first export was refused, the retry taken
    assert [event.attributes["gen_ai.evaluation.name"] for event in events] == ["answer-relevancy"]
    assert _sample(exporter, "tracescore_evaluation_events_sent_total") == 1
    assert _sample(exporter, "tracescore_evaluation_events_dropped_total", reason="export_failed") == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_receiver_that_is_down_costs_scoring_nothing(protocol: ExportProtocol) -> None:
    config = OtlpExportConfig(
        endpoint=closed_endpoint(), protocol=protocol, schedule_delay_seconds=0.05, timeout_seconds=0.5
    )
    exporter = EvaluationEventExporter(config, CollectorRegistry())
    started = time.monotonic()
    exporter.submit([_record(f"scorer-{i}") for i in range(20)])
    assert time.monotonic() - started < 0.5  # queued, not sent

    async def failed() -> float:
        return _sample(exporter, "tracescore_evaluation_events_dropped_total", reason="export_failed")

    deadline = time.monotonic() + 10
    while await failed() < 20:
        assert time.monotonic() < deadline, "the export never failed"
        await asyncio.sleep(0.05)
    started = time.monotonic()
    await exporter.shutdown()
    assert time.monotonic() - started < 2
    assert _sample(exporter, "tracescore_evaluation_events_sent_total") == 0


async def test_a_full_queue_drops_the_newest_events_and_counts_them() -> None:
    with grpc_logs_receiver(hold=True) as receiver:
        config = OtlpExportConfig(
            endpoint=receiver.endpoint, max_queue_size=2, max_export_batch_size=1, **FAST
        )
        exporter = EvaluationEventExporter(config, CollectorRegistry())
        exporter.submit([_record("first")])
        assert await asyncio.to_thread(receiver.inbox.arrived.wait, 5)  # its export is held
        started = time.monotonic()
        exporter.submit([_record(f"then-{i}") for i in range(5)])  # room for two
        assert time.monotonic() - started < 0.5
        assert _sample(exporter, "tracescore_evaluation_events_dropped_total", reason="queue_full") == 3
        assert _sample(exporter, "tracescore_evaluation_events_queued") == 2
        receiver.inbox.release()
        events = await receiver.inbox.wait_for(3)
        await exporter.shutdown()

    names = [event.attributes["gen_ai.evaluation.name"] for event in events]
    assert names == ["first", "then-0", "then-1"]
    assert _sample(exporter, "tracescore_evaluation_events_sent_total") == 3


async def test_shutdown_sends_what_is_queued_and_is_idempotent() -> None:
    with grpc_logs_receiver() as receiver:
        # A delay longer than the test: only shutdown's flush can send the event.
        config = OtlpExportConfig(endpoint=receiver.endpoint, schedule_delay_seconds=60)
        exporter = EvaluationEventExporter(config, CollectorRegistry())
        exporter.submit([_record()])
        await exporter.shutdown()
        assert len(receiver.inbox.events) == 1
        await exporter.shutdown()
        exporter.submit([_record("late")])  # after shutdown: dropped, counted
    assert _sample(exporter, "tracescore_evaluation_events_dropped_total", reason="shutdown") == 1


async def test_shutdown_gives_up_on_a_receiver_that_never_answers() -> None:
    with grpc_logs_receiver(hold=True) as receiver:
        config = OtlpExportConfig(
            endpoint=receiver.endpoint,
            schedule_delay_seconds=60,
            timeout_seconds=30,
            shutdown_timeout_seconds=0.3,
        )
        exporter = EvaluationEventExporter(config, CollectorRegistry())
        exporter.submit([_record()])
        started = time.monotonic()
        await exporter.shutdown()
        assert time.monotonic() - started < 5  # not the export's 30 s, nor the SDK's own 30 s
    assert _sample(exporter, "tracescore_evaluation_events_dropped_total", reason="shutdown") == 1


# --- through the service --------------------------------------------------------------------------


async def _post(service: Service, bodies: list[bytes]) -> None:
    url = f"http://127.0.0.1:{service.http.port}/v1/traces"
    async with aiohttp.ClientSession() as session:
        for body in bodies:
            async with session.post(url, data=body, headers={"Content-Type": "application/x-protobuf"}) as r:
                assert r.status == 200


async def _score_rows(service: Service, trace_ids: list[str], per_trace: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        rows = [row for trace_id in trace_ids for row in await service.scores.trace_scores(trace_id)]
        if len(rows) >= per_trace * len(trace_ids):
            return rows
        assert time.monotonic() < deadline, f"score rows never all written: {rows}"
        await asyncio.sleep(0.1)


def _root_span(body: bytes) -> str:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    (root,) = [span for span in spans if not span.parent_span_id]
    return root.span_id.hex()


async def test_a_service_sends_every_score_it_writes_parented_to_the_scored_span(tmp_path: Path) -> None:
    traces = agent_trace_requests(3, service="events-e2e")
    with grpc_logs_receiver() as receiver:
        config = service_config(
            tmp_path,
            **{"export.otlp.endpoint": receiver.endpoint, "export.otlp.schedule_delay_seconds": 0.05},
        )
        async with running_service(config) as service:
            await _post(service, [body for _, body in traces])
            rows = await _score_rows(service, [trace_id for trace_id, _ in traces], per_trace=2)
            events = await receiver.inbox.wait_for(len(rows))

    roots = {trace_id: _root_span(body) for trace_id, body in traces}
    assert {(e.trace_id, e.span_id) for e in events} == set(roots.items())  # each run's root span
    sent = [(e.trace_id, e.span_id, e.attributes["gen_ai.evaluation.name"]) for e in events]
    written = [(r["trace_id"], r["span_id"], r["scorer_id"]) for r in rows]
    assert sorted(sent) == sorted(written)  # every row once
    values = {(e.span_id, e.attributes["gen_ai.evaluation.name"]): e.attributes for e in events}
    assert all(
        values[r["span_id"], r["scorer_id"]]["gen_ai.evaluation.score.value"] == r["score"] for r in rows
    )
    # The evaluator's provenance: its id and the derived version the row was stored with.
    assert all(
        (
            values[r["span_id"], r["scorer_id"]]["gen_ai.evaluation.evaluator.id"],
            values[r["span_id"], r["scorer_id"]]["gen_ai.evaluation.evaluator.version"],
        )
        == (r["scorer_id"], r["scorer_version"])
        for r in rows
    )
    assert all(re.fullmatch(r"1\+[0-9a-f]{8}", str(r["scorer_version"])) for r in rows)
    assert {e.event_name for e in events} == {EVENT_NAME}
    assert {e.resource["service.name"] for e in events} == {"tracescore"}


async def test_scores_are_written_while_the_event_receiver_is_down(tmp_path: Path) -> None:
    traces = agent_trace_requests(2, service="events-down")
    overrides = {
        "export.otlp.endpoint": closed_endpoint(),
        "export.otlp.schedule_delay_seconds": 0.05,
        "export.otlp.timeout_seconds": 0.5,
    }
    async with running_service(service_config(tmp_path, **overrides)) as service:
        await _post(service, [body for _, body in traces])
        rows = await _score_rows(service, [trace_id for trace_id, _ in traces], per_trace=2)
        assert service.ready()  # the exporter's failures are not the service's
        started = time.monotonic()
    assert time.monotonic() - started < 5  # shutdown did not wait for the receiver
    registry = service.metrics.registry
    dropped = sum(
        registry.get_sample_value("tracescore_evaluation_events_dropped_total", {"reason": reason}) or 0
        for reason in ("export_failed", "shutdown")
    )
    assert dropped == len(rows) and not registry.get_sample_value("tracescore_evaluation_events_sent_total")
