"""OTLP receivers, one per transport (gRPC, HTTP, Kafka), and the export step the request-driven ones share.

``export`` decodes a request through the encoding registry, counts it, and forwards the accepted spans to
the ``next`` consumer. Its two failures are typed once: ``DecodeError`` is permanent (the client must not
retry), ``ConsumerUnavailable`` is retryable; each receiver maps them to its transport's status codes.
"""

from __future__ import annotations

import asyncio
import logging

from ingest.consumers import SpanConsumer
from ingest.decode import DecodeError, decode_traces
from ingest.metrics import Metrics
from schemas.spans import SpanBatch

log = logging.getLogger(__name__)

# Above this size decoding runs in a worker thread so one large request does not stall the event loop;
# below it the thread hop costs more than the decode.
DECODE_IN_THREAD_BYTES = 256 * 1024

# Values of the "outcome" label of Metrics.requests.
OUTCOME_OK = "ok"
OUTCOME_PARTIAL = "partial"
OUTCOME_INVALID = "invalid"
OUTCOME_UNAVAILABLE = "unavailable"
OUTCOME_TOO_LARGE = "too_large"
OUTCOME_UNSUPPORTED = "unsupported"


class ConsumerUnavailable(Exception):
    """The next consumer could not take the spans; the client should retry later."""

    retriable = True


async def export(
    encoding: str, payload: bytes, next: SpanConsumer, metrics: Metrics, transport: str
) -> SpanBatch:
    """Decode one export request and hand its spans on.

    Raises DecodeError when the payload is unreadable, ConsumerUnavailable when ``next`` fails.
    """
    try:
        if len(payload) < DECODE_IN_THREAD_BYTES:
            batch = decode_traces(encoding, payload)
        else:
            batch = await asyncio.to_thread(decode_traces, encoding, payload)
    except DecodeError as exc:
        metrics.requests.labels(transport, OUTCOME_INVALID).inc()
        log.info("%s export request rejected: %s", transport, exc)
        raise
    if batch.rejected_spans:
        metrics.spans_rejected.labels(transport).inc(batch.rejected_spans)
        log.info("%s export: %d span(s) rejected: %s", transport, batch.rejected_spans, batch.error_message)
    if batch.spans:
        try:
            await next.consume_spans(batch)
        except Exception as exc:
            metrics.requests.labels(transport, OUTCOME_UNAVAILABLE).inc()
            log.warning("%s export: next consumer failed: %s", transport, exc, exc_info=True)
            raise ConsumerUnavailable(f"spans could not be stored, retry later: {exc}") from exc
        metrics.spans_received.labels(transport).inc(len(batch.spans))
    metrics.requests.labels(transport, OUTCOME_PARTIAL if batch.rejected_spans else OUTCOME_OK).inc()
    return batch
