"""``tracescore demo``: the main job end to end, on an embedded store of its own.

Its runs go to the demo store (``default_store("demo")``, or ``--store``), never into the store of
``tracescore serve`` (``TRACESCORE_STORE`` and the config file do not apply to it).

Starts the service on free loopback ports, sends realistic multi-step agent traces through the
OpenTelemetry SDK and its OTLP/gRPC exporter (GenAI semantic conventions, as the OpenTelemetry
GenAI instrumentations write them), waits until every trace is scored and prints the scores, then
writes the report page of its store (``ingest.reporting``: beside the store, ``<store>-report.html``,
or ``--report``) and prints its path.
A decision without a score shows why; a failed one (a judge that refused or could not be reached)
has its reason printed under the table, and the demo then exits 1 with a hint on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracescore.ingest.cli.demo_traces import SCENARIOS, Scenario, emit_scenario
from tracescore.ingest.cli.judge_flags import add_judge_arguments, judge_config
from tracescore.ingest.cli.store_flags import add_database_argument
from tracescore.ingest.cli.terminal import make_console
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.reporting.report_page import build_report, write_page
from tracescore.ingest.service import Service
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.store_config import DEFAULT_DEMO_STORE_NAME, default_store

DEMO_IDLE_SECONDS = 0.5
MS = 1_000_000  # nanoseconds
SCENARIO_SPACING_MS = 5_000  # the demo stamps its runs this far apart, from when it starts
REPORT_PERIOD = timedelta(hours=24)


# With a judge model, these LLM scorers join the heuristic ones (they read only input and output).
DEMO_LLM_SCORERS = ("answer-relevancy", "toxicity")


def demo_config(
    store: str | None, judge: dict[str, Any] | None = None, database: str | None = None
) -> ServiceConfig:
    llm_rules = [{"scorer": name} for name in DEMO_LLM_SCORERS] if judge else []
    return load_config(
        overrides={
            "store": store or default_store(DEFAULT_DEMO_STORE_NAME),
            "store_database": database,
            "receiver.grpc_port": 0,
            "receiver.http_port": 0,
            "assembly.idle_seconds": DEMO_IDLE_SECONDS,
            "scoring.judge": judge,
            "scoring.rules": [
                {"scorer": "content-similarity"},
                {"scorer": "textual-difference"},
                {
                    "scorer": "tool-call-accuracy-code",
                    "options": {"expected_tool": "get_weather"},
                    "filter": {"agent_name": ["weather_agent"]},
                },
                {
                    "scorer": "tool-call-accuracy-code",
                    "options": {"expected_tool_order": ["search_flights", "search_hotels"]},
                    "filter": {"agent_name": ["travel_agent"]},
                },
                *llm_rules,
            ],
        },
        environ={},
        flags={"store_database": "--database"},
    )


async def _wait_for_decisions(service: Service, expected: dict[str, int], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    pending = dict(expected)
    while pending:
        for trace_id, count in list(pending.items()):
            if len(await service.scores.trace_decisions(trace_id)) >= count:
                del pending[trace_id]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} demo trace(s) not scored within {limit_s:.0f}s")
        await asyncio.sleep(0.2)


Rows = list[tuple[Scenario, str, list[dict[str, Any]], list[dict[str, Any]]]]


def _print_scores(console: Console, rows: Rows) -> int:
    """One row per agent run, one column per scorer: the score, or why there is none; a failed
    decision is marked ``failed [n]`` and its reason ``[n]`` printed under the table. Returns how
    many decisions failed."""
    scorer_ids = sorted({d["scorer_id"] for _, _, _, decisions in rows for d in decisions})
    table = Table(title="tracescore demo: scores of live agent runs")
    table.add_column("agent", no_wrap=True)
    table.add_column("trace", no_wrap=True)
    table.add_column("user input", max_width=30, overflow="ellipsis", no_wrap=True)
    for scorer_id in scorer_ids:
        words = scorer_id.removeprefix("code-").removesuffix("-scorer").split("-")
        header = " ".join(words[:-1]) + "\n" + words[-1] if len(words) > 1 else words[0]
        table.add_column(header, justify="right", no_wrap=True)
    notes: dict[str, int] = {}  # a failure's reason -> its note number (runs failing alike share one)
    failed = 0
    for scenario, trace_id, scores, decisions in rows:
        values = {s["scorer_id"]: f"{s['score']:.3f}" for s in scores}
        cells = []
        for sid in scorer_ids:
            decision = next((d for d in decisions if d["scorer_id"] == sid), None)
            if sid in values or decision is None:
                cells.append(values.get(sid) or "[dim]-[/dim]")
            elif decision["decision"] == "failed":
                failed += 1
                note = notes.setdefault(decision["detail"] or "no reason recorded", len(notes) + 1)
                cells.append(f"[red]failed [{note}][/red]")
            else:
                cells.append(f"[dim]{decision['decision']}[/dim]")
        table.add_row(scenario.agent, trace_id[:8], scenario.user, *cells)
    console.print(table)
    for reason, note in notes.items():
        console.print(f"[red]failed [{note}][/red]: {escape(reason)}", soft_wrap=True)  # whole, to copy
    return failed


def _print_judge_spend(console: Console, scores: list[dict[str, Any]]) -> None:
    judged = [s for s in scores if s["judge_model"]]
    if judged:
        tokens_in = sum(s["input_tokens"] for s in judged)
        tokens_out = sum(s["output_tokens"] for s in judged)
        cost = sum(s["cost_usd"] for s in judged)
        models = ", ".join(sorted({s["judge_model"] for s in judged}))
        console.print(
            f"judge {models}: {len(judged)} scores, {tokens_in} input and {tokens_out} output tokens, "
            f"${cost:.6f}"
        )


def default_report(store: str) -> str:
    """Where the demo writes its report: beside its store, ``<store>-report.html``."""
    return os.path.abspath(store.removeprefix("chdb://").rstrip("/")) + "-report.html"


async def _write_report(service: Service, path: str) -> str:
    """The report of the demo's store, written to ``path``; its absolute path. The period ends after
    the last run the demo stamped (they start up to a few seconds ahead of now)."""
    ahead = timedelta(milliseconds=SCENARIO_SPACING_MS * len(SCENARIOS)) + timedelta(minutes=1)
    until = datetime.now(UTC) + ahead
    page = await build_report(
        service.store,
        service.executor.rule_groups,
        until - REPORT_PERIOD,
        until,
        max_items=service.config.assembly.max_spans_per_trace,
        agreement_config=service.config.agreement,
    )
    return await asyncio.to_thread(write_page, path, page)


async def run_demo(
    store: str | None = None,
    limit_s: float = 60.0,
    judge: dict[str, Any] | None = None,
    database: str | None = None,
    report: str | None = None,
) -> int:
    """Run the demo; with ``judge`` (JudgeConfig fields) LLM-judge scorers score the runs too. The
    report page goes to ``report`` (default: beside the store)."""
    console = make_console()
    if not console.is_terminal:  # piped (make run, CI logs): don't squeeze the table into 80 columns
        console = make_console(width=max(console.width, 110))
    config = demo_config(store, judge, database)
    service = Service(config)
    await service.start()
    try:
        provider = TracerProvider(resource=Resource.create({"service.name": "tracescore-demo"}))
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        tracer = provider.get_tracer("tracescore.demo")
        start = time.time_ns()
        trace_ids = [
            emit_scenario(tracer, s, start + i * SCENARIO_SPACING_MS * MS) for i, s in enumerate(SCENARIOS)
        ]
        console.print(f"sent {len(trace_ids)} agent traces over OTLP/gRPC to 127.0.0.1:{service.grpc.port}")
        await asyncio.to_thread(provider.shutdown)  # flushes the exporter
        await _wait_for_decisions(service, {t: len(service.executor.scorer_ids) for t in trace_ids}, limit_s)
        rows = [
            (s, t, await service.scores.trace_scores(t), await service.scores.trace_decisions(t))
            for s, t in zip(SCENARIOS, trace_ids, strict=True)
        ]
        failed = _print_scores(console, rows)
        _print_judge_spend(console, [score for _, _, scores, _ in rows for score in scores])
        console.print(
            f"spans and scores are in {service.store.description}, database {service.store.database} "
            "(tables otel_traces, scores, score_decisions)"
        )
        page = await _write_report(service, report or default_report(config.store))
        console.print(f"report: {page} (open it in a browser; 'tracescore report' writes one of any store)")
    finally:
        await service.shutdown()
    if failed:
        hint = (
            "check the judge: --judge MODEL, --judge-api-base URL, and its key (--judge-api-key, "
            "TRACESCORE_JUDGE_API_KEY or the provider's variable)"
            if judge
            else "see the reasons above"
        )
        print(f"tracescore demo: {failed} scorer run(s) failed; {hint}", file=sys.stderr)
        return 1
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser("demo", help="send demo agent traces through the service and print their scores")
    demo.add_argument(
        "--store",
        default=None,
        help=f"chDB data directory (default {default_store(DEFAULT_DEMO_STORE_NAME)}: the demo's own, apart "
        "from the store of 'tracescore serve')",
    )
    add_database_argument(demo)
    demo.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the scores")
    demo.add_argument(
        "--report",
        default=None,
        help="where to write the report page (default: beside the store, STORE-report.html)",
    )
    add_judge_arguments(demo, model_flag="--judge")
    demo.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    if not args.verbose:
        logging.getLogger().setLevel(logging.WARNING)  # the table is the output
    config = judge_config(args)
    # With a judge model the LLM scorers join in; none: heuristic scorers only.
    judge = config.judge_settings() if config is not None and config.model else None
    return asyncio.run(
        run_demo(args.store, limit_s=args.timeout, judge=judge, database=args.database, report=args.report)
    )
