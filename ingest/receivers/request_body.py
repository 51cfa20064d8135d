"""Reading an OTLP/HTTP request body: under its size limit, its body timeout and its memory reservation.

The body is read into one buffer (never copied); a gzip or deflate body is inflated a step of
``RESERVE_STEP_BYTES`` at a time, each step reserved before it is taken
(``ingest.receivers.memory_admission``), so a body
that turns out larger than declared -- chunked, or compressed -- is refused as soon as it would pass
what memory allows, not after it has taken it. ``ExportFailed`` is the error answer of an export
request, with its HTTP status, its ``google.rpc`` code and how the client may retry.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable

from aiohttp import web
from google.rpc import code_pb2

from tracescore.ingest.decode.cost import request_cost
from tracescore.ingest.receivers.intake import (
    OUTCOME_INVALID,
    OUTCOME_REFUSED,
    OUTCOME_TIMED_OUT,
    OUTCOME_TOO_LARGE,
    OUTCOME_UNSUPPORTED,
)
from tracescore.ingest.receivers.memory_admission import MemoryReservation, RequestTooLarge
from tracescore.schemas.config import ReceiverConfig
from tracescore.schemas.errors import Overloaded

READ_CHUNK_BYTES = 64 * 1024
DECOMPRESS_IN_THREAD_BYTES = 64 * 1024
# A body of unknown size (chunked) or being inflated reserves its memory in steps of this much.
RESERVE_STEP_BYTES = 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"  # no protobuf or JSON body can start with these bytes
# Content-Encoding -> zlib wbits: gzip framing, or the zlib framing HTTP calls "deflate".
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_IDENTITY_ENCODINGS = {"", "identity"}


class ExportFailed(Exception):
    """An export request answered with an error status (a google.rpc.Status body)."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        outcome: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.outcome = outcome  # None when export() has counted the request already
        self.retry_after_s = retry_after_s  # when the client may send again (429, 503)


def too_large(message: str) -> ExportFailed:
    return ExportFailed(413, code_pb2.RESOURCE_EXHAUSTED, message, OUTCOME_TOO_LARGE)


def compressed_body(request: web.Request) -> bool:
    """The request says its body is gzip or deflate."""
    return _content_encoding(request) in _WBITS


def _content_encoding(request: web.Request) -> str:
    return request.headers.get("Content-Encoding", "").strip().lower()


async def read_body(
    request: web.Request, config: ReceiverConfig, encoding: str, reservation: MemoryReservation
) -> bytearray:
    """The request body, decompressed if need be, never holding more than the size limit nor more
    than ``reservation`` covers (it grows as a body of unknown size arrives or is inflated)."""
    limit = config.max_request_bytes
    content_encoding = _content_encoding(request)
    if content_encoding not in _WBITS.keys() | _IDENTITY_ENCODINGS:
        raise ExportFailed(
            415,
            code_pb2.INVALID_ARGUMENT,
            f"unsupported Content-Encoding {content_encoding!r}; use gzip, deflate or none",
            OUTCOME_UNSUPPORTED,
        )
    body = bytearray()
    covered = request.content_length or 0  # bytes of body the reservation was made for
    inflating = content_encoding in _WBITS
    try:
        async with asyncio.timeout(config.body_timeout_seconds):
            async for chunk in request.content.iter_chunked(READ_CHUNK_BYTES):
                body += chunk
                if len(body) > limit:
                    raise too_large(f"request body is over the limit of {limit} bytes")
                if len(body) > covered:
                    covered = len(body) + RESERVE_STEP_BYTES
                    compressed = covered if inflating else 0
                    _grow(reservation, request_cost(encoding, covered, compressed), len(body))
    except TimeoutError:
        # A stalled upload must not hold its connection (and a file descriptor) for ever.
        message = f"the request body did not arrive within {config.body_timeout_seconds:g} s"
        raise ExportFailed(408, code_pb2.DEADLINE_EXCEEDED, message, OUTCOME_TIMED_OUT) from None
    if content_encoding not in _WBITS and body.startswith(GZIP_MAGIC):
        content_encoding = "gzip"
    if content_encoding not in _WBITS:
        return body
    reservation.compressed = len(body)

    def grow(inflated: int) -> None:
        _grow(reservation, request_cost(encoding, inflated + RESERVE_STEP_BYTES, len(body)), inflated)

    if len(body) < DECOMPRESS_IN_THREAD_BYTES:
        return _decompress(body, content_encoding, limit, grow)
    # Inflating up to the limit takes tens of milliseconds: keep the event loop free meanwhile.
    return await asyncio.to_thread(_decompress, body, content_encoding, limit, grow)


def _grow(reservation: MemoryReservation, cost: int, arrived: int) -> None:
    """Reserve ``cost`` for a body of which ``arrived`` bytes are in: 429 or 413 when it does not fit."""
    try:
        reservation.resize(cost)
    except Overloaded as exc:
        message = f"{exc} (after {arrived} bytes of its body)"
        raise ExportFailed(
            429, code_pb2.RESOURCE_EXHAUSTED, message, OUTCOME_REFUSED, exc.retry_after_s
        ) from None
    except RequestTooLarge as exc:
        raise too_large(str(exc)) from None


def _decompress(data: bytearray, name: str, limit: int, grow: Callable[[int], None]) -> bytearray:
    """Decompress stream by stream (gzip allows several members), stopping once past ``limit`` bytes,
    telling ``grow`` before each step of ``RESERVE_STEP_BYTES`` of output."""
    out = bytearray()
    pending = bytes(data)
    while pending:
        decompressor = zlib.decompressobj(wbits=_WBITS[name])
        while not decompressor.eof:
            grow(len(out))
            # max_length bounds each step (and a gzip bomb); at least 1 (0 would mean no bound).
            step = max(1, min(RESERVE_STEP_BYTES, limit + 1 - len(out)))
            try:
                inflated = decompressor.decompress(pending, step)
            except zlib.error as exc:
                message = f"invalid {name} body: {exc}"
                raise ExportFailed(400, code_pb2.INVALID_ARGUMENT, message, OUTCOME_INVALID) from None
            out += inflated
            if len(out) > limit:
                raise too_large(f"decompressed request body is over the limit of {limit} bytes")
            pending = decompressor.unconsumed_tail
            if not pending and len(inflated) < step:
                break  # all input taken and no more output: the stream ends here, or is cut short
        if not decompressor.eof:
            raise ExportFailed(400, code_pb2.INVALID_ARGUMENT, f"{name} body is truncated", OUTCOME_INVALID)
        pending = decompressor.unused_data
    return out
