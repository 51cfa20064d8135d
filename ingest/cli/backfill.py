"""``tracescore backfill``: score stored traces with the configured rules (see ``ingest.backfill``)."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ingest.backfill import Backfill, BackfillReport
from ingest.cli.terminal import make_console
from schemas.config import load_config
from schemas.durations import parse_time
from scoring.rule_check import rule_errors


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "backfill",
        help="score stored traces with the configured rules",
        description="Score the stored traces whose spans started in [--since, --until) with the configured "
        "rules, as live scoring would (same filters, sampling, budgets and score ids; source 'backfill'). "
        "Pairs already scored are skipped, so it is safe to run again and resumes where it stopped. With "
        "the embedded store, stop 'tracescore serve' first (chDB allows one process).",
    )
    parser.add_argument("--config", help="YAML or JSON config file (its scoring.rules are applied)")
    parser.add_argument("--store", help="chDB data directory or http(s)://clickhouse DSN")
    parser.add_argument(
        "--since", required=True, help="start: an ISO time (2026-11-20T00:00Z) or an age (24h, 7d)"
    )
    parser.add_argument("--until", default="now", help="end, excluded: an ISO time or an age (default now)")
    parser.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="NAME",
        help="only this rule (its name or scorer); repeatable",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="count the runs and judge calls and estimate the cost; call no judge",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--rate", type=float, help="at most this many scorer runs per second")
    parser.set_defaults(func=cmd_backfill)


def cmd_backfill(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    since, until = parse_time(args.since, now), parse_time(args.until, now)
    if since >= until:
        raise ValueError(
            f"--since ({since:%Y-%m-%d %H:%M:%S}) must be before --until ({until:%Y-%m-%d %H:%M:%S})"
        )
    if args.rate is not None and args.rate <= 0:
        raise ValueError("--rate must be a positive number of scorer runs per second")
    config = load_config(
        args.config, overrides={"store": args.store}, flags={"store": "--store"}, checks=rule_errors
    )
    console = make_console(stderr=True)
    with Progress(
        TextColumn("backfill"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("traces"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=args.json or not console.is_terminal,
    ) as bar:
        task = bar.add_task("traces", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        backfill = Backfill(config, rules=args.rule, rate=args.rate, progress=progress)
        report = asyncio.run(backfill.run(since, until, dry_run=args.dry_run))
    if args.json:
        print(json.dumps(report.as_json(args.dry_run)))
    else:
        _print(report, args.dry_run, since, until)
    return 0


def _print(report: BackfillReport, dry_run: bool, since: datetime, until: datetime) -> None:
    window = f"{since:%Y-%m-%d %H:%M:%S} – {until:%Y-%m-%d %H:%M:%S} UTC"
    print(f"{report.traces} trace(s) with spans starting {window}")
    if report.not_in_ledger:
        print(f"  {report.not_in_ledger} of them were not received by tracescore (no typed copy): not scored")
    if dry_run:
        print(f"would run {report.scorer_runs} scorer run(s) on {report.runs} run(s)")
        print(f"would make about {report.judge_calls} judge call(s), estimated ${report.cost_usd:.4f}")
        return
    print(
        f"ran {report.scorer_runs} scorer run(s) on {report.runs} run(s); judge calls {report.judge_calls}, "
        f"cost ${report.cost_usd:.4f}"
    )
    if report.decisions:
        print(
            "decisions: " + ", ".join(f"{kind} {count}" for kind, count in sorted(report.decisions.items()))
        )
