"""OTLP logs receivers for tests: a real gRPC ``LogsService`` and a real OTLP/HTTP ``/v1/logs`` endpoint
on loopback ports, each keeping what it was sent. Either can refuse its first exports as a collector
does when it is busy (gRPC ``UNAVAILABLE`` with RetryInfo, HTTP 503 with Retry-After, both asking for a
short delay), or hold an export until the test releases it (a slow receiver).

They run on their own threads: the SDK's exporter is synchronous and the test's event loop stays free.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

LOOPBACK = "127.0.0.1"
RETRY_DELAY_SECONDS = 0.05  # what a refusing receiver asks the exporter to wait
HOLD_LIMIT_SECONDS = 10.0  # a held export is answered by then whatever the test does


@dataclass(frozen=True)
class ReceivedEvent:
    """One log record as it arrived, its ids as lowercase hex and its attributes as Python values."""

    event_name: str
    trace_id: str
    span_id: str
    time_unix_nano: int
    severity_number: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str


class LogsInbox:
    """What a receiver was sent, and how it answers: refuse the first ``refuse_first`` exports
    (retryable), or hold each export until ``release()`` when ``hold`` is set."""

    def __init__(self, refuse_first: int = 0, hold: bool = False) -> None:
        self._lock = threading.Lock()
        self._requests: list[ExportLogsServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        self.refuse_first = refuse_first
        self.refused = 0
        self.arrived = threading.Event()  # an export reached the receiver (held or not)
        self._released = threading.Event()
        if not hold:
            self._released.set()

    def take(self, request: ExportLogsServiceRequest, headers: dict[str, str]) -> bool:
        """Keep ``request`` (True) or refuse it as asked (False); blocks while the inbox holds."""
        self.arrived.set()
        self._released.wait(HOLD_LIMIT_SECONDS)
        with self._lock:
            if self.refused < self.refuse_first:
                self.refused += 1
                return False
            self._requests.append(request)
            self.headers.append(headers)
            return True

    def release(self) -> None:
        self._released.set()

    @property
    def requests(self) -> list[ExportLogsServiceRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def events(self) -> list[ReceivedEvent]:
        return [event for request in self.requests for event in flatten(request)]

    async def wait_for(self, count: int, limit_s: float = 10.0) -> list[ReceivedEvent]:
        """The events once at least ``count`` arrived (fails the test after ``limit_s``)."""
        deadline = time.monotonic() + limit_s
        while len(events := self.events) < count:
            assert time.monotonic() < deadline, f"expected {count} events, got {len(events)}: {events}"
            await asyncio.sleep(0.02)
        return events


@dataclass(frozen=True)
class LogsReceiver:
    inbox: LogsInbox
    endpoint: str  # as export.otlp.endpoint takes it


def flatten(request: ExportLogsServiceRequest) -> list[ReceivedEvent]:
    events = []
    for resource_logs in request.resource_logs:
        resource = {kv.key: value(kv.value) for kv in resource_logs.resource.attributes}
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                events.append(
                    ReceivedEvent(
                        event_name=record.event_name,
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        time_unix_nano=record.time_unix_nano,
                        severity_number=record.severity_number,
                        attributes={kv.key: value(kv.value) for kv in record.attributes},
                        resource=resource,
                        scope=scope_logs.scope.name,
                    )
                )
    return events


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(item) for item in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


# --- OTLP/gRPC ------------------------------------------------------------------------------------


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, inbox: LogsInbox) -> None:
        self._inbox = inbox

    def Export(self, request: ExportLogsServiceRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        headers = {key: str(item) for key, item in context.invocation_metadata()}
        if not self._inbox.take(request, headers):
            delay = Duration()
            delay.FromNanoseconds(int(RETRY_DELAY_SECONDS * 1e9))
            retry = RetryInfo(retry_delay=delay).SerializeToString()
            context.set_trailing_metadata((("google.rpc.retryinfo-bin", retry),))
            context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return ExportLogsServiceResponse()


@contextmanager
def grpc_logs_receiver(refuse_first: int = 0, hold: bool = False) -> Iterator[LogsReceiver]:
    inbox = LogsInbox(refuse_first, hold)
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsService(inbox), server)
    port = server.add_insecure_port(f"{LOOPBACK}:0")
    server.start()
    try:
        yield LogsReceiver(inbox, f"http://{LOOPBACK}:{port}")
    finally:
        inbox.release()
        server.stop(grace=None).wait()


# --- OTLP/HTTP ------------------------------------------------------------------------------------


def _handler(inbox: LogsInbox) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/v1/logs":
                self._answer(404, b"")
                return
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            headers = {key.lower(): item for key, item in self.headers.items()}
            if inbox.take(request, headers):
                self._answer(200, ExportLogsServiceResponse().SerializeToString())
            else:
                self._answer(503, b"", {"Retry-After": str(RETRY_DELAY_SECONDS)})

        def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            for key, item in (headers or {}).items():
                self.send_header(key, item)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test's output is not the place for an access log

    return Handler


@contextmanager
def http_logs_receiver(refuse_first: int = 0, hold: bool = False) -> Iterator[LogsReceiver]:
    inbox = LogsInbox(refuse_first, hold)
    server = ThreadingHTTPServer((LOOPBACK, 0), _handler(inbox))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield LogsReceiver(inbox, f"http://{LOOPBACK}:{server.server_address[1]}")
    finally:
        inbox.release()
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def logs_receiver(protocol: str, refuse_first: int = 0, hold: bool = False) -> Iterator[LogsReceiver]:
    """A receiver of ``protocol`` ("grpc" or "http/protobuf", as export.otlp.protocol names them)."""
    make = grpc_logs_receiver if protocol == "grpc" else http_logs_receiver
    with make(refuse_first, hold) as receiver:
        yield receiver


def closed_endpoint() -> str:
    """An http:// endpoint on a loopback port nothing listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    return f"http://{LOOPBACK}:{port}"
