"""End to end: ``tracescore serve`` under 16 concurrent OTLP/HTTP clients, against a bare sink.

Each client sends one 3-span agent trace (``invoke_agent`` with a ``chat`` and an ``execute_tool``
child, the OTel GenAI fixture) per request, as an OpenTelemetry SDK with one short-lived run per
export would, and sends again after ``Retry-After`` on a 429. Two numbers:

- acknowledged requests per second, as a ratio to a bare aiohttp OTLP sink that only parses the
  protobuf, measured with the same load in the same run (both in their own process);
- the time from the load's end until every acknowledged trace is scored (each has its decisions, read
  from ``/metrics``), against the goal of ``assembly.idle_seconds`` + 10 s.

Run ``python -m bench.e2e`` for these rows alone; ``python -m bench.e2e sink PORT`` is the baseline.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from bench.report import Metric
from ingest.decode.otlp_json import parse_trace_request
from schemas.config import DEFAULT_IDLE_SECONDS
from schemas.scoring_config import DEFAULT_SCORERS

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "conventions" / "otlp" / "otel_genai_semconv__main.traces.json"
CLIENTS = 16
WARMUP_SECONDS = 2.0
MEASURE_SECONDS = 10.0
SCORED_GOAL_SECONDS = DEFAULT_IDLE_SECONDS + 10.0
SCORED_LIMIT_SECONDS = 300.0
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _template() -> ExportTraceServiceRequest:
    """The fixture's first three spans: the agent, its first chat and its tool call."""
    request = parse_trace_request(FIXTURE.read_bytes()).request
    scope_spans = request.resource_spans[0].scope_spans[0]
    del scope_spans.spans[3:]
    return request


class Traces:
    """Fresh trace and span ids per request, parents following, timestamps of now."""

    def __init__(self) -> None:
        self._template = _template()

    def next(self) -> bytes:
        request = copy.deepcopy(self._template)
        trace_id = os.urandom(16)
        ids: dict[bytes, bytes] = {}
        shift = time.time_ns() - min(
            span.start_time_unix_nano
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        )
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    span.trace_id = trace_id
                    span.span_id = ids.setdefault(span.span_id, os.urandom(8))
                    if span.parent_span_id:
                        span.parent_span_id = ids.setdefault(span.parent_span_id, os.urandom(8))
                    span.start_time_unix_nano += shift
                    span.end_time_unix_nano += shift
        return request.SerializeToString()


async def _load(url: str, seconds: float, traces: Traces) -> int:
    """Requests acknowledged (200) within ``seconds`` by ``CLIENTS`` clients sending back to back."""
    deadline = time.monotonic() + seconds
    acknowledged = 0

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal acknowledged
        while time.monotonic() < deadline:
            async with session.post(url, data=traces.next(), headers=PROTOBUF) as resp:
                await resp.read()
                if resp.status == 200:
                    acknowledged += 1
                elif resp.status in (429, 503):
                    await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                else:
                    raise RuntimeError(f"{url} answered {resp.status}")

    connector = aiohttp.TCPConnector(limit=CLIENTS)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(CLIENTS)))
    return acknowledged


async def _throughput(url: str) -> tuple[float, int]:
    """(acknowledged requests per second after a warm-up, every request acknowledged)."""
    traces = Traces()
    warm = await _load(url, WARMUP_SECONDS, traces)
    measured = await _load(url, MEASURE_SECONDS, traces)
    return measured / MEASURE_SECONDS, warm + measured


async def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
            try:
                async with session.get(f"{base}/healthz") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{base} did not come up")


async def _decisions(base: str) -> float:
    async with aiohttp.ClientSession() as session, session.get(f"{base}/metrics") as resp:
        text = await resp.text()
    pattern = r"^tracescore_scoring_decisions_total\{[^}]*\} (\S+)$"
    return sum(float(value) for value in re.findall(pattern, text, re.M))


def _start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _bare_sink() -> float:
    port = _free_port()
    proc = _start("-m", "bench.e2e", "sink", str(port))
    try:
        await _wait_ready(f"http://127.0.0.1:{port}", proc)
        rate, _ = await _throughput(f"http://127.0.0.1:{port}/v1/traces")
    finally:
        _stop(proc)
    return rate


async def _serve() -> tuple[float, float]:
    """(acknowledged requests/s, seconds from the load's end until every trace is decided)."""
    http_port = _free_port()
    with tempfile.TemporaryDirectory() as data:
        proc = _start(
            "-m",
            "ingest.cli",
            "serve",
            "--store",
            str(Path(data) / "store"),
            "--grpc-port",
            str(_free_port()),
            "--http-port",
            str(http_port),
        )
        base = f"http://127.0.0.1:{http_port}"
        try:
            await _wait_ready(base, proc)
            rate, acknowledged = await _throughput(f"{base}/v1/traces")
            ended = time.monotonic()
            expected = acknowledged * len(DEFAULT_SCORERS)
            while await _decisions(base) < expected:
                if time.monotonic() - ended > SCORED_LIMIT_SECONDS:
                    raise RuntimeError(f"not every trace was scored within {SCORED_LIMIT_SECONDS:.0f} s")
                await asyncio.sleep(0.1)
            scored_after = time.monotonic() - ended
        finally:
            _stop(proc)
    return rate, scored_after


def bench_e2e() -> list[tuple[str, float, float]]:
    """Rows of (name, baseline, ours): requests/s against the bare sink, and time to scored
    against its goal."""
    baseline = asyncio.run(_bare_sink())
    rate, scored_after = asyncio.run(_serve())
    return [
        (f"acknowledged requests/s, {CLIENTS} clients, 3-span traces (vs bare sink)", baseline, rate),
        (
            "seconds from the load's end to all scored (vs goal: idle + 10 s)",
            SCORED_GOAL_SECONDS,
            scored_after,
        ),
    ]


def run_sink(port: int) -> None:
    """The baseline: an aiohttp OTLP/HTTP endpoint that parses each request and answers it."""

    async def export(request: web.Request) -> web.Response:
        ExportTraceServiceRequest.FromString(await request.read())
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application(client_max_size=20 * 1024 * 1024)
    app.router.add_post("/v1/traces", export)
    app.router.add_get("/healthz", health)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def main() -> None:
    for name, baseline, ours in bench_e2e():
        print(json.dumps({"benchmark": name, "baseline": baseline, "ours": ours, "ratio": ours / baseline}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "sink":
        run_sink(int(sys.argv[2]))
    else:
        main()


def metrics() -> list[Metric]:
    rate_baseline = asyncio.run(_bare_sink())
    rate, scored_after = asyncio.run(_serve())
    return [
        Metric(
            "e2e_ingest", rate, "requests/s", rate_baseline, ">= 0.5", baseline_label="bare aiohttp OTLP sink"
        ),
        Metric(
            "e2e_scored_after", scored_after, "s", SCORED_GOAL_SECONDS, "<= 1.0", baseline_label="idle + 10 s"
        ),
    ]
