"""OTLP/HTTP receiver (default port 4318) and the small HTTP API served beside it, on one aiohttp server.

``POST /v1/traces`` and ``POST /v1/logs`` take protobuf or JSON (by Content-Type), optionally
gzip/deflate; answers follow the OTLP/HTTP specification: an ExportTraceServiceResponse (or
ExportLogsServiceResponse) on success, a ``google.rpc.Status`` on error, both in the request's encoding.
``GET /api/scores`` and ``GET /api/decisions`` serve score and decision rows, filtered (``schemas.results``),
and for a trace without rows a 404 saying why; ``GET /healthz`` (liveness) and ``GET /readyz``
(readiness) each component's state (error texts as ``ingest.receivers.disclosure`` allows the caller);
``GET /metrics`` Prometheus metrics. Connections pass a gate first (``ingest.receivers.connections``);
with ``receiver.health_port``, the probes are also served on a port of their own (``health_lane``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import zlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2

from ingest.decode import (
    CONTENT_TYPES,
    SIGNAL_LOGS,
    SIGNAL_TRACES,
    DecodeError,
    TooManyItems,
    encoding_for_content_type,
)
from ingest.metrics import PROMETHEUS_CONTENT_TYPE, Metrics
from ingest.receivers.auth import UNAUTHENTICATED_MESSAGE, bearer_matches, configured_token
from ingest.receivers.connections import receiver_gate
from ingest.receivers.disclosure import API_STORE_FAILED, STORE_UNAVAILABLE, public_health
from ingest.receivers.export import (
    OUTCOME_INVALID,
    OUTCOME_REFUSED,
    OUTCOME_TIMED_OUT,
    OUTCOME_TOO_LARGE,
    OUTCOME_UNAUTHENTICATED,
    OUTCOME_UNSUPPORTED,
    ConsumerFailed,
    export,
    export_response_for,
    refusal_codes,
    retry_status,
)
from ingest.receivers.health_lane import HealthLane
from ingest.receivers.listening import GatedSite, cannot_listen
from ingest.receivers.tls import server_ssl_context
from schemas.config import ReceiverConfig
from schemas.consumers import SpanConsumer
from schemas.errors import Overloaded, StoreError
from schemas.results import QueryError, ResultQuery, TraceStatus, parse_query

log = logging.getLogger(__name__)

TRANSPORT = "http"
TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
OPEN_PATHS = frozenset({"/healthz", "/readyz"})  # probes carry no token
RETRY_AFTER_SECONDS = 5
SHUTDOWN_GRACE_SECONDS = 5.0
READ_CHUNK_BYTES = 64 * 1024
DECOMPRESS_IN_THREAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"  # no protobuf or JSON body can start with these bytes
# Content-Encoding -> zlib wbits: gzip framing, or the zlib framing HTTP calls "deflate".
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_IDENTITY_ENCODINGS = {"", "identity"}
_dumps = partial(json.dumps, default=str)  # score rows and health values may hold datetimes


class ScoreReader(Protocol):
    """The reads behind ``/api/scores`` and ``/api/decisions`` (``ingest.store.results.ScoreResults``)."""

    async def scores(self, query: ResultQuery) -> list[dict[str, Any]] | TraceStatus:
        """Score rows matching ``query``, newest first; for a trace without any, why."""

    async def decisions(self, query: ResultQuery) -> list[dict[str, Any]] | TraceStatus:
        """Decision rows matching ``query``, newest first; for a trace without any, why."""


class Health(Protocol):
    def health(self) -> dict[str, Any]:
        """Each component's state: ``status`` is ok or degraded."""

    def ready(self) -> bool:
        """Whether the service can take spans and score them now."""


class _ExportFailed(Exception):
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


