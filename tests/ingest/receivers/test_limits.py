"""Request limits on every receiver: a span or log record over ``receiver.max_attributes_per_item`` is
rejected on its own (OTLP partial success naming it) on OTLP/HTTP, OTLP/gRPC and Kafka alike; a gzip
gRPC request that inflates past ``receiver.max_request_bytes`` is refused; a Kafka record over it is
parked in the dead-letter topic with the reason while the stream goes on."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.ingest.receivers.test_logs import good_record, logs_request
from tests.support.otlp import (
    EXPORT_METHOD,
    SPAN_2,
    Recorder,
    http_request,
    json_bytes,
    json_request,
    json_span,
    kv,
    proto_request,
    proto_span,
    requests_counted,
    running_grpc,
    running_http,
)
from tracescore.ingest.decode import SIGNAL_LOGS, SIGNAL_TRACES, decode
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.kafka import KafkaReceiver
from tracescore.schemas.config import KafkaConfig, ReceiverConfig
from tracescore.schemas.receiver_config import DEFAULT_MAX_ATTRIBUTES_PER_ITEM

PROTOBUF = {"Content-Type": "application/x-protobuf"}
LIMIT = DEFAULT_MAX_ATTRIBUTES_PER_ITEM
TOPIC = "otlp_spans"


def _crowded_request() -> bytes:
    """One span over the attribute limit, one at it."""
    crowded = proto_span("crowded", attributes=[kv(f"a.{i}", i) for i in range(LIMIT + 1)])
    full = proto_span("full", span_id=SPAN_2, attributes=[kv(f"a.{i}", i) for i in range(LIMIT)])
    return proto_request(crowded, full).SerializeToString()


def _names(batch: Any) -> list[str]:
    return [span.name for span in batch.spans]


def test_the_decode_registry_rejects_items_over_the_limit_in_every_encoding() -> None:
    batch = decode(SIGNAL_TRACES, "otlp_proto", _crowded_request(), max_attributes=LIMIT)
    assert _names(batch) == ["full"] and batch.rejected_items == 1
    assert batch.errors == [
        f"span 'crowded' (span_id 594f8d102c7c4a19): {LIMIT + 1} attributes, more than the limit of "
        f"{LIMIT} (receiver.max_attributes_per_item)"
    ]
    assert _names(decode(SIGNAL_TRACES, "otlp_proto", _crowded_request())) == ["crowded", "full"]

    attributes = [{"key": f"k{i}", "value": {"intValue": str(i)}} for i in range(4)]
    document = json_request(json_span("json", attributes=attributes), json_span("ok", spanId=SPAN_2.hex()))
    batch = decode(SIGNAL_TRACES, "otlp_json", json_bytes(document), max_attributes=3)
    assert _names(batch) == ["ok"] and batch.rejected_items == 1 and "4 attributes" in batch.errors[0]

    record = good_record()
    record.attributes.extend(kv(f"k{i}", i) for i in range(5))
    logs = decode(SIGNAL_LOGS, "otlp_proto", logs_request(record).SerializeToString(), max_attributes=3)
    assert (
        logs.logs == []
        and logs.rejected_items == 1
        and "attributes, more than the limit of 3" in (logs.errors[0])
    )


async def test_otlp_http_answers_partial_success_naming_the_span() -> None:
    async with running_http() as running:
        reply = await http_request(
            "POST", f"{running.url}/v1/traces", data=_crowded_request(), headers=PROTOBUF
        )
    assert reply.status == 200
    response = ExportTraceServiceResponse.FromString(reply.body)
    assert response.partial_success.rejected_spans == 1
    assert "span 'crowded'" in response.partial_success.error_message
    assert f"{LIMIT + 1} attributes" in response.partial_success.error_message
    assert _names(running.next.batches[0]) == ["full"]


async def test_otlp_grpc_answers_partial_success_naming_the_span() -> None:
    async with (
        running_grpc() as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        raw = await channel.unary_unary(EXPORT_METHOD)(_crowded_request(), timeout=10)
    response = ExportTraceServiceResponse.FromString(raw)
    assert response.partial_success.rejected_spans == 1
    assert "span 'crowded'" in response.partial_success.error_message
    assert _names(running.next.batches[0]) == ["full"]


async def test_a_gzip_grpc_request_over_the_limit_once_inflated_is_refused() -> None:
    limit = 1024 * 1024
    big = proto_request(proto_span("big", attributes=[kv("blob", "a" * (2 * limit))])).SerializeToString()
    small = proto_request(proto_span("small")).SerializeToString()
    async with (
        running_grpc(max_request_bytes=limit) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        export = channel.unary_unary(EXPORT_METHOD)
        try:
            await export(big, timeout=10, compression=grpc.Compression.Gzip)
        except grpc.aio.AioRpcError as exc:
            failed = exc
        else:
            raise AssertionError("a request inflating to 2 MiB got through a 1 MiB limit")
        assert await export(small, timeout=10, compression=grpc.Compression.Gzip) == b""
    assert failed.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Refused by gRPC itself, which stops inflating at grpc.max_receive_message_length.
    assert failed.details() == "Decompressed message larger than max"
    assert _names(running.next.batches[0]) == ["small"] and len(running.next.batches) == 1


def _produce(bootstrap: str, *payloads: bytes) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=8 * 1024 * 1024)
    for payload in payloads:
        producer.send(TOPIC, payload)
    producer.flush()
    producer.close()


def _parked(bootstrap: str) -> list[Any]:
    dlq = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=3000)
    dlq.assign([TopicPartition(f"{TOPIC}.dlq", p) for p in dlq.partitions_for_topic(f"{TOPIC}.dlq") or ()])
    dlq.seek_to_beginning()
    parked = list(dlq)
    dlq.close()
    return parked


async def test_kafka_parks_records_over_the_limits_and_goes_on(kafka_bootstrap: str) -> None:
    oversized = proto_request(proto_span("oversized", attributes=[kv("blob", "a" * 40_000)]))
    fine = proto_request(proto_span("fine"))
    payloads = [oversized.SerializeToString(), _crowded_request(), fine.SerializeToString()]
    await asyncio.to_thread(_produce, kafka_bootstrap, *payloads)
    metrics, recorder = Metrics(), Recorder()
    config = KafkaConfig(bootstrap=kafka_bootstrap, topic=TOPIC, group="limits", session_timeout_ms=6000)
    limits = ReceiverConfig(max_request_bytes=30_000)  # the crowded request is about 28 kB
    receiver = KafkaReceiver(config, next=recorder, metrics=metrics, limits=limits)
    await receiver.start()
    try:
        await receiver.wait_assigned()
        deadline = time.monotonic() + 30
        parked_count = "tracescore_dead_letters_total"
        while metrics.registry.get_sample_value(parked_count) != 2 or len(recorder.spans) < 2:
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.1)
    finally:
        await receiver.shutdown()
    assert sorted(span.name for span in recorder.spans) == ["fine", "full"]  # the stream went on
    parked = await asyncio.to_thread(_parked, kafka_bootstrap)
    reasons = {dict(r.headers)["tracescore.error"].decode(): dict(r.headers) for r in parked}
    too_large = [text for text in reasons if "over the limit of 30000 bytes" in text]
    crowded = [text for text in reasons if f"{LIMIT + 1} attributes" in text]
    assert len(too_large) == 1 and "(receiver.max_request_bytes)" in too_large[0]
    assert len(crowded) == 1 and reasons[crowded[0]]["tracescore.rejected_spans"] == b"1"
    assert requests_counted(metrics, "kafka", "too_large") == 1
