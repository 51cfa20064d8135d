"""End to end: a real ``tracescore serve`` subprocess on an embedded chDB store, under three loads.

Rows (``metrics()``), each against a baseline measured in the same run:

- ``e2e_ingest``: acknowledged requests per second from 16 OTLP/HTTP clients sending one 3-span agent
  trace (``invoke_agent`` with a ``chat`` and an ``execute_tool`` child, the OTel GenAI fixture) per
  request back to back, as a ratio to a bare aiohttp OTLP sink that only parses the protobuf, loaded
  the same way. tracescore answers only once the request's spans are committed to the store.
- ``e2e_scored``: batched senders (4 clients, 100 traces per request). Traces scored per second against
  traces accepted per second over the same window, after a warm-up in which the pipeline fills (the
  first traces wait ``assembly.idle_seconds``, the backlog settles): both are least-squares slopes of
  cumulative counts sampled every ``SAMPLE_SECONDS`` -- accepted from the clients' acknowledgements,
  scored from the service's ``tracescore_scoring_decisions_total`` (one decision per scorer per trace).
  In a steady state the two are equal up to noise (the backlog rises and falls with each release by
  a fraction of a percent of the window's traces); scoring that falls behind shows as a lower ratio
  and a growing backlog. The detail gives the backlog (accepted minus scored) and its growth, the
  service's backlog gauges at the window's ends, and, read from the store, the delay from the commit
  of each window trace's last item to its round being decided.
- ``e2e_latency_p99``: the OpenTelemetry SDK (``BatchSpanProcessor`` with its defaults, OTLP/gRPC
  exporter) in its own process emits ``SDK_TRACES_PER_SECOND`` agent traces per second for
  ``SDK_SECONDS``. Per trace, the time from its root span's end (``otel_traces``: Timestamp + Duration)
  to its scores being in the store: ``trace_done.Decided``, stamped after the insert of the round's
  score and decision rows returned (an upper bound on when they were stored). Read from the store
  after the service stops; the detail splits it at the commit of the trace's last item and at its
  last score's creation.
- ``e2e_rss``: the serve process's peak resident memory (``VmHWM``) under that SDK load, against its
  resident memory when ready, before any load.

``python -m bench.e2e`` prints these rows; ``--profile DIR`` also records each serve process with
py-spy (``DIR/<phase>.txt``, raw collapsed stacks). ``python -m bench.e2e sink PORT`` is the baseline
sink, ``sdk ENDPOINT RATE SECONDS`` the SDK load, ``latency STORE`` the store query.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from bench import procs
from bench.report import Metric
from tracescore.ingest.decode.otlp_json import parse_trace_request
from tracescore.schemas.config import DEFAULT_IDLE_SECONDS
from tracescore.schemas.scoring_config import DEFAULT_SCORERS

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "conventions" / "otlp" / "otel_genai_semconv__main.traces.json"
PROTOBUF = {"Content-Type": "application/x-protobuf"}

# e2e_ingest
CLIENTS = 16
WARMUP_SECONDS = 2.0
MEASURE_SECONDS = 10.0
# e2e_scored
BATCH_CLIENTS = 4
TRACES_PER_REQUEST = 100
SCORED_WARMUP_SECONDS = 10.0  # the first traces wait idle_seconds, then the backlog settles
SCORED_MEASURE_SECONDS = 30.0
SAMPLE_SECONDS = 0.25
# e2e_latency_p99, e2e_rss
# One instrumented application at 600 traces/s (1,800 spans/s): the BatchSpanProcessor's batch of 512
# spans fills in 0.28 s, so what the row shows past that is the service's. A slower application waits
# longer for its batch (up to the processor's 5 s schedule delay), a faster one than this machine can
# score in step would measure a backlog instead (e2e_scored measures that).
SDK_TRACES_PER_SECOND = 600
SDK_PROCESSES = 1
SDK_SECONDS = 20.0
LATENCY_GOAL_SECONDS = DEFAULT_IDLE_SECONDS + 1.0
RSS_GOAL_BYTES = 1 << 30

TEMP_PREFIX = "tracescore-bench-e2e-"  # the stores and the SDK's counts, each run in its own directory
DRAIN_LIMIT_SECONDS = 120.0  # after a load, every accepted trace is decided within this, or the run fails


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _template_spans() -> list[Span]:
    """The fixture's first three spans: the agent, its first chat and its tool call."""
    request = parse_trace_request(FIXTURE.read_bytes()).request
    return list(request.resource_spans[0].scope_spans[0].spans[:3])


