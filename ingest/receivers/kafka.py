"""Kafka receiver: a consumer-group member reading OTLP export requests into the pipeline.

The OpenTelemetry Collector's kafka exporter writes one ``ExportTraceServiceRequest`` per record
(``otlp_proto`` by default) to the ``otlp_spans`` topic, and one ``ExportLogsServiceRequest`` per record
to ``otlp_logs``. One consumer subscribes to both (``topic`` and ``logs_topic``) and decodes each record
by the topic it came from, through the same decoding registry as the OTLP receivers. Offsets are
committed only after the batch's spans and log records are stored, so a crash replays rather than
loses; replays are safe because score ids are deterministic.

A record that cannot be decoded, that is over the receivers' limits (``receiver.max_request_bytes``,
``max_request_items``), or whose items were partly rejected, is parked in a dead-letter topic with the
reason in its headers, and the stream goes on. When storing a batch fails, the error type decides
(``schemas.errors.is_retriable``): a retriable failure rewinds the batch and retries it with backoff;
a permanent one parks the batch's records in the dead-letter topic and commits. How the consumer
waits (backoff, paused partitions) is ``ingest.receivers.kafka_backoff``'s, how it parks a record
``ingest.receivers.kafka_dead_letters``'s.

kafka-python is a blocking client, so the consumer loop runs on its own thread and hands each polled
batch to the event loop, waiting until ``next.consume_spans`` has returned before it commits.

Memory: a poll's records are in memory once fetched, so fetches are sized to what ``memory_limit``
leaves (``fit_fetches``); before any record of a poll is decoded, what decoding and storing them will
cost is reserved (``ingest.receivers.memory_admission``), and when it does not fit the batch is
rewound and the consumer pauses. Records are decoded slice by slice, small ones merged into one
slice, each slice stored before the next is built; a record that could never fit under the limit is
parked in the dead-letter topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.consumer.fetcher import ConsumerRecord
from kafka.producer.future import FutureRecordMetadata

from tracescore.ingest.decode import SIGNAL_LOGS, SIGNAL_TRACES, SLICE_BOUNDS, DecodeError, read
from tracescore.ingest.decode.cost import request_cost
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.intake import (
    OUTCOME_INVALID,
    OUTCOME_OK,
    OUTCOME_PARTIAL,
    OUTCOME_TOO_LARGE,
    count_decoded,
    count_received,
)
from tracescore.ingest.receivers.kafka_backoff import KAFKA_RETRY, BatchHolds
from tracescore.ingest.receivers.kafka_dead_letters import DEAD_LETTER_OVERHEAD_BYTES, DeadLetters
from tracescore.ingest.receivers.kafka_security import kafka_client_options
from tracescore.ingest.receivers.memory_admission import MemoryGuard, MemoryReservation, RequestTooLarge
from tracescore.schemas.config import KafkaConfig, ReceiverConfig
from tracescore.schemas.consumers import SpanConsumer
from tracescore.schemas.errors import Overloaded
from tracescore.schemas.secrets import scrub
from tracescore.schemas.spans import SpanBatch
from tracescore.scoring.runtime.failure_log import FailureLog

log = logging.getLogger(__name__)

POLL_TIMEOUT_MS = 500
MAX_POLL_RECORDS = 500
# How long one connection attempt waits for the first broker before it counts as failed (the
# client's own default, 30 s, would keep /readyz at "connecting" long after the broker is known gone).
BOOTSTRAP_TIMEOUT_MS = 5_000
TRANSPORT = "kafka"
STOP_GRACE_SECONDS = 3.0
# kafka-python's defaults, lowered by fit_fetches when memory_limit leaves less room.
FETCH_MAX_BYTES = 50 * 1024 * 1024
PARTITION_FETCH_BYTES = 1024 * 1024
MIN_FETCH_BYTES = 1024 * 1024
# Fetched records are held twice at worst: the batch being handled and the next one fetched meanwhile.
FETCHES_HELD = 2


class KafkaReceiver:
    def __init__(
        self,
        config: KafkaConfig,
        next: SpanConsumer,
        metrics: Metrics,
        limits: ReceiverConfig | None = None,
        memory: MemoryGuard | None = None,
    ) -> None:
        if not config.enabled:
            raise ValueError("KafkaReceiver needs kafka.bootstrap and kafka.topic or kafka.logs_topic")
        self._config = config
        # The receivers' request limits hold for a record too: it is one export request.
        self._limits = limits or ReceiverConfig()
        # Topic -> the signal its records carry.
        self._signals = {
            topic: signal
            for topic, signal in ((config.topic, SIGNAL_TRACES), (config.logs_topic, SIGNAL_LOGS))
            if topic
        }
        self._next = next
        self._metrics = metrics
        self._memory = memory
        self._fetch_max_bytes = FETCH_MAX_BYTES
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._client_options: dict[str, Any] = {}
        # What /readyz shows: connecting, assigned (holds partitions) or failing (the broker cannot
        # be reached; retried with backoff for as long as the service runs).
        self.state = "connecting"
        self.last_error: str | None = None
        self._failures = FailureLog(log)  # used on the consumer thread only

    async def start(self) -> None:
        if self._thread is not None:
            return
        self._client_options = kafka_client_options(self._config)  # a bad file fails the start here
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="tracescore-kafka", daemon=True)
        self._thread.start()

    async def shutdown(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            # Leaving the group can hang on a rebalance; the service must still stop in time. What the
            # thread has not committed is read again after the next start (stored items are kept once).
            await asyncio.to_thread(thread.join, STOP_GRACE_SECONDS)
            if thread.is_alive():
                log.warning(
                    "the kafka consumer did not close within %.0f s; stopping without it", STOP_GRACE_SECONDS
                )

    async def wait_assigned(self, limit_s: float = 60.0) -> None:
        """Wait until the consumer has joined its group and holds partitions (tests, demo)."""
        assigned = await asyncio.to_thread(self._ready.wait, limit_s)
        if not assigned:
            topics = ", ".join(repr(topic) for topic in self._signals)
            why = f" (last error: {self.last_error})" if self.last_error else ""
            raise TimeoutError(f"kafka consumer got no partition of {topics} in {limit_s}s{why}")

    def health(self) -> dict[str, object]:
        return {"status": self.state, "bootstrap": self._config.bootstrap, "error": self.last_error}

    def fit_fetches(self, room: int) -> None:
        """Fetch at most a quarter of ``room`` bytes of records at once (they are held while decoded)."""
        self._fetch_max_bytes = max(MIN_FETCH_BYTES, min(FETCH_MAX_BYTES, room // (2 * FETCHES_HELD)))

    # -- consumer thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        """Connect, consume; on any failure reconnect after a backoff, for as long as the service runs."""
        failures = 0  # connection attempts in a row that failed
        while not self._stop.is_set():
            try:
                consumer, producer = self._connect()
            except Exception as exc:  # an unreachable broker is retried, never given up on
                self._failing(exc, KAFKA_RETRY.delay(failures))
                failures += 1
                continue
            failures = 0
            try:
                self._consume(consumer, producer)
            except Exception as exc:
                self._failing(exc, KAFKA_RETRY.delay(0))
            finally:
                self._ready.clear()
                with contextlib.suppress(Exception):
                    consumer.close(autocommit=False)
                with contextlib.suppress(Exception):
                    producer.close(timeout=1)
        self.state = "stopped"

    def _connect(self) -> tuple[KafkaConsumer, KafkaProducer]:
        if self.state != "failing":  # a retry of a failing broker stays "failing" until it works
            self.state = "connecting"
        consumer = KafkaConsumer(
            *self._signals,
            bootstrap_servers=self._config.bootstrap,
            group_id=self._config.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=MAX_POLL_RECORDS,
            fetch_max_bytes=self._fetch_max_bytes,
            max_partition_fetch_bytes=min(PARTITION_FETCH_BYTES, self._fetch_max_bytes),
            session_timeout_ms=self._config.session_timeout_ms,
            heartbeat_interval_ms=max(100, self._config.session_timeout_ms // 3),
            client_id="tracescore",
            bootstrap_timeout_ms=BOOTSTRAP_TIMEOUT_MS,
            **self._client_options,
        )
        try:
            producer = KafkaProducer(
                bootstrap_servers=self._config.bootstrap,
                acks="all",
                # A parked record is up to receiver.max_request_bytes, and its headers (the client's
                # default, 1 MiB, would leave a larger one unparkable and its batch retried for ever).
                max_request_size=self._limits.max_request_bytes + DEAD_LETTER_OVERHEAD_BYTES,
                client_id="tracescore",
                bootstrap_timeout_ms=BOOTSTRAP_TIMEOUT_MS,
                **self._client_options,
            )
        except BaseException:
            consumer.close(autocommit=False)
            raise
        return consumer, producer

    def _failing(self, exc: BaseException, retry_in: float) -> None:
        """Say the broker is failing (``/readyz``, the failure log), then wait ``retry_in`` seconds."""
        said = str(exc)  # kafka-python's errors name their class themselves
        self.state, self.last_error = (
            "failing",
            scrub(said if said.startswith(type(exc).__name__) else f"{type(exc).__name__}: {said}"),
        )
        # Logged once, then counted (one line a minute while it lasts), as judge failures are; the
        # client's own lines (hundreds a minute for a broker that is down) show only with -v.
        self._failures.failed(
            "kafka receiver",
            "unavailable",
            self._config.bootstrap or "",
            f"{self.last_error}; trying again with backoff (now {retry_in:.1f} s, at most "
            f"{KAFKA_RETRY.max_s:.0f} s) for as long as the service runs",
        )
        self._stop.wait(retry_in)

    def _consume(self, consumer: KafkaConsumer, producer: KafkaProducer) -> None:
        holds = BatchHolds(consumer, self._stop, self._metrics)
        dead_letters = DeadLetters(producer, self._config.dlq_topic, self._signals, self._metrics)
        while not self._stop.is_set():
            polled = consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
            if consumer.assignment():
                if self.state != "assigned":
                    self._failures.recovered("kafka receiver", f"reached {self._config.bootstrap} again")
                self.state, self.last_error = "assigned", None
                self._ready.set()
            if not polled:
                continue
            records = [record for part in polled.values() for record in part]
            try:
                self._handle(records, dead_letters)
            except Overloaded as exc:
                holds.slow_down(polled, exc.retry_after_s, str(exc))
                continue
            except Exception as exc:
                holds.not_stored(polled, exc)
                continue
            holds.stored()
            consumer.commit()

    def _handle(self, records: list[ConsumerRecord], dead_letters: DeadLetters) -> None:
        kept: list[ConsumerRecord] = []
        refused: list[tuple[ConsumerRecord, str]] = []
        for record in records:
            why = self._refusal(len(record.value or b""))
            if why is None:
                kept.append(record)
            else:
                refused.append((record, why))
        # Before any record is decoded or parked: the batch's bodies and one slice (raises Overloaded,
        # and the batch is taken again later).
        total = sum(len(record.value or b"") for record in kept)
        try:
            reservation = self._reserve(total, len(kept))
        except RequestTooLarge:
            # Each record fits on its own, together they do not: take them in halves.
            half = len(records) // 2
            self._handle(records[:half], dead_letters)
            self._handle(records[half:], dead_letters)
            return
        with reservation:
            parked: list[FutureRecordMetadata] = []
            for record, why in refused:
                self._metrics.requests.labels(TRANSPORT, OUTCOME_TOO_LARGE).inc()
                parked.append(dead_letters.park(record, why))
            self._store_records(kept, dead_letters, parked, reservation, total)
            dead_letters.flush(parked)

    def _refusal(self, size: int) -> str | None:
        """Why a record of ``size`` bytes is parked unread, or None."""
        limit = self._limits.max_request_bytes
        if size > limit:
            return f"record of {size} bytes is over the limit of {limit} bytes (receiver.max_request_bytes)"
        if self._memory is not None and self._cost(size) > self._memory.admittable:
            return (
                f"record of {size} bytes needs {self._cost(size)} bytes of memory to be stored, more than "
                f"memory_limit leaves for one batch ({self._memory.admittable}): raise memory_limit"
            )
        return None

    def _cost(self, size: int, largest_item: int = 0) -> int:
        return request_cost(self._config.encoding, size, largest_item=largest_item)

    def _reserve(self, total: int, count: int) -> MemoryReservation:
        if self._memory is None or not count:
            return MemoryReservation.unbounded()
        return self._memory.reserve(self._cost(total), f"a Kafka batch of {count} record(s), {total} bytes")

    def _store_records(
        self,
        records: list[ConsumerRecord],
        dead_letters: DeadLetters,
        parked: list[FutureRecordMetadata],
        reservation: MemoryReservation,
        total: int,
    ) -> None:
        """Decode the records slice by slice, merging small ones, and store each merged slice."""
        limits = self._limits
        merged, carried = SpanBatch(), set[int]()  # carried: indexes of records with items in `merged`
        merged_bytes = 0
        for index, record in enumerate(records):
            signal = self._signals.get(record.topic, SIGNAL_TRACES)
            value = record.value or b""
            try:
                decoded = read(
                    signal,
                    self._config.encoding,
                    value,
                    limits.max_request_items,
                    limits.max_attributes_per_item,
                )
            except DecodeError as exc:
                self._metrics.requests.labels(TRANSPORT, OUTCOME_INVALID).inc()
                parked.append(dead_letters.park(record, str(exc)))
                continue
            if decoded.largest_item > SLICE_BOUNDS.wire_bytes:
                try:
                    reservation.resize(max(reservation.size, self._cost(total, decoded.largest_item)))
                except RequestTooLarge as exc:
                    self._metrics.requests.labels(TRANSPORT, OUTCOME_TOO_LARGE).inc()
                    parked.append(dead_letters.park(record, str(exc)))
                    continue
            rejected = 0
            errors: list[str] = []
            merged_bytes += len(value)
            for batch in decoded.slices():
                count_decoded(batch, signal, self._metrics, TRANSPORT)
                rejected += batch.rejected_items
                errors.extend(batch.errors)
                if batch.spans or batch.logs:
                    carried.add(index)
                merged.spans.extend(batch.spans)
                merged.logs.extend(batch.logs)
                items = len(merged.spans) + len(merged.logs)
                if items >= SLICE_BOUNDS.items or merged_bytes >= SLICE_BOUNDS.wire_bytes:
                    self._store(merged, [records[i] for i in sorted(carried)], dead_letters)
                    merged, carried, merged_bytes = SpanBatch(), set(), 0
            if rejected:
                self._metrics.requests.labels(TRANSPORT, OUTCOME_PARTIAL).inc()
                parked.append(dead_letters.park(record, "; ".join(errors), rejected))
            else:
                self._metrics.requests.labels(TRANSPORT, OUTCOME_OK).inc()
        self._store(merged, [records[i] for i in sorted(carried)], dead_letters)

    def _store(self, merged: SpanBatch, carried: list[ConsumerRecord], dead_letters: DeadLetters) -> None:
        """Hand a merged slice to the pipeline and wait until it is stored. A retriable failure is
        raised (the batch is rewound and retried); a permanent one parks the records it carried."""
        if not (merged.spans or merged.logs):
            return
        assert self._loop is not None
        try:
            asyncio.run_coroutine_threadsafe(self._next.consume_spans(merged), self._loop).result()
        except Exception as exc:
            if KAFKA_RETRY.retries(exc):
                raise  # rewound and retried: the store may take them later
            # The store refuses them for good: park the records so the stream moves on.
            reason = scrub(f"not stored: {exc}")
            dead_letters.flush([dead_letters.park(record, reason) for record in carried])
            return
        count_received(merged, self._metrics, TRANSPORT)
