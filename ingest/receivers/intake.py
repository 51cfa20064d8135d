"""The export step the OTLP receivers share, and the OTLP answer to an export request.

``export`` decodes a request of either signal (traces or logs) through the decoding registry, counts it,
and forwards the accepted spans or log records to the ``next`` consumer, one slice at a time: a slice
is stored before the next is built, so a large request never exists as Python objects all at once
(``ingest.decode``). The request is answered once every slice is stored. Its two failures are typed once
(``schemas.errors``): ``DecodeError`` is permanent (the client must not retry); ``Overloaded`` asks
the client to slow down and send again; ``ConsumerFailed`` is retriable when its cause is (the store
unreachable or busy) and permanent otherwise (the store refuses the items). Each receiver maps them
to its transport's status codes, as the OTLP specification lists them.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from google.protobuf import duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracescore.ingest.decode import SIGNAL_LOGS, SIGNAL_TRACES, DecodedRequest, DecodeError, Payload, read
from tracescore.ingest.decode.batch import MAX_ERROR_MESSAGES
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.disclosure import STORE_REFUSED, STORE_UNAVAILABLE
from tracescore.ingest.receivers.memory_admission import RequestTooLarge
from tracescore.schemas.consumers import SpanConsumer
from tracescore.schemas.errors import Overloaded, StoreFull, TracescoreError, is_retriable
from tracescore.schemas.spans import SpanBatch

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Called once a request's envelopes are read and its largest item is known, before any of it is turned
# into spans: it reserves what the request will cost (ingest.receivers.memory_admission), raising
# Overloaded when that
# does not fit now or RequestTooLarge when it never will.
Measured = Callable[[DecodedRequest], None]

# Above this size decoding runs in a worker thread so one large request does not stall the event loop;
# below it the thread hop costs more than the decode.
DECODE_IN_THREAD_BYTES = 256 * 1024
# One decoding thread, however many requests are in flight: the event loop holds the GIL between
# slices anyway, and each thread that allocates gets an allocator arena of its own, which keeps the
# memory freed in it (measured: 6 threads decoding at once held tens of MiB more).
_DECODER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracescore-decode")


async def _in_decoder(call: Callable[..., _T], *args: Any) -> _T:
    return await asyncio.get_running_loop().run_in_executor(_DECODER, call, *args)


# Values of the "outcome" label of Metrics.requests.
OUTCOME_OK = "ok"
OUTCOME_PARTIAL = "partial"
OUTCOME_INVALID = "invalid"
OUTCOME_UNAVAILABLE = "unavailable"
OUTCOME_FAILED = "failed"
OUTCOME_REFUSED = "refused"  # a bound was reached: the client is asked to slow down
OUTCOME_TIMED_OUT = "timed_out"  # the request body did not arrive in time
OUTCOME_TOO_LARGE = "too_large"
OUTCOME_UNSUPPORTED = "unsupported"
OUTCOME_UNAUTHENTICATED = "unauthenticated"  # no or a wrong bearer token


class ConsumerFailed(TracescoreError):
    """The next consumer could not take the spans or log records. ``retriable`` is the cause's: the
    client should retry later (the store is unreachable or busy), or not (the store refuses them)."""


def count_decoded(batch: SpanBatch, signal: str, metrics: Metrics, transport: str) -> None:
    """Count what was rejected from a decoded batch, on the counter of its signal."""
    if not batch.rejected_items:
        return
    counter = metrics.logs_rejected if signal == SIGNAL_LOGS else metrics.spans_rejected
    counter.labels(transport).inc(batch.rejected_items)
    noun = "log record(s)" if signal == SIGNAL_LOGS else "span(s)"
    log.info("%s export: %d %s rejected: %s", transport, batch.rejected_items, noun, batch.error_message)


def count_received(batch: SpanBatch, metrics: Metrics, transport: str) -> None:
    """Count the spans and log records a batch handed on."""
    if batch.spans:
        metrics.spans_received.labels(transport).inc(len(batch.spans))
    if batch.logs:
        metrics.logs_received.labels(transport).inc(len(batch.logs))


async def export(
    encoding: str,
    payload: Payload,
    next: SpanConsumer,
    metrics: Metrics,
    transport: str,
    signal: str = SIGNAL_TRACES,
    max_items: int | None = None,
    measured: Measured | None = None,
    max_attributes: int | None = None,
) -> SpanBatch:
    """Decode one export request of ``signal`` and hand its spans or log records on, slice by slice;
    returns what was left out of it (the spans themselves are with ``next``).

    ``measured`` is told the request's size once its envelopes are read (see ``Measured``).
    Raises DecodeError when the payload is unreadable, Overloaded when the pipeline asks the client
    to slow down, RequestTooLarge when it can never take the request, ConsumerFailed when ``next``
    fails (slices handed on before stay stored: a client that sends the request again stores them
    twice, which assembly and scoring take as a replay).
    """
    in_thread = len(payload) >= DECODE_IN_THREAD_BYTES
    try:
        if in_thread:
            decoded = await _in_decoder(read, signal, encoding, payload, max_items, max_attributes)
        else:
            decoded = read(signal, encoding, payload, max_items, max_attributes)
    except DecodeError as exc:
        metrics.requests.labels(transport, OUTCOME_INVALID).inc()
        log.info("%s %s export request rejected: %s", transport, signal, exc)
        raise
    if measured is not None:
        try:
            measured(decoded)
        except Overloaded:
            metrics.requests.labels(transport, OUTCOME_REFUSED).inc()
            raise
        except RequestTooLarge:
            metrics.requests.labels(transport, OUTCOME_TOO_LARGE).inc()
            raise
    left_out = SpanBatch()
    handed_on = 0
    slices = decoded.slices()
    while True:
        # Building a slice of thousands of spans takes milliseconds: off the event loop when large.
        batch = await _in_decoder(next_slice, slices) if in_thread else next_slice(slices)
        if batch is None:
            break
        count_decoded(batch, signal, metrics, transport)
        left_out.rejected_items += batch.rejected_items
        left_out.errors.extend(batch.errors[: MAX_ERROR_MESSAGES + 1 - len(left_out.errors)])
        if not (batch.spans or batch.logs):
            continue
        handed_on += len(batch.spans) + len(batch.logs)
        try:
            await next.consume_spans(batch)
        except Overloaded:
            metrics.requests.labels(transport, OUTCOME_REFUSED).inc()
            raise
        except Exception as exc:
            retriable = is_retriable(exc)
            metrics.requests.labels(transport, OUTCOME_UNAVAILABLE if retriable else OUTCOME_FAILED).inc()
            # The detail (the database's text, a chDB path) goes to the log; the client gets the category.
            log.warning("%s export: next consumer failed: %s", transport, exc, exc_info=True)
            what = "log records" if signal == SIGNAL_LOGS else "spans"
            why = STORE_UNAVAILABLE if retriable else STORE_REFUSED
            raise ConsumerFailed(f"{what} could not be stored: {why}", retriable=retriable) from exc
        count_received(batch, metrics, transport)
    if not handed_on and not left_out.rejected_items and not left_out.errors:
        # Allowed by OTLP as a warning (nothing rejected, a message): a sender that sends nothing may
        # have a bug of its own.
        what = "log records" if signal == SIGNAL_LOGS else "spans"
        left_out.errors.append(f"the request holds no {what}: nothing was stored")
    metrics.requests.labels(transport, OUTCOME_PARTIAL if left_out.rejected_items else OUTCOME_OK).inc()
    return left_out


def next_slice(slices: Iterator[SpanBatch]) -> SpanBatch | None:
    """The next slice of a decoded request, None after the last."""
    return next(slices, None)


def export_response(batch: SpanBatch) -> ExportTraceServiceResponse:
    """The OTLP response for a decoded batch; partial_success only when something was left out, or as
    a warning (nothing rejected, a message) when the request held nothing at all."""
    response = ExportTraceServiceResponse()
    if message := _partial_success_message(batch):
        response.partial_success.rejected_spans = batch.rejected_items
        response.partial_success.error_message = message
    return response


def export_logs_response(batch: SpanBatch) -> ExportLogsServiceResponse:
    """The OTLP logs response; partial_success (rejected_log_records) as ``export_response`` has it."""
    response = ExportLogsServiceResponse()
    if message := _partial_success_message(batch):
        response.partial_success.rejected_log_records = batch.rejected_items
        response.partial_success.error_message = message
    return response


def _partial_success_message(batch: SpanBatch) -> str:
    return batch.error_message if batch.rejected_items or batch.errors else ""


def export_response_for(
    signal: str, batch: SpanBatch
) -> ExportTraceServiceResponse | ExportLogsServiceResponse:
    """The OTLP export response of ``signal`` for a decoded batch."""
    return export_logs_response(batch) if signal == SIGNAL_LOGS else export_response(batch)


def refusal_codes(exc: Overloaded) -> tuple[int, int]:
    """The HTTP status and ``google.rpc`` code of a refused request, both retried by OTLP exporters:
    the store's disk under its floor is an outage (503 / UNAVAILABLE); any other bound asks the client
    to slow down (429 / RESOURCE_EXHAUSTED)."""
    if isinstance(exc, StoreFull):
        return 503, code_pb2.UNAVAILABLE
    return 429, code_pb2.RESOURCE_EXHAUSTED


def retry_status(code: int, message: str, retry_after_s: float) -> status_pb2.Status:
    """A ``google.rpc.Status`` whose ``RetryInfo`` detail tells an OTLP client when to send again."""
    seconds = max(1, math.ceil(retry_after_s))
    status = status_pb2.Status(code=code, message=message)
    status.details.add().Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=seconds)))
    return status
