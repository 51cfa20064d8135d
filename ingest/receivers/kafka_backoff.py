"""How the Kafka consumer waits without losing a record or its group.

A batch that was not stored is rewound to its first records and taken again after a backoff. While
the pipeline asks to slow down (a bound reached, the store's disk under its floor) the batch is
rewound and every partition paused, and the consumer keeps polling so that heartbeats and rebalances
go on. A broker that cannot be reached is tried again after the same backoff, for as long as the
service runs (``ingest.receivers.kafka``).
"""

from __future__ import annotations

import logging
import threading
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.schemas.retry_policy import RetryPolicy

log = logging.getLogger(__name__)

# Reconnects and batch retries alike: 0.5 s doubling up to 30 s, each wait between half and all of it.
KAFKA_RETRY = RetryPolicy(initial_s=0.5, max_s=30.0, jitter=0.5)
PAUSED_POLL_TIMEOUT_MS = 500  # one poll while paused: it returns no records, only keeps the group


class BatchHolds:
    """Batches one connection's consumer could not take: rewound, then waited for (paused, or after a
    backoff that grows while batches in a row fail). Used on the consumer thread only."""

    def __init__(self, consumer: KafkaConsumer, stop: threading.Event, metrics: Metrics) -> None:
        self._consumer = consumer
        self._stop = stop
        self._metrics = metrics
        self._failures = 0  # batches in a row not stored

    def stored(self) -> None:
        """A batch was stored: the next failure waits the shortest backoff again."""
        self._failures = 0

    def not_stored(self, polled: dict[TopicPartition, list[ConsumerRecord]], error: Exception) -> None:
        """Rewind to the first record of the batch so nothing is lost, and wait before taking it again
        (a stop cuts the wait short)."""
        delay = KAFKA_RETRY.delay(self._failures)
        self._failures += 1
        log.warning("kafka batch not stored (%s); retrying in %.1fs", error, delay)
        self._rewind(polled)
        self._stop.wait(delay)

    def slow_down(self, polled: dict[TopicPartition, list[ConsumerRecord]], seconds: float, why: str) -> None:
        """The pipeline asks to slow down: take the batch again after ``seconds``, meanwhile polling
        with every partition paused so the group keeps this member."""
        self._rewind(polled)
        consumer = self._consumer
        partitions = list(consumer.assignment())
        log.info("kafka intake paused for %.1f s: %s", seconds, why)
        self._metrics.kafka_pauses.inc()
        consumer.pause(*partitions)
        deadline = time.monotonic() + seconds
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                consumer.poll(timeout_ms=PAUSED_POLL_TIMEOUT_MS)  # heartbeats and rebalances, no records
        finally:
            consumer.resume(*[p for p in partitions if p in consumer.assignment()])

    def _rewind(self, polled: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        for partition, part_records in polled.items():
            if part_records:
                self._consumer.seek(partition, part_records[0].offset)
