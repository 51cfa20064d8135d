"""What the Kafka receiver does when storing a batch fails, by the error's type: a permanent failure
parks the batch's records in the dead-letter topic and commits (the stream goes on); a retriable one
rewinds and retries until the store takes them. Real broker (Tansu), real chDB store."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.support.otlp import Recorder, proto_request, proto_span
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.kafka import KafkaReceiver
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.free_space import DiskSpace, FreeSpaceGuard
from tracescore.ingest.store.span_sink import SpanSink
from tracescore.schemas.config import KafkaConfig
from tracescore.schemas.errors import Overloaded
from tracescore.schemas.spans import SpanBatch

TOPIC = "otlp_spans"


def _produce(bootstrap: str, *payloads: bytes) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for payload in payloads:
        producer.send(TOPIC, payload)
    producer.flush()
    producer.close()


def _committed_and_parked(bootstrap: str, group: str) -> tuple[int, list[Any]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    committed = consumer.committed(TopicPartition(TOPIC, 0)) or 0
    consumer.close()
    dlq = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=3000)
    partitions = [TopicPartition(f"{TOPIC}.dlq", p) for p in dlq.partitions_for_topic(f"{TOPIC}.dlq") or ()]
    parked: list[Any] = []
    if partitions:  # no dead-letter topic: nothing was ever parked
        dlq.assign(partitions)
        dlq.seek_to_beginning()
        parked = list(dlq)
    dlq.close()
    return committed, parked


def _config(bootstrap: str, group: str) -> KafkaConfig:
    return KafkaConfig(bootstrap=bootstrap, topic=TOPIC, group=group, session_timeout_ms=6000)


async def _until(condition: Any, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_a_store_that_refuses_the_spans_parks_the_records_and_commits(
    store: Store, kafka_bootstrap: str
) -> None:
    await store.query("DROP TABLE otel_traces")  # every insert now fails the same way
    payloads = [proto_request(proto_span(name)).SerializeToString() for name in ("a", "b")]
    _produce(kafka_bootstrap, *payloads)
    metrics = Metrics()
    receiver = KafkaReceiver(
        _config(kafka_bootstrap, "refused"), next=SpanSink(store, Recorder(), metrics), metrics=metrics
    )
    await receiver.start()
    try:
        await receiver.wait_assigned()
        await _until(lambda: metrics.registry.get_sample_value("tracescore_dead_letters_total") == 2)
    finally:
        await receiver.shutdown()
    committed, parked = await asyncio.to_thread(_committed_and_parked, kafka_bootstrap, "refused")
    assert committed == 2  # the stream moved on
    assert sorted(record.value for record in parked) == sorted(payloads)
    reasons = [dict(record.headers)["tracescore.error"].decode() for record in parked]
    assert all(reason.startswith("not stored: ") and "UNKNOWN_TABLE" in reason for reason in reasons)


class _DownThenUp:
    """A store that is unreachable for its first ``outages`` writes (retriable), then takes them."""

    def __init__(self, outages: int) -> None:
        self.outages = outages
        self.batches: list[SpanBatch] = []

    async def consume_spans(self, batch: SpanBatch) -> None:
        if self.outages:
            self.outages -= 1
            raise ConnectionError("store unreachable")
        self.batches.append(batch)


async def test_a_store_that_is_down_is_retried_without_parking(kafka_bootstrap: str) -> None:
    _produce(kafka_bootstrap, proto_request(proto_span("a")).SerializeToString())
    metrics, store = Metrics(), _DownThenUp(outages=2)
    receiver = KafkaReceiver(_config(kafka_bootstrap, "retried"), next=store, metrics=metrics)
    await receiver.start()
    try:
        await receiver.wait_assigned()
        await _until(lambda: bool(store.batches))
    finally:
        await receiver.shutdown()
    assert [span.name for span in store.batches[0].spans] == ["a"]
    assert metrics.registry.get_sample_value("tracescore_dead_letters_total") == 0
    committed, parked = await asyncio.to_thread(_committed_and_parked, kafka_bootstrap, "retried")
    assert (committed, parked) == (1, [])


class _FullThenFree:
    """A pipeline at its bound for its first ``refusals`` batches (``Overloaded``), then taking them."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.batches: list[SpanBatch] = []

    async def consume_spans(self, batch: SpanBatch) -> None:
        if self.refusals:
            self.refusals -= 1
            raise Overloaded("the commit backlog is full", retry_after_s=0.5)
        self.batches.append(batch)


async def test_an_overloaded_pipeline_pauses_the_partitions_then_takes_the_records(
    kafka_bootstrap: str,
) -> None:
    _produce(kafka_bootstrap, proto_request(proto_span("a")).SerializeToString())
    metrics, pipeline = Metrics(), _FullThenFree(refusals=2)
    receiver = KafkaReceiver(_config(kafka_bootstrap, "paused"), next=pipeline, metrics=metrics)
    await receiver.start()
    try:
        await receiver.wait_assigned()
        await _until(lambda: bool(pipeline.batches))
    finally:
        await receiver.shutdown()
    assert [span.name for span in pipeline.batches[0].spans] == ["a"]
    assert metrics.registry.get_sample_value("tracescore_kafka_pauses_total") == 2
    committed, parked = await asyncio.to_thread(_committed_and_parked, kafka_bootstrap, "paused")
    assert (committed, parked) == (1, [])


async def test_a_store_disk_under_its_floor_pauses_the_partitions_until_space_is_back(
    store: Store, kafka_bootstrap: str
) -> None:
    free = [10 * 2**20]  # 10 MiB, under the floor: every write is refused before it reaches the engine
    store.free_space = FreeSpaceGuard(100 * 2**20, 0.0, read=lambda: DiskSpace(free[0], 2**30))
    store.free_space.refresh()
    _produce(kafka_bootstrap, proto_request(proto_span("a")).SerializeToString())
    metrics = Metrics()
    receiver = KafkaReceiver(
        _config(kafka_bootstrap, "disk"), next=SpanSink(store, Recorder(), metrics), metrics=metrics
    )
    await receiver.start()
    try:
        await receiver.wait_assigned()
        await _until(lambda: (metrics.registry.get_sample_value("tracescore_kafka_pauses_total") or 0) >= 1)
        committed, parked = await asyncio.to_thread(_committed_and_parked, kafka_bootstrap, "disk")
        assert (committed, parked) == (0, [])  # paused: neither taken nor given up
        free[0] = 500 * 2**20
        await _until(lambda: metrics.registry.get_sample_value("tracescore_spans_stored_total") == 1)
    finally:
        await receiver.shutdown()
    committed, parked = await asyncio.to_thread(_committed_and_parked, kafka_bootstrap, "disk")
    assert (committed, parked) == (1, [])
    assert await store.query("SELECT SpanName FROM otel_traces") == [{"SpanName": "a"}]
