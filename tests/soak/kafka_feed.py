"""The soak's Kafka input: the topic, a producer writing agent runs to it at a steady rate as the
OpenTelemetry Collector's kafka exporter does (one OTLP protobuf ``ExportTraceServiceRequest`` a record,
keyed by trace id), malformed records, and what the consumer group has committed.

A record counts as acknowledged once the group's committed offset of its partition is past it: where
each record landed is kept for that, and each partition's end is taken from there too (the broker's own
answer, ``ListOffsets``, was measured one past the first record of a batch: 1 for a topic holding a
batch of 4), as the dead-letter topic's records are counted by reading them."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.soak.agent_traces import Body, TraceFactory

TOPIC = "otlp_spans"
GROUP = "soak"
PARTITIONS = 4
PARTITION_NUMBERS = tuple(range(PARTITIONS))


def dead_letter_topic(topic: str = TOPIC) -> str:
    return f"{topic}.dlq"  # the service's default (kafka.dead_letter_topic)


def create_topics(bootstrap: str, partitions: int = PARTITIONS) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, partitions, 1), NewTopic(dead_letter_topic(), 1, 1)])
    finally:
        admin.close()


@dataclass
class KafkaFeed:
    """A producer thread writing ``traces_per_second`` runs to the topic, one a record."""

    bootstrap: str
    factory: TraceFactory
    traces_per_second: float
    placed: dict[str, tuple[int, int]] = field(default_factory=dict)  # trace id -> (partition, offset)
    ends: dict[int, int] = field(default_factory=dict)  # partition -> one past the last record placed
    malformed_placed: int = 0
    failed: int = 0  # records the broker did not take
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _producer: KafkaProducer | None = None

    def start(self) -> None:
        self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, acks="all")
        self._thread = threading.Thread(target=self._run, name="soak-kafka-feed", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period = 1 / self.traces_per_second
        next_at = time.monotonic()
        while not self._stop.is_set():
            trace_id, body = self.factory.trace()
            self._send(trace_id, body)
            next_at = max(next_at + period, time.monotonic() - 1)  # no burst after a stall
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _send(self, key: str, body: bytes, malformed: bool = False) -> None:
        assert self._producer is not None
        future = self._producer.send(TOPIC, body, key=key.encode())

        def placed(metadata: Any) -> None:
            partition, offset = int(metadata.partition), int(metadata.offset)
            self.ends[partition] = max(self.ends.get(partition, 0), offset + 1)
            if malformed:
                self.malformed_placed += 1
            else:
                self.placed[key] = (partition, offset)

        def failed(_: object) -> None:
            self.failed += 1

        future.add_callback(placed)
        future.add_errback(failed)

    def send_malformed(self, bodies: list[Body]) -> None:
        """Records no decoder can read; keyed by the trace id they name (or a placeholder)."""
        for index, body in enumerate(bodies):
            self._send(body.trace_ids[0] if body.trace_ids else f"malformed-{index}", body.data, True)

    def stop(self) -> None:
        """Stop producing; every record sent is placed (or failed) when this returns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._producer is not None:
            self._producer.flush(timeout=60)
            self._producer.close(timeout=10)
            self._producer = None


def records_in(bootstrap: str, topic: str) -> int:
    """How many records ``topic`` holds, read from its beginning."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=3000)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not partitions:
            return 0
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        return sum(1 for _ in consumer)
    finally:
        consumer.close()


def committed_offsets(
    bootstrap: str, partitions: tuple[int, ...] = PARTITION_NUMBERS, group: str = GROUP
) -> dict[int, int]:
    """The group's committed offset of each partition (0 when none was committed)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: int(consumer.committed(TopicPartition(TOPIC, p)) or 0) for p in partitions}
    finally:
        consumer.close()


def behind(ends: dict[int, int], committed: dict[int, int]) -> int:
    """Records placed that the group has not committed past."""
    return sum(max(0, end - committed.get(partition, 0)) for partition, end in ends.items())


def acknowledged(placed: dict[str, tuple[int, int]], committed: dict[int, int]) -> set[str]:
    """The traces whose record the group has committed past."""
    return {trace for trace, (part, offset) in placed.items() if offset < committed.get(part, 0)}
