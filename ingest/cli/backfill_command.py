"""``tracescore backfill``: score stored traces with the configured rules (see ``ingest.replay.backfill``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from tracescore.ingest.cli.store_access import (
    Failed,
    ServiceApi,
    add_store_arguments,
    store_config,
    through_front_door,
)
from tracescore.ingest.cli.terminal import make_console
from tracescore.ingest.replay.backfill import PROGRESS_EVERY_SECONDS, Backfill, BackfillReport
from tracescore.schemas.durations import parse_time
from tracescore.scoring.runtime.rule_check import rule_errors

IDLE_SECONDS = 6 * PROGRESS_EVERY_SECONDS  # the service sends a line at least that often


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "backfill",
        help="score stored traces with the configured rules",
        description="Score the stored traces whose spans started in [--since, --until) with the configured "
        "rules, as live scoring would (same filters, sampling, budgets and score ids; source 'backfill'). "
        "Pairs already scored are skipped, so it is safe to run again and resumes where it stopped. While "
        "'tracescore serve' holds the embedded store (chDB allows one process), the backfill runs in that "
        "service (its HTTP API at --url, with TRACESCORE_AUTH_TOKEN), with the service's scoring rules and "
        "judge: what live scoring applies.",
    )
    add_store_arguments(parser, "YAML or JSON config file (its scoring.rules are applied)")
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
    config = store_config(args, checks=rule_errors)
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

        async def direct() -> BackfillReport:
            backfill = Backfill(config, rules=args.rule, rate=args.rate, progress=progress)
            return await backfill.run(since, until, dry_run=args.dry_run)

        async def remote(api: ServiceApi) -> BackfillReport:
            asked = {"since": since.isoformat(), "until": until.isoformat(), "rules": args.rule}
            body = asked | {"dry_run": args.dry_run, "rate": args.rate}
            return await _in_service(api, body, progress)

        try:
            report = asyncio.run(through_front_door(config, args, direct, remote))
        except Failed as exc:
            bar.stop()
            print(f"tracescore: error: {exc}", file=sys.stderr)
            return exc.status
    if args.json:
        print(json.dumps(report.as_json(args.dry_run)))
    else:
        _print(report, args.dry_run, since, until)
    return 0


async def _in_service(
    api: ServiceApi, body: dict[str, Any], progress: Callable[[int, int], None]
) -> BackfillReport:
    """The backfill run by the service (``POST /api/backfill``), its progress shown as it streams."""
    ended: list[BackfillReport] = []

    def on_line(line: dict[str, Any]) -> None:
        if "progress" in line:
            progress(int(line["progress"]["done"]), int(line["progress"]["total"]))
        elif "report" in line:
            ended.append(BackfillReport(**line["report"]))
        elif "error" in line:
            raise Failed(f"the service at {api.url} answered: {line['error']}")

    await api.post_lines("/api/backfill", body, on_line, idle_s=IDLE_SECONDS)
    if not ended:
        raise Failed(f"the backfill in the service at {api.url} ended without a report")
    return ended[0]


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
