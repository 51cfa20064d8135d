"""``tracescore drift``: one drift pass over the store, as a table or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from datetime import UTC, datetime

from rich.table import Table

from ingest.cli.terminal import make_console
from ingest.drift.monitor import DriftMonitor, DriftReport
from ingest.store.clickhouse import Store
from schemas.config import ServiceConfig, load_config
from schemas.durations import parse_time
from scoring.drift.detect import Finding
from scoring.route import build_rules, thresholds
from scoring.rule_check import rule_errors


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "drift",
        help="compare recent scores with a baseline and report drift",
        description=(
            "Compare each (scorer, service, agent) series' recent window with its baseline "
            "(Mann-Whitney, Kolmogorov-Smirnov, PSI, pass and failure rates, CUSUM) and record the "
            "findings in score_drift. Settings come from the config's drift section."
        ),
    )
    parser.add_argument("--config", help="YAML or JSON config file (its drift and scoring sections)")
    parser.add_argument("--store", help="chDB data directory or http(s)://clickhouse DSN")
    parser.add_argument("--window", help="the recent window, e.g. 1h (default: drift.window)")
    parser.add_argument("--baseline", help="the baseline before it, e.g. 7d (default: drift.baseline)")
    parser.add_argument(
        "--until", default="now", help="end of the window: an ISO time or an age (default now)"
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument(
        "--notify",
        action="store_true",
        help="post alerts and recoveries to drift.webhooks, as the service does",
    )
    parser.add_argument(
        "--no-record",
        action="store_true",
        help="do not write the findings to score_drift (implies no --notify)",
    )
    parser.set_defaults(func=cmd_drift)


def cmd_drift(args: argparse.Namespace) -> int:
    overrides = {"store": args.store, "drift.window": args.window, "drift.baseline": args.baseline}
    flags = {"store": "--store", "drift.window": "--window", "drift.baseline": "--baseline"}
    config = load_config(args.config, overrides=overrides, flags=flags, checks=rule_errors)
    until = parse_time(args.until, datetime.now(UTC))
    limits = thresholds(build_rules(config.scoring.rules, judge=config.scoring.judge))
    report = asyncio.run(_run(config, limits, until, not args.no_record, args.notify))
    if args.json:
        print(json.dumps([f.as_json() for f in report.findings]))
    else:
        _print(report)
    return 0


async def _run(
    config: ServiceConfig, limits: dict[str, tuple[float, str]], until: datetime, record: bool, notify: bool
) -> DriftReport:
    store = Store.from_config(config)
    await store.start()
    try:
        monitor = DriftMonitor(store, config.drift, limits)
        return await monitor.run_pass(until, record=record, notify=notify and record)
    finally:
        await store.shutdown()


def _number(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else "-"


def _print(report: DriftReport) -> None:
    w = report.windows
    console = make_console()
    if not console.is_terminal:  # piped or logged: wide rather than wrapped
        console = make_console(width=200)
    console.print(
        f"window {w.window_start:%Y-%m-%d %H:%M} – {w.window_end:%Y-%m-%d %H:%M} UTC against baseline "
        f"{w.baseline_start:%Y-%m-%d %H:%M} – {w.baseline_end:%Y-%m-%d %H:%M} UTC"
    )
    if not report.findings:
        console.print("no scores in either period")
        return
    table = Table(show_lines=False)
    for column in ("scorer", "service", "agent", "state", "n", "mean", "shift (sd)", "p", "why"):
        table.add_column(column)
    for f in report.findings:
        table.add_row(
            f.scorer_id,
            f.service_name or "-",
            f.agent_name or "-",
            _state(f),
            f"{f.baseline_n} → {f.window_n}",
            f"{_number(f.baseline_mean, '.3f')} → {_number(f.window_mean, '.3f')}",
            _number(f.effect, "+.2f"),
            _number(f.p_value, ".2g"),
            ", ".join(f.reasons),
        )
    console.print(table)
    drifted = len(report.drifted)
    console.print(f"{drifted} of {len(report.findings)} series drifted ({report.seconds:.2f} s)")


def _state(f: Finding) -> str:
    if f.state == "drifted":
        return (
            f"[red]drifted ({f.severity})[/red]" if f.severity == "critical" else "[yellow]drifted[/yellow]"
        )
    return f.state