class HttpReceiver:
    def __init__(
        self,
        config: ReceiverConfig,
        next: SpanConsumer,
        metrics: Metrics,
        scores: ScoreReader,
        health: Health | None = None,
        admit: Callable[[], None] | None = None,
    ) -> None:
        self._config = config
        self._admit = admit
        self._next = next
        self._metrics = metrics
        self._scores = scores
        self._health = health
        self._runner: web.AppRunner | None = None
        self._lane: HealthLane | None = None
        self._port = 0
        self._token: str | None = None

    @property
    def port(self) -> int:
        """The bound port once started (config port 0 picks a free one); 0 before start."""
        return self._port

    @property
    def health_port(self) -> int | None:
        """The health lane's bound port once started; None without ``receiver.health_port``."""
        return self._lane.port if self._lane is not None else None

    async def start(self) -> None:
        if self._runner is not None:
            return
        self._token = configured_token(self._config)
        config = self._config
        gate = receiver_gate(config, self._metrics)
        # The gate's middleware first: a request is "busy" (never evicted) from its headers on.
        middlewares = [gate.middleware, *([self._authenticate] if self._token else [])]
        app = web.Application(client_max_size=self._config.max_request_bytes, middlewares=middlewares)
        app.router.add_post(TRACES_PATH, self._export_handler(SIGNAL_TRACES))
        app.router.add_post(LOGS_PATH, self._export_handler(SIGNAL_LOGS))
        app.router.add_get("/api/scores", self._get_scores)
        app.router.add_get("/api/decisions", self._get_decisions)
        app.router.add_get("/healthz", self._get_health)
        app.router.add_get("/readyz", self._get_ready)
        app.router.add_get("/metrics", self._get_metrics)
        # auto_decompress off: the body is decompressed here, under the size cap (gzip bombs).
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            auto_decompress=False,
            shutdown_timeout=SHUTDOWN_GRACE_SECONDS,
        )
        await runner.setup()
        try:
            ssl_context = server_ssl_context(config)  # HTTPS with receiver.tls_cert / tls_key
            site = GatedSite(runner, config.host, config.http_port, gate, ssl_context)
            try:
                await site.start()
            except OSError as exc:
                raise OSError(cannot_listen("OTLP/HTTP", config.host, config.http_port, exc)) from exc
        except BaseException:
            await runner.cleanup()
            raise
        self._runner, self._port = runner, runner.addresses[0][1]
        if config.health_port is not None:
            timeouts = (config.header_timeout_seconds, config.idle_timeout_seconds)
            self._lane = HealthLane(config.host, config.health_port, *timeouts, self._probe_view)
            try:
                await self._lane.start()
            except BaseException:
                await self.shutdown()
                raise

    async def shutdown(self) -> None:
        """Stop listening and let in-flight requests finish (up to a grace period)."""
        lane, runner, self._lane, self._runner = self._lane, self._runner, None, None
        if lane is not None:
            await lane.shutdown()
        if runner is not None:
            await runner.cleanup()

    @web.middleware
    async def _authenticate(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Every route but the probes (and /metrics when open) wants the bearer token."""
        open_paths = OPEN_PATHS | ({"/metrics"} if self._config.metrics_open else set())
        token = self._token
        if token is None or request.path in open_paths:
            return await handler(request)
        if bearer_matches(request.headers.get("Authorization"), token):
            return await handler(request)
        headers = {"WWW-Authenticate": 'Bearer realm="tracescore"'}
        if request.path in (TRACES_PATH, LOGS_PATH):
            self._metrics.requests.labels(TRANSPORT, OUTCOME_UNAUTHENTICATED).inc()
            status = status_pb2.Status(code=code_pb2.UNAUTHENTICATED, message=UNAUTHENTICATED_MESSAGE)
            encoding = encoding_for_content_type(request.content_type) or "otlp_json"
            return _message_response(401, status, encoding, headers)
        return web.json_response({"error": UNAUTHENTICATED_MESSAGE}, status=401, headers=headers)

    def _export_handler(self, signal: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def post(request: web.Request) -> web.Response:
            return await self._post_export(request, signal)

        return post

    async def _post_export(self, request: web.Request, signal: str) -> web.Response:
        encoding = encoding_for_content_type(request.content_type)
        try:
            if encoding is None:
                raise _ExportFailed(
                    415,
                    code_pb2.INVALID_ARGUMENT,
                    f"unsupported Content-Type {request.content_type!r}; "
                    f"use {' or '.join(CONTENT_TYPES.values())}",
                    OUTCOME_UNSUPPORTED,
                )
            if self._admit is not None:
                try:
                    self._admit()  # before the body is read: a refused request costs no memory
                except Overloaded as exc:
                    status, code = refusal_codes(exc)
                    raise _ExportFailed(status, code, str(exc), OUTCOME_REFUSED, exc.retry_after_s) from None
            payload = await self._read_body(request)
            try:
                max_items = self._config.max_request_items
                batch = await export(
                    encoding,
                    payload,
                    self._next,
                    self._metrics,
                    TRANSPORT,
                    signal,
                    max_items,
                    max_attributes=self._config.max_attributes_per_item,
                )
            except TooManyItems as exc:
                raise _ExportFailed(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
            except DecodeError as exc:
                raise _ExportFailed(400, code_pb2.INVALID_ARGUMENT, str(exc)) from None
            except Overloaded as exc:
                # The OTLP/HTTP answer to "slow down" (429) or "out of disk" (503), with Retry-After
                # (and RetryInfo): the exporter sends again.
                status, code = refusal_codes(exc)
                raise _ExportFailed(status, code, str(exc), retry_after_s=exc.retry_after_s) from None
            except ConsumerFailed as exc:
                # A client retries 503 (after Retry-After); a permanent failure is 400: never retry.
                if exc.retriable:
                    raise _ExportFailed(
                        503, code_pb2.UNAVAILABLE, str(exc), retry_after_s=RETRY_AFTER_SECONDS
                    ) from None
                raise _ExportFailed(400, code_pb2.INVALID_ARGUMENT, str(exc)) from None
        except _ExportFailed as failed:
            if failed.outcome:
                self._metrics.requests.labels(TRANSPORT, failed.outcome).inc()
            headers = None
            if failed.retry_after_s is None:
                status = status_pb2.Status(code=failed.code, message=failed.message)
            else:
                status = retry_status(failed.code, failed.message, failed.retry_after_s)
                headers = {"Retry-After": str(max(1, math.ceil(failed.retry_after_s)))}
            # The client cannot read a type it did not send; an unsupported one is answered in JSON.
            return _message_response(failed.status, status, encoding or "otlp_json", headers)
        return _message_response(200, export_response_for(signal, batch), encoding)

    async def _read_body(self, request: web.Request) -> bytes:
        """The request body, decompressed if need be, never holding more than the size limit."""
        limit = self._config.max_request_bytes
        if request.content_length is not None and request.content_length > limit:
            raise _too_large(f"request body of {request.content_length} bytes is over the limit of {limit}")
        content_encoding = request.headers.get("Content-Encoding", "").strip().lower()
        if content_encoding not in _WBITS.keys() | _IDENTITY_ENCODINGS:
            raise _ExportFailed(
                415,
                code_pb2.INVALID_ARGUMENT,
                f"unsupported Content-Encoding {content_encoding!r}; use gzip, deflate or none",
                OUTCOME_UNSUPPORTED,
            )
        body = bytearray()
        try:
            async with asyncio.timeout(self._config.body_timeout_seconds):
                async for chunk in request.content.iter_chunked(READ_CHUNK_BYTES):
                    body += chunk
                    if len(body) > limit:
                        raise _too_large(f"request body is over the limit of {limit} bytes")
        except TimeoutError:
            # A stalled upload must not hold its connection (and a file descriptor) for ever.
            seconds = self._config.body_timeout_seconds
            message = f"the request body did not arrive within {seconds:g} s"
            raise _ExportFailed(408, code_pb2.DEADLINE_EXCEEDED, message, OUTCOME_TIMED_OUT) from None
        if content_encoding not in _WBITS and body.startswith(GZIP_MAGIC):
            content_encoding = "gzip"
        if content_encoding not in _WBITS:
            return bytes(body)
        if len(body) < DECOMPRESS_IN_THREAD_BYTES:
            return _decompress(bytes(body), content_encoding, limit)
        # Inflating up to the limit takes tens of milliseconds: keep the event loop free meanwhile.
        return await asyncio.to_thread(_decompress, bytes(body), content_encoding, limit)

    async def _get_scores(self, request: web.Request) -> web.Response:
        return await self._results(request, self._scores.scores, decisions=False)

    async def _get_decisions(self, request: web.Request) -> web.Response:
        return await self._results(request, self._scores.decisions, decisions=True)

    async def _results(
        self,
        request: web.Request,
        read: Callable[[ResultQuery], Awaitable[list[dict[str, Any]] | TraceStatus]],
        *,
        decisions: bool,
    ) -> web.Response:
        """200 with the matching rows; 404 with a ``TraceStatus`` for a trace that has none; 400
        naming the parameter that is wrong."""
        try:
            for name in request.query:
                if len(request.query.getall(name)) > 1:
                    raise QueryError(name, "give it once")
            query = parse_query(request.query, decisions=decisions)
        except QueryError as exc:
            return web.json_response({"error": str(exc), "parameter": exc.parameter}, status=400)
        try:
            found = await read(query)
        except StoreError as exc:
            log.warning("%s failed: %s", request.path, exc)
            if exc.retriable:
                headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
                return web.json_response({"error": STORE_UNAVAILABLE}, status=503, headers=headers)
            return web.json_response({"error": API_STORE_FAILED}, status=500)
        if isinstance(found, TraceStatus):
            return web.json_response(found.model_dump(exclude_none=True), status=404)
        return web.json_response(found, dumps=_dumps)

    def _probe_view(self) -> tuple[dict[str, Any], bool]:
        """What the health lane shows: the health body as a caller without the token sees it, and
        readiness."""
        body = self._health.health() if self._health else {"status": "ok"}
        public = public_health(body, authenticated=False, token_configured=self._token is not None)
        return public, self._health.ready() if self._health else True

    def _public_health(self, request: web.Request) -> dict[str, Any]:
        """The health body as this caller may see it (see ingest.receivers.disclosure)."""
        body = self._health.health() if self._health else {"status": "ok"}
        token = self._token
        authenticated = token is not None and bearer_matches(request.headers.get("Authorization"), token)
        return public_health(body, authenticated=authenticated, token_configured=token is not None)

    async def _get_health(self, request: web.Request) -> web.Response:
        """Liveness: answers while the process serves, with each component's state."""
        return web.json_response(self._public_health(request), dumps=_dumps)

    async def _get_ready(self, request: web.Request) -> web.Response:
        """Readiness: 200 when spans can be taken and scored now, else 503 with what is wrong."""
        if self._health is None:
            return web.json_response({"status": "ok"})
        ready = self._health.ready()
        return web.json_response(self._public_health(request), status=200 if ready else 503, dumps=_dumps)

    async def _get_metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.render(), headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})


