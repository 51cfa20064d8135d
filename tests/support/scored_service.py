"""A running ``tracescore serve`` holding scores and decisions of known traces, for the tests of
``GET /api/scores``, ``GET /api/decisions`` and ``tracescore scores``.

Traces, each written by the real OpenTelemetry SDK and sent over OTLP/gRPC with the bearer token:

- ``shop``: a weather_agent run of service shop-api, scored by two rules (textual-difference and the
  content-similarity rule named ``similarity``); it is decided before ``between`` (this process's
  clock), every other trace is sent after it;
- ``travel``: a travel_agent run of service travel-api, scored by the same two rules;
- ``lab``: a weather_agent run of service lab: the overconfident scorer fails on it, the two scoring
  rules filter it out, and no trace is ever sampled for ``never-sampled``: decisions, no score;
- ``plain``: one span that is neither an agent run nor a model call: nothing to score;
- ``waiting``: a model-call span whose parent never arrives: stored, waiting for max_wait (an hour).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tests.support.serve import free_port, start_serve, stop, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario

TOKEN = "results-test-token"
OVERCONFIDENT = "tests.scoring.custom_scorers:create_overconfident_scorer"
RULES: list[dict[str, Any]] = [
    {"scorer": "textual-difference", "filter": {"service_name": ["shop-api", "travel-api"]}},
    {
        "scorer": "content-similarity",
        "name": "similarity",
        "filter": {"service_name": ["shop-api", "travel-api"]},
    },
    {"use": OVERCONFIDENT, "filter": {"service_name": ["lab"]}},
    {"scorer": "textual-difference", "name": "never-sampled", "sample_rate": 0},
]
RULE_COUNT = len(RULES)
WEATHER, TRAVEL = SCENARIOS[0], SCENARIOS[2]


@dataclass
class Answer:
    status: int
    body: Any


@dataclass
class ScoredService:
    proc: subprocess.Popen[str]
    base: str
    store: Path
    traces: dict[str, str]  # name (see the module docstring) -> trace id
    spans: dict[str, int]  # name -> how many spans the SDK sent of it
    between: datetime  # after every row of "shop", before every row of the other traces

    def get(self, path: str, params: dict[str, str] | list[tuple[str, str]] | None = None) -> Answer:
        """A GET with the bearer token; the status and the JSON body, whatever the status."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        request = urllib.request.Request(
            self.base + path + query, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return Answer(resp.status, json.loads(resp.read()))
        except urllib.error.HTTPError as exc:
            with exc:
                return Answer(exc.code, json.loads(exc.read()))


def _provider(grpc_port: int, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{grpc_port}", insecure=True, headers={"authorization": f"Bearer {TOKEN}"}
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _send_run(grpc_port: int, service: str, scenario: Any) -> tuple[str, int]:
    """One agent run; its trace id and how many spans it has."""
    provider = _provider(grpc_port, service)
    sent = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(sent))
    trace_id = emit_scenario(provider.get_tracer("results-tests"), scenario, time.time_ns())
    provider.shutdown()
    return trace_id, len(sent.get_finished_spans())


def _send_plain(grpc_port: int) -> str:
    provider = _provider(grpc_port, "shop-api")
    span = provider.get_tracer("results-tests").start_span("GET /health")
    span.end()
    provider.shutdown()
    return format(span.get_span_context().trace_id, "032x")


def _send_orphan(grpc_port: int) -> str:
    """A model call whose parent (the trace's root) is never sent."""
    provider = _provider(grpc_port, "shop-api")
    parent = SpanContext(
        trace_id=random.getrandbits(128) | 1,
        span_id=random.getrandbits(64) | 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    context = trace.set_span_in_context(NonRecordingSpan(parent))
    span = provider.get_tracer("results-tests").start_span(
        "chat gpt-4o", context=context, attributes={"gen_ai.operation.name": "chat"}
    )
    span.end()
    provider.shutdown()
    return format(parent.trace_id, "032x")


def wait_decided(service: ScoredService, trace_id: str, count: int = RULE_COUNT, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while True:
        answer = service.get("/api/decisions", {"trace_id": trace_id})
        if answer.status == 200 and len(answer.body) >= count:
            return
        assert time.monotonic() < deadline, f"{trace_id} not decided: {answer}"
        time.sleep(0.2)


@contextmanager
def scored_service(tmp_path: Path) -> Iterator[ScoredService]:
    """The service with the traces of the module docstring, each decided (but ``waiting``)."""
    config = tmp_path / "tracescore.yaml"
    config.write_text(yaml.safe_dump({"scoring": {"rules": RULES}, "receiver": {"auth_token": TOKEN}}))
    store = tmp_path / "data"
    grpc_port = free_port()
    proc, http_port = start_serve(
        store, "--config", str(config), "--idle", "0.2", "--max-wait", "3600", grpc_port=grpc_port
    )
    try:
        base = wait_healthy(proc, http_port)
        service = ScoredService(proc, base, store, {}, {}, datetime.now(UTC))
        service.traces["shop"], service.spans["shop"] = _send_run(grpc_port, "shop-api", WEATHER)
        wait_decided(service, service.traces["shop"])
        time.sleep(0.01)
        service.between = datetime.now(UTC)
        time.sleep(0.01)
        service.traces["travel"], service.spans["travel"] = _send_run(grpc_port, "travel-api", TRAVEL)
        service.traces["lab"], service.spans["lab"] = _send_run(grpc_port, "lab", WEATHER)
        service.traces["plain"] = _send_plain(grpc_port)
        service.traces["waiting"] = _send_orphan(grpc_port)
        for name in ("travel", "lab"):
            wait_decided(service, service.traces[name])
        yield service
    finally:
        stop(proc)
