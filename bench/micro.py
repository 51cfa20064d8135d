"""Micro benchmarks: our code against the library call it wraps, best of several repeats."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rapidfuzz.distance import LCSseq

from bench.report import Metric
from ingest.decode import decode_traces
from ingest.decode.otlp_json import parse_trace_request
from ingest.transform.runs import build_runs
from scoring.prebuilt import create_textual_difference_scorer

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "conventions" / "otlp"
REPEATS = 5


def best_of(fn: Callable[[], object], number: int) -> float:
    """Best wall time per call over REPEATS rounds of ``number`` calls."""
    rounds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return min(rounds)


def bench_decode() -> tuple[str, float, float]:
    """Our otlp_proto decode (parse + validation + Span objects) vs protobuf's parse alone."""
    # A protobuf request holding 100 copies of the fixture trace (400 spans).
    raw = json.loads((FIXTURE / "otel_genai_semconv__main.traces.json").read_text())
    raw["resourceSpans"] = raw["resourceSpans"] * 100
    payload = parse_trace_request(json.dumps(raw).encode()).request.SerializeToString()
    baseline = best_of(lambda: ExportTraceServiceRequest.FromString(payload), 20)
    ours = best_of(lambda: decode_traces("otlp_proto", payload), 20)
    return "decode 400 spans (otlp_proto)", baseline, ours


def bench_transform() -> tuple[str, float, float]:
    """build_runs on the fixture trace vs json.loads of its message attributes (the floor of the work)."""
    spans = decode_traces("otlp_json", (FIXTURE / "otel_genai_semconv__main.traces.json").read_bytes()).spans
    texts = [
        v for s in spans for k, v in s.attributes.items() if k.endswith("messages") and isinstance(v, str)
    ]
    baseline = best_of(lambda: [json.loads(t) for t in texts], 500)
    ours = best_of(lambda: build_runs(spans), 500)
    return "transform one agent trace", baseline, ours


def bench_textual_difference() -> tuple[str, float, float]:
    """The textual-difference scorer vs the rapidfuzz LCS call it is built on (2 kB texts)."""
    a = "The weather in Paris is currently rainy with a temperature of 57°F. " * 30
    b = "Paris weather: rain, 57 degrees Fahrenheit, light wind from the west. " * 30
    run = {
        "input": {"input_messages": [{"role": "user", "content": a}]},
        "output": [{"role": "assistant", "content": b}],
    }
    scorer = create_textual_difference_scorer()
    loop = asyncio.new_event_loop()
    try:
        baseline = best_of(lambda: LCSseq.similarity(a, b), 200)
        ours = best_of(lambda: loop.run_until_complete(scorer.run(run)), 200)
    finally:
        loop.close()
    return "textual-difference, 2 kB texts", baseline, ours


def metrics() -> list[Metric]:
    rows = []
    for bench in (bench_decode, bench_transform, bench_textual_difference):
        name, baseline, ours = bench()
        rows.append(Metric(name, ours * 1e6, "µs", baseline * 1e6, "<= 100", baseline_label="library call"))
    return rows
