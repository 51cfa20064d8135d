"""``tracescore drift``: one drift pass over the store, as a table or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from tracescore.ingest.alerting.drift_monitor import DriftMonitor, DriftReport
from tracescore.ingest.cli.store_access import (
    Failed,
    ServiceApi,
    add_store_arguments,
    on_store,
    store_config,
    through_front_door,
)
from tracescore.ingest.cli.terminal import make_console
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.durations import parse_time
from tracescore.scoring.drift.detect import Finding, Windows
from tracescore.scoring.runtime.rule_check import rule_errors
from tracescore.scoring.runtime.rule_routing import build_rules, thresholds

DRIFT_TIMEOUT_SECONDS = 600.0  # a pass over a large store, run by the service


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "drift",
        help="compare recent scores with a baseline and report drift",
        description=(
            "Compare each (scorer, service, agent) series' recent window with its baseline "
            "(Mann-Whitney, Kolmogorov-Smirnov, PSI, pass and failure rates, CUSUM), each within its "
            "scorer's current version, and record the findings in score_drift; a change of scorer "
            "version is reported as a finding of its own (kind version_change), never as drift. "
            "Settings come from the config's drift section. While 'tracescore serve' holds the "
            "embedded store, the pass runs in that service (its HTTP API at --url, with "
            "TRACESCORE_AUTH_TOKEN), with the service's drift settings and rules; --notify then posts "
            "to the service's webhooks."
        ),
    )
    add_store_arguments(parser, "YAML or JSON config file (its drift and scoring sections)")
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
    overrides = {"drift.window": args.window, "drift.baseline": args.baseline}
    flags = {"drift.window": "--window", "drift.baseline": "--baseline"}
    config = store_config(args, overrides, flags, checks=rule_errors)
    until = parse_time(args.until, datetime.now(UTC))
    limits = thresholds(build_rules(config.scoring.rules, judge=config.scoring.judge))
    record, notify = not args.no_record, args.notify

    async def direct() -> DriftReport:
        return await _run(config, limits, until, record, notify)

    async def remote(api: ServiceApi) -> DriftReport:
        asked = {"window": args.window, "baseline": args.baseline, "until": until.isoformat()}
        body = {k: v for k, v in asked.items() if v is not None} | {"record": record, "notify": notify}
        answer = await api.post("/api/drift", body, timeout_s=DRIFT_TIMEOUT_SECONDS)
        return _report(answer)

    try:
        report = asyncio.run(through_front_door(config, args, direct, remote))
    except Failed as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return exc.status
    if args.json:
        print(json.dumps([f.as_json() for f in report.findings]))
    else:
        _print(report, config.drift.min_baseline_n)
    return 0


async def _run(
    config: ServiceConfig, limits: dict[str, tuple[float, str]], until: datetime, record: bool, notify: bool
) -> DriftReport:
    async def run(store: Store) -> DriftReport:
        monitor = DriftMonitor(store, config.drift, limits)
        return await monitor.run_pass(until, record=record, notify=notify and record)

    return await on_store(config, run)


def _report(answer: dict[str, Any]) -> DriftReport:
    """The report of a pass the service ran (``POST /api/drift``)."""
    ends = ("baseline_start", "baseline_end", "window_start", "window_end")
    windows = Windows(*(datetime.fromisoformat(answer["windows"][end]) for end in ends))
    findings = [Finding.from_json(finding) for finding in answer["findings"]]
    return DriftReport(windows, findings, seconds=float(answer["seconds"]))


def _number(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else "-"


def _print(report: DriftReport, min_baseline_n: int) -> None:
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
    drift = [f for f in report.findings if f.kind == "drift"]
    table = Table(show_lines=False)
    for column in ("scorer", "service", "agent", "version", "state", "n", "mean", "shift (sd)", "p", "why"):
        table.add_column(column)
    for f in drift:
        table.add_row(
            f.scorer_id,
            f.service_name or "-",
            f.agent_name or "-",
            f.version or "-",
            _state(f),
            f"{f.baseline_n} → {f.window_n}",
            f"{_number(f.baseline_mean, '.3f')} → {_number(f.window_mean, '.3f')}",
            _number(f.effect, "+.2f"),
            _number(f.p_value, ".2g"),
            ", ".join(f.reasons),
        )
    console.print(table)
    drifted = len(report.drifted)
    console.print(f"{drifted} of {len(drift)} series drifted ({report.seconds:.2f} s)")
    _print_version_changes(report, min_baseline_n, console)


def _print_version_changes(report: DriftReport, min_baseline_n: int, console: Console) -> None:
    """Each version change as a sentence, and the series it leaves without a drift verdict yet."""
    changed = {f.key: f for f in report.version_changes}
    for f in changed.values():
        console.print(f.summary, markup=False)
    for f in report.findings:
        if f.kind == "drift" and f.key in changed and f.baseline_n < min_baseline_n:
            console.print(
                f"{f.name}: no drift verdict yet: version {f.version} has {f.baseline_n} baseline scores, "
                f"drift.min_baseline_n is {min_baseline_n}",
                markup=False,
            )


def _state(f: Finding) -> str:
    if f.state == "drifted":
        return (
            f"[red]drifted ({f.severity})[/red]" if f.severity == "critical" else "[yellow]drifted[/yellow]"
        )
    return f.state
