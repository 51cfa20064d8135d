"""The Kafka receiver's dead-letter topic: a record that will never be stored (it cannot be decoded,
is over the limits, had items rejected, or the store refuses it for good) is parked there with the
reason and where it came from in its headers, and the stream goes on. Parked records are made durable
before the offsets they stand for are committed (``ingest.receivers.kafka``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafka import KafkaProducer
from kafka.consumer.fetcher import ConsumerRecord
from kafka.producer.future import FutureRecordMetadata

from tracescore.ingest.decode import SIGNAL_LOGS
from tracescore.ingest.observability.service_metrics import Metrics

log = logging.getLogger(__name__)

DEAD_LETTER_OVERHEAD_BYTES = 64 * 1024  # a parked record's headers and framing
PARKED_WAIT_SECONDS = 30  # for the broker to take one parked record


class DeadLetters:
    """Parks records in ``topic`` through one connection's producer. ``signals``: the signal each
    source topic carries (it names the count of rejected items in the headers)."""

    def __init__(
        self, producer: KafkaProducer, topic: str, signals: Mapping[str, str], metrics: Metrics
    ) -> None:
        self._producer = producer
        self._topic = topic
        self._signals = signals
        self._metrics = metrics

    def park(self, record: ConsumerRecord, reason: str, rejected: int | None = None) -> FutureRecordMetadata:
        """Send ``record`` to the dead-letter topic with ``reason`` (and how many of its items were
        ``rejected``, when some were); wait for it with ``flush``."""
        log.warning(
            "kafka record %s[%d]@%d parked in %s: %s",
            record.topic,
            record.partition,
            record.offset,
            self._topic,
            reason,
        )
        self._metrics.dead_letters.inc()
        headers = [
            ("tracescore.error", reason.encode()),
            ("tracescore.source.topic", record.topic.encode()),
            ("tracescore.source.partition", str(record.partition).encode()),
            ("tracescore.source.offset", str(record.offset).encode()),
        ]
        if rejected is not None:
            noun = "log_records" if self._signals.get(record.topic) == SIGNAL_LOGS else "spans"
            headers.append((f"tracescore.rejected_{noun}", str(rejected).encode()))
        return self._producer.send(self._topic, value=record.value, key=record.key, headers=headers)

    def flush(self, parked: list[FutureRecordMetadata]) -> None:
        """Wait until the ``parked`` records are durable: their offsets may be committed then."""
        self._producer.flush()
        for future in parked:
            future.get(timeout=PARKED_WAIT_SECONDS)
