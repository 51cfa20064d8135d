"""OTLP/gRPC receiver: the TraceService and LogsService Export methods (default port 4317) on one
``grpc.aio`` server.

The methods are registered with generic handlers that pass the raw request bytes through, so gRPC
requests go through the same ``decode(signal, "otlp_proto", ...)`` as every other transport. gzip request
compression is handled by gRPC itself, and so is the size limit: ``grpc.max_receive_message_length``
(``receiver.max_request_bytes``) holds for the message as sent and once inflated (gRPC stops inflating
past it and answers RESOURCE_EXHAUSTED "Decompressed message larger than max"), so a gzip bomb never
reaches the handler. With ``receiver.tls_cert`` / ``receiver.tls_key`` the port speaks
TLS only (see ``ingest.receivers.tls``).

Memory: grpcio reads a unary request's message before the handler runs, so admission
(``ingest.receivers.memory_admission``)
happens first thing in the handler, before decoding, counting the message as read and what decoding
and storing it will cost; a request that does not fit is answered RESOURCE_EXHAUSTED with RetryInfo
(the OTLP exporters' cue to send again later) and its message is let go. How many messages can be
read at once is bounded per connection (``max_streams``: HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS,
so a client's further calls wait in the client rather than in this process's memory).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc
from google.rpc import code_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracescore.ingest.decode import SIGNAL_LOGS, SIGNAL_TRACES, DecodedRequest, DecodeError, TooManyItems
from tracescore.ingest.decode.cost import request_cost
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.auth import UNAUTHENTICATED_MESSAGE, configured_token, metadata_matches
from tracescore.ingest.receivers.connections import default_cap
from tracescore.ingest.receivers.disclosure import INTERNAL_ERROR
from tracescore.ingest.receivers.intake import (
    OUTCOME_REFUSED,
    OUTCOME_TOO_LARGE,
    OUTCOME_UNAUTHENTICATED,
    ConsumerFailed,
    export,
    export_response_for,
    refusal_codes,
    retry_status,
)
from tracescore.ingest.receivers.listening import bind_error, cannot_listen
from tracescore.ingest.receivers.memory_admission import MemoryGuard, MemoryReservation, RequestTooLarge
from tracescore.ingest.receivers.tls import grpc_server_credentials, tls_files
from tracescore.schemas.config import ReceiverConfig
from tracescore.schemas.consumers import SpanConsumer
from tracescore.schemas.errors import Overloaded

log = logging.getLogger(__name__)

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
METHOD = "Export"
ExportResponse = ExportTraceServiceResponse | ExportLogsServiceResponse
# gRPC service -> (signal, response type).
_SERVICES: dict[str, tuple[str, type[ExportResponse]]] = {
    SERVICE: (SIGNAL_TRACES, ExportTraceServiceResponse),
    LOGS_SERVICE: (SIGNAL_LOGS, ExportLogsServiceResponse),
}
TRANSPORT = "grpc"
# The refusals' google.rpc codes as grpcio's status codes.
_GRPC_CODES = {
    code_pb2.RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    code_pb2.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}
SHUTDOWN_GRACE_SECONDS = 5.0
# grpcio holds a received message twice while the handler runs: in its own buffers and as bytes.
MESSAGE_COPIES = 2
# Streams (concurrent RPCs) on one connection, unless memory_limit allows fewer (the service sizes
# it): exporters send one or a few exports at a time (the Collector's sending queue: 10 consumers);
# grpc-go's servers allow 250 unless told otherwise.
DEFAULT_MAX_STREAMS = 100
# A connection lives at most this long (with 10 % jitter, applied by gRPC) before it is sent GOAWAY
# and its client reconnects; its RPCs then have receiver.body_timeout_seconds to finish. This bounds
# a stream whose request never finishes arriving, which nothing else times out.
MAX_CONNECTION_AGE_SECONDS = 600


def server_options(config: ReceiverConfig, max_streams: int = DEFAULT_MAX_STREAMS) -> list[tuple[str, int]]:
    """The gRPC server's channel arguments: the size limit, and the connection limits of the OTLP/HTTP
    receiver as gRPC core names them (it serves connections on threads of its own, off the event loop;
    these keep them from taking the process's file descriptors)."""
    return [
        ("grpc.max_receive_message_length", config.max_request_bytes),
        # gRPC turns SO_REUSEPORT on by default, which would let a second service share a busy port
        # silently and split the traffic; a clash must fail loudly instead.
        ("grpc.so_reuseport", 0),
        # New connections beyond it are closed at once (gRPC has no eviction).
        ("grpc.max_allowed_incoming_connections", config.max_connections or default_cap(share=4)),
        # The HTTP/2 preface and settings (and the TLS handshake) must arrive within the header timeout.
        ("grpc.server_handshake_timeout_ms", round(config.header_timeout_seconds * 1000)),
        ("grpc.max_connection_idle_ms", round(config.idle_timeout_seconds * 1000)),
        ("grpc.max_connection_age_ms", MAX_CONNECTION_AGE_SECONDS * 1000),
        ("grpc.max_connection_age_grace_ms", round(config.body_timeout_seconds * 1000)),
        ("grpc.max_concurrent_streams", max_streams),
    ]


class GrpcReceiver:
    def __init__(
        self,
        config: ReceiverConfig,
        next: SpanConsumer,
        metrics: Metrics,
        memory: MemoryGuard | None = None,
        max_streams: int = DEFAULT_MAX_STREAMS,
    ) -> None:
        self._config = config
        self._memory = memory
        self.max_streams = max_streams
        self._token: str | None = None
        self._next = next
        self._metrics = metrics
        self._server: grpc.aio.Server | None = None
        self._port = 0

    @property
    def port(self) -> int:
        """The bound port once started (config port 0 picks a free one); 0 before start."""
        return self._port

    async def start(self) -> None:
        if self._server is not None:
            return
        self._token = configured_token(self._config)
        tls = tls_files(self._config)  # a bad file fails the start, naming its key
        server = grpc.aio.server(options=server_options(self._config, self.max_streams))
        handlers = []
        for service, (signal, response_type) in _SERVICES.items():
            handler = grpc.unary_unary_rpc_method_handler(
                self._exporter(signal),
                request_deserializer=None,  # raw bytes: decoding is the registry's job
                response_serializer=response_type.SerializeToString,
            )
            handlers.append(grpc.method_handlers_generic_handler(service, {METHOD: handler}))
        server.add_generic_rpc_handlers(tuple(handlers))
        host = self._config.host
        address = f"[{host}]:{self._config.grpc_port}" if ":" in host else f"{host}:{self._config.grpc_port}"
        try:
            if tls is None:
                port = server.add_insecure_port(address)
            else:
                port = server.add_secure_port(address, grpc_server_credentials(tls))
        except RuntimeError as exc:  # grpcio raises RuntimeError when the address cannot be bound
            why: BaseException = bind_error(host, self._config.grpc_port) or exc
            raise OSError(cannot_listen("OTLP/gRPC", host, self._config.grpc_port, why)) from exc
        if not port:
            refusal = bind_error(host, self._config.grpc_port)
            raise OSError(cannot_listen("OTLP/gRPC", host, self._config.grpc_port, refusal))
        await server.start()
        self._server, self._port = server, port

    async def shutdown(self) -> None:
        """Stop accepting requests and let in-flight exports finish (up to a grace period)."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(SHUTDOWN_GRACE_SECONDS)

    def _exporter(
        self, signal: str
    ) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[ExportResponse]]:
        async def export_signal(request: bytes, context: grpc.aio.ServicerContext) -> ExportResponse:
            if self._token and not metadata_matches(context.invocation_metadata(), self._token):
                self._metrics.requests.labels(TRANSPORT, OUTCOME_UNAUTHENTICATED).inc()
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
            try:
                with self._reserve(len(request)) as reservation:

                    def measured(decoded: DecodedRequest) -> None:
                        size = len(request)
                        reservation.resize(
                            request_cost(
                                "otlp_proto", size, (MESSAGE_COPIES - 1) * size, decoded.largest_item
                            )
                        )

                    batch = await export(
                        "otlp_proto",
                        request,
                        self._next,
                        self._metrics,
                        TRANSPORT,
                        signal,
                        self._config.max_request_items,
                        measured=measured,
                        max_attributes=self._config.max_attributes_per_item,
                    )
            except TooManyItems as exc:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            except DecodeError as exc:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            except RequestTooLarge as exc:
                # RESOURCE_EXHAUSTED without RetryInfo: OTLP exporters do not send it again.
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            except Overloaded as exc:
                # The OTLP answer to "slow down" (RESOURCE_EXHAUSTED) or "out of disk" (UNAVAILABLE),
                # with RetryInfo in the status details: the exporter sends again.
                _, code = refusal_codes(exc)
                details = retry_status(code, str(exc), exc.retry_after_s)
                await context.abort(
                    _GRPC_CODES[code],
                    str(exc),
                    trailing_metadata=(("grpc-status-details-bin", details.SerializeToString()),),
                )
            except ConsumerFailed as exc:
                # UNAVAILABLE is the OTLP code a client retries; a permanent failure is INVALID_ARGUMENT.
                code = grpc.StatusCode.UNAVAILABLE if exc.retriable else grpc.StatusCode.INVALID_ARGUMENT
                await context.abort(code, str(exc))
            except grpc.aio.AbortError:
                raise
            except Exception:
                # grpc.aio would put the exception's own text in the status details.
                log.exception("OTLP/gRPC %s export failed", signal)
                await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_ERROR)
            return export_response_for(signal, batch)

        return export_signal

    def _reserve(self, size: int) -> MemoryReservation:
        """Hold what a message of ``size`` bytes, already read, costs until it is stored."""
        if self._memory is None:
            return MemoryReservation.unbounded()
        cost = request_cost("otlp_proto", size, (MESSAGE_COPIES - 1) * size)
        try:
            return self._memory.reserve(cost, f"a request of {size} bytes")
        except Overloaded:
            self._metrics.requests.labels(TRANSPORT, OUTCOME_REFUSED).inc()
            raise
        except RequestTooLarge:
            self._metrics.requests.labels(TRANSPORT, OUTCOME_TOO_LARGE).inc()
            raise
