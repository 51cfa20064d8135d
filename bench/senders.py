"""OTLP/HTTP senders for the benchmarks: a fixed number of agent traces, sent by concurrent clients as
protobuf POSTs to ``/v1/traces``, as OpenTelemetry SDKs export them.

Each trace is the OTel GenAI fixture's first three spans (``invoke_agent`` with a ``chat`` and an
``execute_tool`` child) with fresh trace and span ids and timestamps of now -- the traces of
``bench/e2e.py``. A request carries ``per_request`` of them; a client sends its next request when the
last one is answered, and after ``Retry-After`` when it is answered 429 or 503 (the same traces again).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracescore.ingest.decode.otlp_json import parse_trace_request

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "conventions"
    / "otlp"
    / "otel_genai_semconv__main.traces.json"
)
SPANS_PER_TRACE = 3
PROTOBUF = {"Content-Type": "application/x-protobuf"}
RETRY_STATUSES = (429, 503)


class Requests(Protocol):
    """Where a sender takes its next export request from (``Traces``, or another benchmark's)."""

    def next(self) -> bytes: ...


class Traces:
    """Export requests of ``per_request`` traces each, every trace with ids of its own."""

    def __init__(self, per_request: int) -> None:
        request = parse_trace_request(FIXTURE.read_bytes()).request
        scope_spans = request.resource_spans[0].scope_spans[0]
        trace: list[Span] = list(scope_spans.spans[:SPANS_PER_TRACE])
        del scope_spans.spans[:]
        for _ in range(per_request):
            scope_spans.spans.extend(trace)
        self._request = request
        self._spans = list(scope_spans.spans)
        self._ids = [(span.span_id, span.parent_span_id) for span in trace]
        self._start = min(span.start_time_unix_nano for span in trace)
        self._offsets = [
            (span.start_time_unix_nano - self._start, span.end_time_unix_nano - self._start) for span in trace
        ]
        self.per_request = per_request

    def next(self) -> bytes:
        now = time.time_ns()
        for first in range(0, len(self._spans), SPANS_PER_TRACE):
            trace_id = os.urandom(16)
            fresh = {span_id: os.urandom(8) for span_id, _ in self._ids}
            block = self._spans[first : first + SPANS_PER_TRACE]
            for span, (span_id, parent_id), (start, end) in zip(block, self._ids, self._offsets, strict=True):
                span.trace_id = trace_id
                span.span_id = fresh[span_id]
                span.parent_span_id = fresh.get(parent_id, b"")
                span.start_time_unix_nano = now + start
                span.end_time_unix_nano = now + end
        return self._request.SerializeToString()


@dataclass
class Sent:
    traces: int  # acknowledged (200)
    started: float  # loop time of the first request
    seconds: float  # from the first request to the last answer
    retries: int  # answers of 429 or 503, each followed by the same request after Retry-After

    @property
    def traces_per_second(self) -> float:
        return self.traces / self.seconds


async def send(url: str, traces: int, per_request: int, clients: int, source: Requests | None = None) -> Sent:
    """Send ``traces`` traces, ``per_request`` to a request, from ``clients`` concurrent clients; the
    requests are ``source``'s (by default the agent traces above)."""
    assert traces % per_request == 0, "whole requests only"
    requests = traces // per_request
    source = source or Traces(per_request)
    loop = asyncio.get_running_loop()
    taken = acknowledged = retries = 0

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal taken, acknowledged, retries
        while taken < requests:
            taken += 1
            body = source.next()
            while True:
                async with session.post(url, data=body, headers=PROTOBUF) as resp:
                    await resp.read()
                    if resp.status == 200:
                        acknowledged += 1
                        break
                    if resp.status not in RETRY_STATUSES:
                        raise RuntimeError(f"{url} answered {resp.status}")
                    retries += 1
                    await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))

    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = loop.time()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        seconds = loop.time() - started
    return Sent(acknowledged * per_request, started, seconds, retries)


def request_size(per_request: int) -> int:
    """Bytes of one export request of ``per_request`` traces."""
    return len(Traces(per_request).next())
