"""Run the benchmarks and print each as a ratio to its same-run baseline.

Machines here are noisy, so absolute times mean little; the ratio of our code to the library call it
wraps (measured back to back, best of several repeats) is what to watch between versions.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rapidfuzz.distance import LCSseq
from rich.console import Console
from rich.table import Table

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


def bench_llm_judge() -> tuple[str, float, float]:
    """The toxicity scorer (two judge calls: verdicts, reason) vs two bare ``litellm.acompletion``
    calls to the same local OpenAI-compatible server: the cost of the judge client and pipeline."""
    from bench.judge_server import JudgeServer
    from scoring.judge import Judge, close_clients, litellm_module
    from scoring.prebuilt import create_toxicity_scorer

    server = JudgeServer(
        lambda body: (
            json.dumps({"verdicts": [{"verdict": "no", "reason": "calm"}]})
            if "response_format" in body
            else "The score is 0 because nothing is toxic."
        )
    )
    run = {
        "input": {"input_messages": [{"role": "user", "content": "How do I reset my password?"}]},
        "output": [{"role": "assistant", "content": "Click 'Forgot password' and follow the link."}],
    }
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(server.start())
        judge = Judge("openai/gpt-4o-mini", api_base=server.api_base, api_key="bench")
        scorer = create_toxicity_scorer(judge)
        litellm = litellm_module()
        messages = [{"role": "user", "content": "Is this toxic?"}]

        async def bare_calls() -> None:
            for response_format in ({"type": "json_object"}, None):
                extra = {"response_format": response_format} if response_format else {}
                await litellm.acompletion(
                    model=judge.model, messages=messages, api_base=judge.api_base, api_key="bench", **extra
                )

        baseline = best_of(lambda: loop.run_until_complete(bare_calls()), 20)
        ours = best_of(lambda: loop.run_until_complete(scorer.run(run)), 20)
        loop.run_until_complete(close_clients())
        loop.run_until_complete(server.close())
    finally:
        loop.close()
    return "toxicity scorer, local judge", baseline, ours


def main() -> None:
    table = Table(title="tracescore benchmarks (ratio = ours / baseline, same run, best of 5)")
    for column in ("benchmark", "baseline µs", "ours µs", "ratio"):
        table.add_column(column, justify="right" if column != "benchmark" else "left")
    ratios = []
    for bench in (bench_decode, bench_transform, bench_textual_difference, bench_llm_judge):
        name, baseline, ours = bench()
        ratios.append(ours / baseline)
        table.add_row(name, f"{baseline * 1e6:.1f}", f"{ours * 1e6:.1f}", f"{ours / baseline:.2f}")
    console = Console()
    console.print(table)
    console.print(f"geometric mean ratio {statistics.geometric_mean(ratios):.2f}")

    from bench.e2e import bench_e2e

    e2e = Table(title="end to end: tracescore serve (ratio = ours / baseline, same run)")
    for column in ("benchmark", "baseline", "ours", "ratio"):
        e2e.add_column(column, justify="right" if column != "benchmark" else "left")
    for name, baseline, ours in bench_e2e():
        e2e.add_row(name, f"{baseline:,.1f}", f"{ours:,.1f}", f"{ours / baseline:.3f}")
    console.print(e2e)

    from bench.watch import LIMIT_SECONDS, ROWS, bench_watch, grafana_queries

    watch = Table(
        title=f"watching at scale: {ROWS:,} scores and decisions in chDB (baseline = a FINAL count of a week)"
    )
    for column in ("query", "baseline s", "ours s", "ratio", f"under {LIMIT_SECONDS:g} s"):
        watch.add_column(column, justify="right" if column != "query" else "left")
    for name, baseline, ours in bench_watch(grafana_queries):
        within = "yes" if ours < LIMIT_SECONDS else "[red]NO[/red]"
        watch.add_row(name, f"{baseline:.3f}", f"{ours:.3f}", f"{ours / baseline:.1f}", within)
    console.print(watch)


if __name__ == "__main__":
    main()