def _too_large(message: str) -> _ExportFailed:
    return _ExportFailed(413, code_pb2.RESOURCE_EXHAUSTED, message, OUTCOME_TOO_LARGE)


def _decompress(data: bytes, name: str, limit: int) -> bytes:
    """Decompress stream by stream (gzip allows several members), stopping once past ``limit`` bytes."""
    out = bytearray()
    while data:
        decompressor = zlib.decompressobj(wbits=_WBITS[name])
        try:
            # max_length bounds the memory a gzip bomb can take; it is at least 1 (0 would mean no bound).
            out += decompressor.decompress(data, limit + 1 - len(out))
        except zlib.error as exc:
            message = f"invalid {name} body: {exc}"
            raise _ExportFailed(400, code_pb2.INVALID_ARGUMENT, message, OUTCOME_INVALID) from None
        if len(out) > limit:
            raise _too_large(f"decompressed request body is over the limit of {limit} bytes")
        if not decompressor.eof:
            raise _ExportFailed(400, code_pb2.INVALID_ARGUMENT, f"{name} body is truncated", OUTCOME_INVALID)
        data = decompressor.unused_data
    return bytes(out)


def _message_response(
    status: int, message: Message, encoding: str, headers: dict[str, str] | None = None
) -> web.Response:
    if encoding == "otlp_json":
        body = json_format.MessageToJson(message, indent=None).encode()
    else:
        body = message.SerializeToString()
    return web.Response(status=status, body=body, content_type=CONTENT_TYPES[encoding], headers=headers)
