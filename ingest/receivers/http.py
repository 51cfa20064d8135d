"""OTLP/HTTP receiver (default port 4318) and the small HTTP API served beside it, on one aiohttp server.

``POST /v1/traces`` and ``POST /v1/logs`` take protobuf or JSON (by Content-Type), optionally
gzip/deflate; answers follow the OTLP/HTTP specification: an ExportTraceServiceResponse (or
ExportLogsServiceResponse) on success, a ``google.rpc.Status`` on error, both in the request's encoding.
``GET /api/scores`` and ``GET /api/decisions`` serve score and decision rows, filtered
(``schemas.score_queries``),
and for a trace without rows a 404 saying why; the commands' routes (``/api/runs``, ``/api/drift``,
``/api/backfill``) are in ``ingest.receivers.commands``, those of labels and agreement
(``/api/annotations``, ``/api/agreement``, ``/api/annotate``) in ``ingest.receivers.annotation_routes``;
``GET /healthz`` (liveness) and ``GET /readyz``
(readiness) each component's state (error texts as ``ingest.receivers.disclosure`` allows the caller);
``GET /metrics`` Prometheus metrics. Connections pass a gate first (``ingest.receivers.connections``);
with ``receiver.health_port``, the probes are also served on a port of their own (``health_lane``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Protocol

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2

from tracescore.ingest.decode import (
    CONTENT_TYPES,
    SIGNAL_LOGS,
    SIGNAL_TRACES,
    DecodedRequest,
    DecodeError,
    TooManyItems,
    encoding_for_content_type,
)
from tracescore.ingest.decode.cost import request_cost
from tracescore.ingest.observability.service_metrics import PROMETHEUS_CONTENT_TYPE, Metrics
from tracescore.ingest.receivers.auth import UNAUTHENTICATED_MESSAGE, bearer_matches, configured_token
from tracescore.ingest.receivers.connections import receiver_gate
from tracescore.ingest.receivers.disclosure import API_STORE_FAILED, STORE_UNAVAILABLE, public_health
from tracescore.ingest.receivers.health_lane import HealthLane
from tracescore.ingest.receivers.intake import (
    OUTCOME_REFUSED,
    OUTCOME_UNAUTHENTICATED,
    OUTCOME_UNSUPPORTED,
    ConsumerFailed,
    export,
    export_response_for,
    refusal_codes,
    retry_status,
)
from tracescore.ingest.receivers.listening import GatedSite, cannot_listen
from tracescore.ingest.receivers.memory_admission import MemoryGuard, MemoryReservation, RequestTooLarge
from tracescore.ingest.receivers.request_body import ExportFailed, compressed_body, read_body, too_large
from tracescore.ingest.receivers.tls import server_ssl_context
from tracescore.schemas.config import ReceiverConfig
from tracescore.schemas.consumers import SpanConsumer
from tracescore.schemas.errors import Overloaded, StoreError
from tracescore.schemas.score_queries import QueryError, ResultQuery, TraceStatus, parse_query

log = logging.getLogger(__name__)

TRANSPORT = "http"
TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
OPEN_PATHS = frozenset({"/healthz", "/readyz"})  # probes carry no token
RETRY_AFTER_SECONDS = 5
SHUTDOWN_GRACE_SECONDS = 5.0
_dumps = partial(json.dumps, default=str)  # score rows and health values may hold datetimes


class ScoreReader(Protocol):
    """The reads behind ``/api/scores`` and ``/api/decisions`` (``ingest.store.score_reads.ScoreResults``)."""

    async def scores(self, query: ResultQuery) -> list[dict[str, Any]] | TraceStatus:
        """Score rows matching ``query``, newest first; for a trace without any, why."""

    async def decisions(self, query: ResultQuery) -> list[dict[str, Any]] | TraceStatus:
        """Decision rows matching ``query``, newest first; for a trace without any, why."""


class CommandRoutes(Protocol):
    """More ``/api/*`` routes: those of the commands that work on the store
    (``ingest.receivers.commands.StoreCommands``)."""

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Add the routes; they sit behind the same authentication as the rest."""


class Health(Protocol):
    def health(self) -> dict[str, Any]:
        """Each component's state: ``status`` is ok or degraded."""

    def ready(self) -> bool:
        """Whether the service can take spans and score them now."""


class HttpReceiver:
    def __init__(
        self,
        config: ReceiverConfig,
        next: SpanConsumer,
        metrics: Metrics,
        scores: ScoreReader,
        health: Health | None = None,
        memory: MemoryGuard | None = None,
        commands: CommandRoutes | None = None,
        api_routes: Sequence[CommandRoutes] = (),
    ) -> None:
        self._config = config
        self._commands = commands
        self._api_routes = tuple(api_routes)  # further /api routes: annotations, agreement
        self._memory = memory
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
        if self._commands is not None:
            self._commands.add_routes(app.router)
        for routes in self._api_routes:
            routes.add_routes(app.router)
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
                raise ExportFailed(
                    415,
                    code_pb2.INVALID_ARGUMENT,
                    f"unsupported Content-Type {request.content_type!r}; "
                    f"use {' or '.join(CONTENT_TYPES.values())}",
                    OUTCOME_UNSUPPORTED,
                )
            with self._reserve(request, encoding) as reservation:
                return await self._export(request, signal, encoding, reservation)
        except ExportFailed as failed:
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

    def _reserve(self, request: web.Request, encoding: str) -> MemoryReservation:
        """What the request will cost, held before its body is read: a refused request costs nothing."""
        size = request.content_length or 0
        limit = self._config.max_request_bytes
        if size > limit:  # over the size limit: refused as such, whatever memory is free
            raise too_large(f"request body of {size} bytes is over the limit of {limit}")
        if self._memory is None:
            return MemoryReservation.unbounded()
        compressed = size if compressed_body(request) else 0
        what = f"a request of {size} bytes" if size else "a request of unknown size"
        try:
            return self._memory.reserve(request_cost(encoding, size, compressed), what)
        except Overloaded as exc:
            raise ExportFailed(
                429, code_pb2.RESOURCE_EXHAUSTED, str(exc), OUTCOME_REFUSED, exc.retry_after_s
            ) from None
        except RequestTooLarge as exc:
            raise too_large(str(exc)) from None

    async def _export(
        self, request: web.Request, signal: str, encoding: str, reservation: MemoryReservation
    ) -> web.Response:
        """Read, decode and store the request under its reservation (released once this returns and
        the body is gone)."""
        payload = await read_body(request, self._config, encoding, reservation)
        compressed = reservation.compressed

        def measured(decoded: DecodedRequest) -> None:
            # The body is read and its envelopes too: what it costs is known now, its largest item too.
            cost = request_cost(encoding, len(payload), compressed, decoded.largest_item)
            reservation.resize(cost)

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
                measured=measured,
                max_attributes=self._config.max_attributes_per_item,
            )
        except TooManyItems as exc:
            raise ExportFailed(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
        except DecodeError as exc:
            raise ExportFailed(400, code_pb2.INVALID_ARGUMENT, str(exc)) from None
        except Overloaded as exc:
            # The OTLP/HTTP answer to "slow down" (429) or "out of disk" (503), with Retry-After
            # (and RetryInfo): the exporter sends again.
            status, code = refusal_codes(exc)
            raise ExportFailed(status, code, str(exc), retry_after_s=exc.retry_after_s) from None
        except RequestTooLarge as exc:
            raise ExportFailed(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
        except ConsumerFailed as exc:
            # A client retries 503 (after Retry-After); a permanent failure is 400: never retry.
            if exc.retriable:
                raise ExportFailed(
                    503, code_pb2.UNAVAILABLE, str(exc), retry_after_s=RETRY_AFTER_SECONDS
                ) from None
            raise ExportFailed(400, code_pb2.INVALID_ARGUMENT, str(exc)) from None
        return _message_response(200, export_response_for(signal, batch), encoding)

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


def _message_response(
    status: int, message: Message, encoding: str, headers: dict[str, str] | None = None
) -> web.Response:
    if encoding == "otlp_json":
        body = json_format.MessageToJson(message, indent=None).encode()
    else:
        body = message.SerializeToString()
    return web.Response(status=status, body=body, content_type=CONTENT_TYPES[encoding], headers=headers)
