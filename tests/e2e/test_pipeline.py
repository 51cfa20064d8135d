"""End to end: spans in through each transport, score rows out of the embedded store.

Expected scores are the published @mastra/evals 1.10.2 numbers for the same input/output pair, so
these tests check receivers, store, assembly, transform, routing and scorers together against an
independent reference.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.fixture_files import OTLP_DIR, PARITY_CASES, PARITY_SCORES
from tests.support.service import running_service, service_config
from tracescore.ingest.cli.demo_traces import LlmStep, Scenario, emit_scenario
from tracescore.ingest.service import Service


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    async with running_service(service_config(tmp_path)) as svc:
        yield svc


def _scenario(case_id: str) -> Scenario:
    case = PARITY_CASES[case_id]
    return Scenario(
        agent="support_agent",
        system="Answer briefly.",
        user=case["input"],
        steps=(LlmStep(text=case["output"], input_tokens=30, output_tokens=12),),
    )


async def _wait_scores(
    service: Service, trace_id: str, count: int, limit_s: float = 30.0
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + limit_s
    while True:
        rows = await service.scores.trace_scores(trace_id)
        if len(rows) >= count:
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} score rows for {trace_id}, got {rows}")
        await asyncio.sleep(0.1)


def _by_scorer(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["scorer_id"]: r for r in rows}


async def test_otel_sdk_grpc_exporter_to_score_rows(service: Service) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-grpc"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True))
    )
    # SimpleSpanProcessor exports inside span.end(): emit off the event loop the service runs on.
    trace_id = await asyncio.to_thread(
        emit_scenario, provider.get_tracer("e2e"), _scenario("c030"), time.time_ns()
    )
    await asyncio.to_thread(provider.shutdown)

    rows = _by_scorer(await _wait_scores(service, trace_id, 2))
    assert rows["content-similarity"]["score"] == PARITY_SCORES["c030"]["content-similarity"]
    assert rows["textual-difference"]["score"] == PARITY_SCORES["c030"]["textual-difference"]
    for row in rows.values():
        assert row["service_name"] == "e2e-grpc"
        assert row["agent_name"] == "support_agent"
        assert row["source"] == "live"

    spans = await service.store.query(
        "SELECT SpanName, ParentSpanId FROM otel_traces WHERE TraceId = {t:String} ORDER BY Timestamp",
        {"t": trace_id},
    )
    assert [s["SpanName"] for s in spans] == ["invoke_agent support_agent", "chat gpt-4o"]
    root_span_id = (
        await service.store.query(
            "SELECT SpanId FROM otel_traces WHERE TraceId = {t:String} AND ParentSpanId = ''", {"t": trace_id}
        )
    )[0]
    assert {r["span_id"] for r in rows.values()} == {root_span_id["SpanId"]}


async def test_fixture_json_posted_over_http_scores_via_api(service: Service) -> None:
    body = (OTLP_DIR / "otel_genai_semconv__main.traces.json").read_bytes()
    trace_id = json.loads(body)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    base = f"http://127.0.0.1:{service.http.port}"
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{base}/v1/traces", data=body, headers={"Content-Type": "application/json"}
        ) as resp:
            assert resp.status == 200, await resp.text()
            assert "partialSuccess" not in await resp.json() or not (await resp.json())["partialSuccess"]
        deadline = time.monotonic() + 30
        while True:
            async with http.get(f"{base}/api/scores", params={"trace_id": trace_id}) as resp:
                assert resp.status in (200, 404)  # 404: not yet scored
                rows = await resp.json() if resp.status == 200 else []
            if len(rows) >= 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
    scores = _by_scorer(rows)
    # Reference: @mastra/evals 1.10.2 (shared/tools/mastra_reference.mjs) on input "What's the weather in
    # Paris?" and output "The weather in Paris is currently rainy with a temperature of 57°F.".
    assert scores["content-similarity"]["score"] == 0.46153846153846156
    assert scores["textual-difference"]["score"] == 0.4
    assert {r["span_id"] for r in rows} == {"594f8d102c7c4a19"}  # the invoke_agent root span


def _otlp_records(case_ids: list[str]) -> tuple[list[bytes], list[str]]:
    """Build OTLP protobuf export requests with the real SDK, one per trace, as the collector writes them."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-kafka"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("e2e")
    trace_ids = [emit_scenario(tracer, _scenario(c), time.time_ns()) for c in case_ids]
    provider.shutdown()
    spans = memory.get_finished_spans()
    records = []
    for trace_id in trace_ids:
        mine = [s for s in spans if format(s.context.trace_id, "032x") == trace_id]
        records.append(encode_spans(mine).SerializeToString())
    return records, trace_ids