class Traces:
    """Export requests of fresh traces: new trace and span ids, parents following, times of now."""

    def __init__(self) -> None:
        request = parse_trace_request(FIXTURE.read_bytes()).request
        self._resource = ResourceSpans()
        self._resource.CopyFrom(request.resource_spans[0])
        del self._resource.scope_spans[0].spans[:]
        self._spans = _template_spans()
        self._start = min(span.start_time_unix_nano for span in self._spans)
        self.sent = 0  # traces put in requests so far

    def request(self, traces: int = 1) -> bytes:
        request = ExportTraceServiceRequest()
        resource = request.resource_spans.add()
        resource.CopyFrom(self._resource)
        out = resource.scope_spans[0].spans
        shift = time.time_ns() - self._start
        for _ in range(traces):
            trace_id = os.urandom(16)
            ids: dict[bytes, bytes] = {}
            for template in self._spans:
                span = out.add()
                span.CopyFrom(template)
                span.trace_id = trace_id
                span.span_id = ids.setdefault(template.span_id, os.urandom(8))
                if template.parent_span_id:
                    span.parent_span_id = ids.setdefault(template.parent_span_id, os.urandom(8))
                span.start_time_unix_nano += shift
                span.end_time_unix_nano += shift
        self.sent += traces
        return request.SerializeToString()


@dataclass
class Acks:
    """Acknowledged traces over time, as the clients saw them."""

    times: list[float] = field(default_factory=list)  # monotonic time of each acknowledgement
    traces: list[int] = field(default_factory=list)  # traces in that request
    refused: int = 0  # answers 429 / 503 (sent again after Retry-After)

    def add(self, traces: int) -> None:
        self.times.append(time.monotonic())
        self.traces.append(traces)

    def between(self, start: float, end: float) -> int:
        return sum(n for t, n in zip(self.times, self.traces, strict=True) if start <= t < end)

    @property
    def total(self) -> int:
        return sum(self.traces)


async def _load(url: str, seconds: float, clients: int, per_request: int, acks: Acks) -> None:
    """``clients`` senders posting requests of ``per_request`` traces back to back for ``seconds``;
    a 429 or 503 is sent again after its ``Retry-After``."""
    deadline = time.monotonic() + seconds
    traces = Traces()

    async def client(session: aiohttp.ClientSession) -> None:
        while time.monotonic() < deadline:
            body = traces.request(per_request)
            while True:
                async with session.post(url, data=body, headers=PROTOBUF) as resp:
                    await resp.read()
                    if resp.status == 200:
                        acks.add(per_request)
                        break
                    if resp.status not in (429, 503):
                        raise RuntimeError(f"{url} answered {resp.status}")
                    acks.refused += 1
                    await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))

    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))


async def _request_rate(url: str) -> tuple[float, Acks]:
    """(acknowledged requests per second after a warm-up, every acknowledgement)."""
    acks = Acks()
    await _load(url, WARMUP_SECONDS, CLIENTS, 1, acks)
    measured_from = len(acks.times)
    started = time.monotonic()
    await _load(url, MEASURE_SECONDS, CLIENTS, 1, acks)
    elapsed = time.monotonic() - started
    return (len(acks.times) - measured_from) / elapsed, acks


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    await procs.wait_http(f"{base}/healthz", proc)


_SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (\S+)$", re.M)


async def _scrape(session: aiohttp.ClientSession, base: str) -> dict[str, float]:
    """The service's /metrics, summed per metric name (``name{labels}`` kept for the backlog)."""
    async with session.get(f"{base}/metrics") as resp:
        text = await resp.text()
    values: dict[str, float] = {}
    for name, labels, value in _SAMPLE.findall(text):
        values[name] = values.get(name, 0.0) + float(value)
        if labels and name in ("tracescore_backlog",):
            values[name + labels] = float(value)
    return values


