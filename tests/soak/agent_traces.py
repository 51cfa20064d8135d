"""The soak's traffic: agent runs written by the real OpenTelemetry SDK (``agent_trace_requests``), sent
again and again under fresh trace and span ids, and the malformed bodies of the malformed burst.

``many_trace_requests`` builds its requests from protobuf objects, which costs milliseconds per trace:
too slow to make traffic as it is sent, for twenty minutes. Here each SDK-written run is kept as its
serialized request, and a fresh copy is the same bytes with its ids replaced (a trace id is 16 bytes
and a span id 8, each stored as is in the protobuf); a request of several runs is their requests'
bytes one after another, which protobuf reads as one request holding all their ``resource_spans``."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.otlp import agent_trace_requests, json_request, json_span

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
BIG_REQUEST_BYTES = 19_500_000  # under receiver.max_request_bytes (20 MiB), as big as a client sends


@dataclass(frozen=True)
class _Shape:
    body: bytes
    trace_id: bytes
    span_ids: tuple[bytes, ...]


@dataclass(frozen=True)
class Body:
    """An export request to send: the trace ids in it, its bytes and their Content-Type."""

    trace_ids: list[str]
    data: bytes
    content_type: str = PROTOBUF


class TraceFactory:
    """Fresh copies of ``shapes`` SDK-written agent runs (the demo's scenarios in turn)."""

    def __init__(self, shapes: int = 40, service: str = "soak") -> None:
        self._shapes: list[_Shape] = []
        for trace_hex, body in agent_trace_requests(shapes, service):
            trace_id = bytes.fromhex(trace_hex)
            request = ExportTraceServiceRequest.FromString(body)
            spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
            span_ids = tuple(span.span_id for span in spans)
            # Each id must stand for itself alone in the bytes, or replacing it would change others.
            assert body.count(trace_id) == len(spans), "a trace id is also elsewhere in its request"
            for span_id in span_ids:
                uses = 1 + sum(1 for span in spans if span.parent_span_id == span_id)
                assert body.count(span_id) == uses, "a span id is also elsewhere in its request"
            self._shapes.append(_Shape(body, trace_id, span_ids))
        self._next = 0

    def trace(self) -> tuple[str, bytes]:
        """One run under fresh ids, as one export request: its trace id and bytes."""
        shape = self._shapes[self._next % len(self._shapes)]
        self._next += 1
        fresh = os.urandom(16)
        body = shape.body.replace(shape.trace_id, fresh)
        for span_id in shape.span_ids:
            body = body.replace(span_id, os.urandom(8))
        return fresh.hex(), body

    def request(self, traces: int) -> Body:
        """``traces`` fresh runs in one export request."""
        made = [self.trace() for _ in range(traces)]
        return Body([trace_id for trace_id, _ in made], b"".join(body for _, body in made))

    def big_request(self, size: int = BIG_REQUEST_BYTES) -> Body:
        """As many fresh runs as fit in ``size`` bytes, in one request."""
        ids: list[str] = []
        parts: list[bytes] = []
        total = 0
        while True:
            trace_id, body = self.trace()
            if total + len(body) > size:
                return Body(ids, b"".join(parts))
            ids.append(trace_id)
            parts.append(body)
            total += len(body)


def malformed_bodies(factory: TraceFactory, count: int, seed: int) -> list[Body]:
    """``count`` requests no decoder can read, in turn: garbage, truncated protobuf, truncated OTLP/JSON.

    Each is malformed whatever the draw: garbage starts with a field tag of wire type 7, which does not
    exist; a request of one run has a single top-level field, whose length runs past any cut; an
    OTLP/JSON document cut before its closing brace leaves an object open. The trace ids they name are
    kept, to check nothing of them was stored."""
    rng = random.Random(f"tracescore-soak-malformed:{seed}")
    bodies: list[Body] = []
    for index in range(count):
        kind = index % 3
        if kind == 0:
            bodies.append(Body([], b"\x0f" + rng.randbytes(rng.randint(16, 4096))))
        elif kind == 1:
            trace_id, body = factory.trace()
            bodies.append(Body([trace_id], body[: rng.randint(1, len(body) - 1)]))
        else:
            trace_id = rng.randbytes(16).hex()
            span = json_span("invoke_agent soak", trace_id=trace_id, span_id=rng.randbytes(8).hex())
            text = json.dumps(json_request(span)).encode()
            bodies.append(Body([trace_id], text[: rng.randint(1, len(text) - 1)], JSON))
    return bodies
