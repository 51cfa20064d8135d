"""The span sink: stores each decoded batch in ``otel_traces`` / ``otel_logs``, then hands it on.

A span is acknowledged (HTTP 200, gRPC OK, Kafka offset committed) only after this stage has
returned, so everything downstream may treat the store as the copy of record.
"""

from __future__ import annotations

from collections.abc import Sequence

from ingest.metrics import Metrics
from ingest.store.clickhouse import Store
from ingest.store.rows import OTEL_LOGS_COLUMNS, OTEL_TRACES_COLUMNS, log_row, span_row
from schemas import LogRecord, Span, SpanBatch
from schemas.consumers import SpanConsumer


async def insert_spans(store: Store, spans: Sequence[Span]) -> None:
    """Write spans to ``otel_traces`` in the collector exporter's row shape."""
    if spans:
        await store.insert("otel_traces", [span_row(span) for span in spans], OTEL_TRACES_COLUMNS)


async def insert_logs(store: Store, records: Sequence[LogRecord]) -> None:
    """Write log records to ``otel_logs`` (correlated or not: every accepted record is kept)."""
    if records:
        await store.insert("otel_logs", [log_row(record) for record in records], OTEL_LOGS_COLUMNS)


class SpanSink:
    """Stores each batch before handing it on: a span is durable once accepted."""

    def __init__(self, store: Store, next: SpanConsumer, metrics: Metrics) -> None:
        self._store = store
        self._next = next
        self._metrics = metrics

    async def consume_spans(self, batch: SpanBatch) -> None:
        if not batch.spans and not batch.logs:
            return
        if batch.spans:
            await insert_spans(self._store, batch.spans)
            self._metrics.spans_stored.inc(len(batch.spans))
        if batch.logs:
            await insert_logs(self._store, batch.logs)
            self._metrics.logs_stored.inc(len(batch.logs))
        await self._next.consume_spans(batch)