async def test_kafka_otlp_proto_records_to_score_rows(tmp_path: Path, kafka_bootstrap: str) -> None:
    topic = "otlp_spans"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    records, trace_ids = _otlp_records(["c000", "c030"])
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    producer.send(topic, records[0])
    producer.send(topic, b"\x0a\xff\xffnot an otlp request")  # undecodable: goes to the dead-letter topic
    producer.send(topic, records[1])
    producer.flush()
    producer.close()

    svc = Service(
        service_config(
            tmp_path,
            **{
                "kafka.bootstrap": kafka_bootstrap,
                "kafka.topic": topic,
                "kafka.group": "e2e",
                "kafka.session_timeout_ms": 6000,
            },
        )
    )
    await svc.start()
    try:
        assert svc.kafka is not None
        await svc.kafka.wait_assigned()
        for case_id, trace_id in zip(["c000", "c030"], trace_ids, strict=True):
            rows = _by_scorer(await _wait_scores(svc, trace_id, 2))
            assert rows["content-similarity"]["score"] == PARITY_SCORES[case_id]["content-similarity"]
            assert rows["textual-difference"]["score"] == PARITY_SCORES[case_id]["textual-difference"]
        assert svc.metrics.registry.get_sample_value("tracescore_dead_letters_total") == 1
    finally:
        await svc.shutdown()

    def committed_and_dlq() -> tuple[int, list[Any]]:
        consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id="e2e", enable_auto_commit=False)
        parts = [TopicPartition(topic, p) for p in (0, 1)]
        committed = sum(consumer.committed(p) or 0 for p in parts)
        consumer.close()
        dlq = KafkaConsumer(bootstrap_servers=kafka_bootstrap, consumer_timeout_ms=3000)
        dlq_parts = [
            TopicPartition(f"{topic}.dlq", p) for p in dlq.partitions_for_topic(f"{topic}.dlq") or ()
        ]
        dlq.assign(dlq_parts)
        dlq.seek_to_beginning()
        parked = list(dlq)
        dlq.close()
        return committed, parked

    committed, parked = await asyncio.to_thread(committed_and_dlq)
    assert committed == 3  # every record, the parked one included, is committed after it was handled
    assert len(parked) == 1
    headers = dict(parked[0].headers)
    assert parked[0].value == b"\x0a\xff\xffnot an otlp request"
    assert headers["tracescore.source.topic"] == topic.encode()
    assert headers["tracescore.error"]


async def test_late_span_rescores_the_run_without_double_counting(service: Service) -> None:
    """The final answer's span arrives after the run was scored: one row per scorer, now on the whole run."""
    document = json.loads((OTLP_DIR / "otel_genai_semconv__main.traces.json").read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    trace_id = spans[0]["traceId"]
    final_chat = spans[-1]
    assert final_chat["name"] == "chat gpt-4o" and final_chat["spanId"] == "4bcdd5c433ba8408"
    early = json.loads(json.dumps(document))
    early["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans[:-1]
    late = json.loads(json.dumps(document))
    late["resourceSpans"][0]["scopeSpans"][0]["spans"] = [final_chat]

    base = f"http://127.0.0.1:{service.http.port}"
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/v1/traces", data=json.dumps(early), headers=headers) as resp:
            assert resp.status == 200
        first = _by_scorer(await _wait_scores(service, trace_id, 2))
        async with http.post(f"{base}/v1/traces", data=json.dumps(late), headers=headers) as resp:
            assert resp.status == 200
    deadline = time.monotonic() + 30
    while True:
        rows = await service.scores.trace_scores(trace_id)
        rescored = all(r["created_at"] > first[r["scorer_id"]]["created_at"] for r in rows)
        if rescored or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert rescored, "the late span did not rescore the run"
    assert (
        service.metrics.registry.get_sample_value("tracescore_traces_assembled_total", {"reason": "late"})
        == 1
    )
    assert service.metrics.registry.get_sample_value("tracescore_runs_built_total") == 2
    # The rebuilt run is the same run (same root span), so its rows replace the first ones.
    assert len(rows) == 2
    assert {r["span_id"] for r in rows} == {"594f8d102c7c4a19"}
    assert set(_by_scorer(rows)) == set(first)
    assert _by_scorer(rows)["textual-difference"]["score"] == 0.4
    counted = await service.store.query(
        "SELECT count() AS n FROM scores FINAL WHERE TraceId = {t:String}", {"t": trace_id}
    )
    assert counted == [{"n": 2}]


async def test_run_without_captured_content_is_skipped_not_scored(service: Service) -> None:
    """Content capture off: the spans carry operations and usage but no text; nothing is scored."""
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-no-content"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True))
    )
    tracer = provider.get_tracer("e2e")

    def emit() -> str:
        with tracer.start_as_current_span(
            "invoke_agent quiet",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "quiet"},
        ) as agent:
            with tracer.start_as_current_span(
                "chat gpt-4o",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 21,
                    "gen_ai.usage.output_tokens": 8,
                },
            ):
                pass
            return format(agent.get_span_context().trace_id, "032x")

    trace_id = await asyncio.to_thread(emit)
    await asyncio.to_thread(provider.shutdown)
    deadline = time.monotonic() + 30
    while len(decisions := await service.scores.trace_decisions(trace_id)) < 2:
        assert time.monotonic() < deadline, decisions
        await asyncio.sleep(0.1)
    assert {(d["scorer_id"], d["decision"]) for d in decisions} == {
        ("content-similarity", "skipped_empty"),
        ("textual-difference", "skipped_empty"),
    }
    # The switch of the instrumentation that wrote the spans (GenAI semantic conventions) is named.
    switch = "content capture off or redacted: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"
    assert all(switch in d["detail"] for d in decisions)
    assert await service.scores.trace_scores(trace_id) == []
