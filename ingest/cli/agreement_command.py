"""``tracescore agreement``: one agreement pass (each scorer against the people who label its units),
as a table or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime

from rich.table import Table

from tracescore.ingest.alerting.agreement_monitor import AgreementMonitor, AgreementReport
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
from tracescore.schemas.agreement_results import AgreementFinding
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.durations import parse_time

AGREEMENT_TIMEOUT_SECONDS = 600.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "agreement",
        help="measure how well each scorer agrees with human labels",
        description=(
            "Pair every human label (the annotations table: POST /api/annotations, or OTLP evaluation "
            "results with an annotator) with the score of the same trace, span and scorer id written in "
            "the window, and measure each scorer's agreement: Cohen's kappa for labels, Spearman's rho and "
            "the mean absolute error for values, with confidence intervals and the number of pairs; "
            "compare with the window before, and record the findings in judge_agreement. Settings come "
            "from the config's agreement section. While 'tracescore serve' holds the embedded store, the "
            "pass runs in that service (its HTTP API at --url, with TRACESCORE_AUTH_TOKEN); --notify "
            "then posts to the service's drift webhooks."
        ),
    )
    add_store_arguments(parser, "YAML or JSON config file (its agreement and drift sections)")
    parser.add_argument("--window", help="the window of scores, e.g. 7d (default: agreement.window)")
    parser.add_argument(
        "--until", default="now", help="end of the window: an ISO time or an age (default now)"
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--notify", action="store_true", help="post alerts and recoveries to drift.webhooks")
    parser.add_argument(
        "--no-record", action="store_true", help="do not write judge_agreement (implies no --notify)"
    )
    parser.set_defaults(func=cmd_agreement)


def cmd_agreement(args: argparse.Namespace) -> int:
    config = store_config(args, {"agreement.window": args.window}, {"agreement.window": "--window"})
    until = parse_time(args.until, datetime.now(UTC))
    record, notify = not args.no_record, args.notify and not args.no_record

    async def direct() -> AgreementReport:
        return await _run(config, until, record, notify)

    async def remote(api: ServiceApi) -> AgreementReport:
        body = {"until": until.isoformat(), "record": record, "notify": notify}
        if args.window:
            body["window"] = args.window
        answer = await api.post("/api/agreement", body, timeout_s=AGREEMENT_TIMEOUT_SECONDS)
        return AgreementReport.from_json(answer)

    try:
        report = asyncio.run(through_front_door(config, args, direct, remote))
    except Failed as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return exc.status
    if args.json:
        print(json.dumps([finding.as_json() for finding in report.findings]))
    else:
        _print(report)
    return 0


async def _run(config: ServiceConfig, until: datetime, record: bool, notify: bool) -> AgreementReport:
    async def run(store: Store) -> AgreementReport:
        monitor = AgreementMonitor(store, config.agreement, config.drift)
        return await monitor.run_pass(until, record=record, notify=notify)

    return await on_store(config, run)


def _print(report: AgreementReport) -> None:
    console = make_console()
    if not console.is_terminal:  # piped or logged: wide rather than wrapped
        console = make_console(width=200)
    console.print(
        f"scores written {report.window_start:%Y-%m-%d %H:%M} – {report.window_end:%Y-%m-%d %H:%M} UTC"
    )
    if not report.findings:
        console.print("no labelled unit has a score in the window")
        return
    table = Table(show_lines=False)
    for column in ("scorer", "state", "label pairs", "kappa", "value pairs", "spearman", "mae", "why"):
        table.add_column(column)
    for finding in report.findings:
        row = finding.row
        table.add_row(
            row.scorer_id,
            _state(finding),
            str(row.label_pairs),
            _interval(row.kappa, row.kappa_low, row.kappa_high),
            str(row.score_pairs),
            _interval(row.spearman, row.spearman_low, row.spearman_high),
            _interval(row.mae, row.mae_low, row.mae_high, ".3f"),
            ", ".join(finding.reasons),
        )
    console.print(table)
    alerting = sum(finding.alerting for finding in report.findings)
    console.print(f"{alerting} of {len(report.findings)} scorer(s) below or dropped ({report.seconds:.2f} s)")


def _interval(value: float | None, low: float | None, high: float | None, spec: str = ".2f") -> str:
    if value is None or low is None or high is None:
        return "-"
    return f"{value:{spec}} [{low:{spec}}, {high:{spec}}]"


def _state(finding: AgreementFinding) -> str:
    if finding.state == "below":
        return "[red]below[/red]"
    if finding.state == "dropped":
        return "[yellow]dropped[/yellow]"
    return finding.state