def _decided_traces(sample: dict[str, float]) -> float:
    return sample.get("tracescore_scoring_decisions_total", 0.0) / len(DEFAULT_SCORERS)


def _memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found


class Serve:
    """``tracescore serve`` on a fresh embedded store, optionally recorded by py-spy."""

    def __init__(self, data: str, profile: Path | None = None, phase: str = "") -> None:
        self.store = str(Path(data) / "store")
        self.http_port, self.grpc_port = _free_port(), _free_port()
        self.base = f"http://127.0.0.1:{self.http_port}"
        self._profile = profile / f"{phase}.txt" if profile is not None else None
        self._spy: subprocess.Popen[bytes] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    async def __aenter__(self) -> Serve:
        self.proc = _start(
            "-m",
            "tracescore.ingest.cli",
            "serve",
            "--store",
            self.store,
            "--grpc-port",
            str(self.grpc_port),
            "--http-port",
            str(self.http_port),
        )
        try:
            await _wait_ready(self.base, self.proc)
        except BaseException:
            _stop(self.proc)
            raise
        return self

    def record(self) -> None:
        """Start py-spy on the serve process (with ``--profile``)."""
        if self._profile is None or self.proc is None:
            return
        spy = Path(sys.executable).parent / "py-spy"
        cmd = [str(spy), "record", "-f", "raw", "-r", "50", "--threads", "--nonblocking"]
        cmd += ["--gil"] if os.environ.get("BENCH_PROFILE_GIL") else []
        cmd += ["-o", str(self._profile)]
        self._spy = subprocess.Popen(
            [*cmd, "--pid", str(self.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    async def wait_decided(self, traces: int) -> float:
        """Seconds until ``traces`` traces have their decisions."""
        started = time.monotonic()
        async with aiohttp.ClientSession() as session:
            while _decided_traces(await _scrape(session, self.base)) < traces:
                if time.monotonic() - started > DRAIN_LIMIT_SECONDS:
                    raise RuntimeError(f"not every trace was decided within {DRAIN_LIMIT_SECONDS:.0f} s")
                await asyncio.sleep(0.1)
        return time.monotonic() - started

    async def __aexit__(self, *exc: object) -> None:
        if self._spy is not None:
            self._spy.send_signal(2)  # SIGINT: py-spy writes what it recorded
            self._spy.wait(60)
        if self.proc is not None:
            _stop(self.proc)


async def _bare_sink() -> float:
    port = _free_port()
    proc = _start("-m", "bench.e2e", "sink", str(port))
    try:
        await _wait_ready(f"http://127.0.0.1:{port}", proc)
        rate, _ = await _request_rate(f"http://127.0.0.1:{port}/v1/traces")
    finally:
        _stop(proc)
    return rate


async def _ingest(profile: Path | None) -> tuple[float, dict[str, Any]]:
    """Acknowledged requests/s of 16 one-trace clients, and when all of them were decided."""
    with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX) as data:
        async with Serve(data, profile, "ingest") as serve:
            serve.record()
            rate, acks = await _request_rate(f"{serve.base}/v1/traces")
            async with aiohttp.ClientSession() as session:
                sample = await _scrape(session, serve.base)
            drained = await serve.wait_decided(acks.total)
    detail = {
        "clients": CLIENTS,
        "traces_per_request": 1,
        "refused_429_503": acks.refused,
        "commits": sample.get("tracescore_store_commits_total", 0.0),
        "seconds_to_all_decided_after_load": round(drained, 2),
    }
    return rate, detail


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (time, count) points."""
    mean_t = statistics.fmean(t for t, _ in points)
    mean_v = statistics.fmean(v for _, v in points)
    num = sum((t - mean_t) * (v - mean_v) for t, v in points)
    den = sum((t - mean_t) ** 2 for t, _ in points)
    return num / den


async def _scored(profile: Path | None) -> tuple[float, float, dict[str, Any]]:
    """(scored traces/s, accepted traces/s, detail) under batched senders, in steady state."""
    with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX) as data:
        async with Serve(data, profile, "scored") as serve:
            acks = Acks()
            samples: list[tuple[float, dict[str, float]]] = []
            seconds = SCORED_WARMUP_SECONDS + SCORED_MEASURE_SECONDS
            started = time.monotonic()

            async def sample() -> None:
                async with aiohttp.ClientSession() as session:
                    while time.monotonic() - started < seconds:
                        samples.append((time.monotonic(), await _scrape(session, serve.base)))
                        await asyncio.sleep(SAMPLE_SECONDS)

            serve.record()
            wall_ns = time.time_ns() - time.monotonic_ns()
            await asyncio.gather(
                _load(f"{serve.base}/v1/traces", seconds, BATCH_CLIENTS, TRACES_PER_REQUEST, acks),
                sample(),
            )
            drained = await serve.wait_decided(acks.total)
            resident = _memory(serve.proc.pid) if serve.proc is not None else {}
        window_ns = [wall_ns + int((started + at) * 1e9) for at in (SCORED_WARMUP_SECONDS, seconds)]
        in_window = await _query_store("scored", serve.store, *map(str, window_ns))
    window = [(t, s) for t, s in samples if t >= started + SCORED_WARMUP_SECONDS]
    accepted_points = [(t, float(acks.between(started, t))) for t, _ in window]
    scored_points = [(t, _decided_traces(s)) for t, s in window]
    accepted, scored = _slope(accepted_points), _slope(scored_points)
    backlog = [(t, a - s) for (t, a), (_, s) in zip(accepted_points, scored_points, strict=True)]
    first, last = window[0][1], window[-1][1]
    gauges = ("tracescore_assembly_traces_pending", 'tracescore_backlog{stage="scoring_queue"}')
    detail = {
        "clients": BATCH_CLIENTS,
        "traces_per_request": TRACES_PER_REQUEST,
        "window_seconds": SCORED_MEASURE_SECONDS,
        "accepted_traces_per_s": round(accepted, 1),
        **in_window,
        "backlog_traces_start_end": [round(backlog[0][1]), round(backlog[-1][1])],
        "backlog_growth_traces_per_s": round(_slope(backlog), 1),
        "traces_pending_start_end": [first.get(gauges[0], 0.0), last.get(gauges[0], 0.0)],
        "scoring_queue_start_end": [first.get(gauges[1], 0.0), last.get(gauges[1], 0.0)],
        "refused_429_503": acks.refused,
        "seconds_to_all_decided_after_load": round(drained, 2),
        "serve_peak_rss_bytes": resident.get("VmHWM"),
    }
    return scored, accepted, detail


async def _sdk_load(profile: Path | None) -> tuple[dict[str, Any], dict[str, int], dict[str, int]]:
    """(latency stats, serve memory at rest, serve memory after the load) under the SDK load."""
    with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX) as data:
        async with Serve(data, profile, "sdk") as serve:
            assert serve.proc is not None
            at_rest = _memory(serve.proc.pid)
            serve.record()
            endpoint = f"127.0.0.1:{serve.grpc_port}"
            rate, seconds = str(SDK_TRACES_PER_SECOND / SDK_PROCESSES), str(SDK_SECONDS)
            outputs = [Path(data) / f"sdk{n}.json" for n in range(SDK_PROCESSES)]
            loads = [_start("-m", "bench.e2e", "sdk", endpoint, rate, seconds, str(out)) for out in outputs]
            for load in loads:
                await asyncio.get_running_loop().run_in_executor(None, load.wait, SDK_SECONDS + 120)
                if load.returncode != 0:
                    raise RuntimeError(f"an SDK load process exited with {load.returncode}")
            counts = [json.loads(out.read_text()) for out in outputs]
            emitted = {key: sum(count[key] for count in counts) for key in ("traces", "spans", "roots")}
            # Every trace whose root span was delivered is decided before the service stops.
            await serve.wait_decided(emitted["roots"])
            under_load = _memory(serve.proc.pid)
        stats = await _query_store("latency", serve.store)
    stats["sdk_traces_made"] = emitted["traces"]
    stats["sdk_spans_dropped"] = 3 * emitted["traces"] - emitted["spans"]
    return stats, at_rest, under_load


async def _query_store(query: str, store: str, *args: str) -> dict[str, Any]:
    """``python -m bench.e2e QUERY STORE ARGS...`` on a stopped service's store, in its own process
    (chDB opens one data directory per process)."""
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "bench.e2e", query, store, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def metrics(profile: Path | None = None) -> list[Metric]:
    rate_baseline = asyncio.run(_bare_sink())
    rate, ingest_detail = asyncio.run(_ingest(profile))
    scored, accepted, scored_detail = asyncio.run(_scored(profile))
    latency, at_rest, under_load = asyncio.run(_sdk_load(profile))
    sdk = {
        "sdk_traces_per_s": SDK_TRACES_PER_SECOND,
        "sdk_processes": SDK_PROCESSES,
        "seconds": SDK_SECONDS,
        "exporter": "OTLP/gRPC, BatchSpanProcessor defaults",
    }
    return [
        Metric(
            "e2e_ingest",
            rate,
            "requests/s",
            rate_baseline,
            ">= 0.25",  # a durable acknowledgement in a few milliseconds; 0.5 the moonshot
            baseline_label="bare aiohttp OTLP sink",
            detail=ingest_detail,
        ),
        Metric(
            "e2e_scored",
            scored,
            "traces/s",
            accepted,
            ">= 1.0",
            baseline_label="traces/s accepted, same window",
            detail=scored_detail,
        ),
        Metric(
            "e2e_latency_p99",
            latency["p99_s"],
            "s",
            DEFAULT_IDLE_SECONDS,
            f"value <= {LATENCY_GOAL_SECONDS:g}",
            baseline_label="assembly.idle_seconds",
            detail={**sdk, **latency},
        ),
        Metric(
            "e2e_rss",
            float(under_load["VmHWM"]),
            "bytes",
            float(at_rest["VmRSS"]),
            f"value <= {RSS_GOAL_BYTES}",
            baseline_label="serve at rest, same run",
            detail=sdk,
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


def _attributes(span: Span) -> dict[str, Any]:
    """A protobuf span's attributes as the SDK takes them."""
    values: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            values[kv.key] = [item.string_value for item in value.array_value.values]
        elif kind is not None:
            values[kv.key] = getattr(value, kind)
    return values


def run_sdk(endpoint: str, rate: float, seconds: float, output: Path) -> None:
    """One SDK process of the load: ``rate`` agent traces per second for ``seconds``, each an
    ``invoke_agent`` span with a ``chat`` and an ``execute_tool`` child (the fixture's attributes),
    through the SDK's ``BatchSpanProcessor`` (its defaults) and OTLP/gRPC exporter. Writes to
    ``output`` the traces made, and the spans and root spans the exporter delivered (the processor
    drops spans when its queue is full)."""
    from collections.abc import Sequence

    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind, set_span_in_context

    class Counting(SpanExporter):
        def __init__(self, inner: SpanExporter) -> None:
            self.inner, self.spans, self.roots = inner, 0, 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            result = self.inner.export(spans)
            if result is SpanExportResult.SUCCESS:
                self.spans += len(spans)
                self.roots += sum(span.parent is None for span in spans)
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()

    agent, chat, tool = (_attributes(span) for span in _template_spans())
    exporter = Counting(OTLPSpanExporter(endpoint=endpoint, insecure=True))
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent-bench"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("opentelemetry.util.genai.handler", "1.1b0")
    made = 0
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        for _ in range(int(elapsed * rate) + 1 - made):
            root = tracer.start_span("invoke_agent weather_agent", attributes=agent)
            context = set_span_in_context(root)
            tracer.start_span("chat gpt-4o", context, SpanKind.CLIENT, attributes=chat).end()
            tracer.start_span("execute_tool get_weather", context, attributes=tool).end()
            root.end()
            made += 1
        time.sleep(0.005)
    provider.shutdown()
    output.write_text(json.dumps({"traces": made, "spans": exporter.spans, "roots": exporter.roots}))


_LATENCY_SQL = """
SELECT quantiles(0.5, 0.9, 0.99)(Total) AS total, max(Total) AS worst,
       quantiles(0.5, 0.99)(ToStored) AS to_stored, quantiles(0.5, 0.99)(ToScored) AS to_scored,
       quantiles(0.5, 0.99)(ToDecided) AS to_decided, count() AS traces, countIf(Decided = 0) AS undecided
FROM (
    SELECT (Decided - RootEnd) / 1e9 AS Total, (Stored - RootEnd) / 1e9 AS ToStored,
           (Scored - Stored) / 1e9 AS ToScored, (Decided - Scored) / 1e9 AS ToDecided, Decided
    FROM (
        SELECT TraceId, toUnixTimestamp64Nano(Timestamp) + Duration AS RootEnd
        FROM otel_traces WHERE ParentSpanId = ''
    ) AS roots
    LEFT JOIN (
        SELECT TraceId, toUnixTimestamp64Nano(max(Arrived)) AS Stored FROM span_ledger GROUP BY TraceId
    ) AS stored USING TraceId
    LEFT JOIN (
        SELECT TraceId, toUnixTimestamp64Nano(max(Timestamp)) AS Scored FROM scores GROUP BY TraceId
    ) AS scored USING TraceId
    LEFT JOIN (
        SELECT TraceId, min(toUnixTimestamp64Nano(Decided)) AS Decided FROM trace_done GROUP BY TraceId
    ) AS done USING TraceId
)
"""


_SCORED_SQL = """
SELECT count() AS traces, quantiles(0.5, 0.99)(if(Decided > 0, (Decided - Stored) / 1e9, inf)) AS latency
FROM (
    SELECT TraceId, toUnixTimestamp64Nano(max(Arrived)) AS Stored FROM span_ledger GROUP BY TraceId
) AS stored
LEFT JOIN (
    SELECT TraceId, min(toUnixTimestamp64Nano(Decided)) AS Decided FROM trace_done GROUP BY TraceId
) AS done USING TraceId
WHERE Stored >= {start} AND Stored < {end}
"""


def query_scored(store: str, start_ns: int, end_ns: int) -> None:
    """The traces whose last item was committed in [start, end): how many, and the delay from that
    commit to their round being decided."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn="chdb://" + os.path.abspath(store))
    found = next(iter(client.query(_SCORED_SQL.format(start=start_ns, end=end_ns)).named_results()))
    client.close()
    delay = [round(value, 3) for value in found["latency"]]
    print(json.dumps({"window_traces_stored": found["traces"], "stored_to_decided_p50_p99_s": delay}))


def query_latency(store: str) -> None:
    """Per trace of the stopped service's store: root span end -> its round marked decided (after its
    score rows were written), split at the commit of its last item; prints the quantiles as JSON."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn="chdb://" + os.path.abspath(store))
    found = next(iter(client.query(_LATENCY_SQL).named_results()))
    scored = client.query("SELECT uniqExact(TraceId) FROM scores").result_rows[0][0]
    client.close()
    p50, p90, p99 = found["total"]
    print(
        json.dumps(
            {
                "p50_s": round(p50, 3),
                "p90_s": round(p90, 3),
                "p99_s": round(p99, 3),
                "max_s": round(found["worst"], 3),
                # root end -> its last item committed (SDK batching, export, commit) -> its last score
                # computed (idle, release, transform, scoring) -> its round marked decided (rows written)
                "to_stored_p50_p99_s": [round(value, 3) for value in found["to_stored"]],
                "stored_to_scored_p50_p99_s": [round(value, 3) for value in found["to_scored"]],
                "scored_to_decided_p50_p99_s": [round(value, 3) for value in found["to_decided"]],
                "traces": found["traces"],
                "undecided": found["undecided"],
                "traces_with_scores": scored,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e")
    parser.add_argument("--profile", type=Path, help="record each serve process with py-spy into DIR")
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    for metric in metrics(args.profile):
        print(json.dumps({"name": metric.name, **metric.as_json()}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "sink":
        run_sink(int(sys.argv[2]))
    elif len(sys.argv) == 6 and sys.argv[1] == "sdk":
        run_sdk(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), Path(sys.argv[5]))
    elif len(sys.argv) == 3 and sys.argv[1] == "latency":
        query_latency(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "scored":
        query_scored(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
