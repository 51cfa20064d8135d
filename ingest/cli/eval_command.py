"""``tracescore eval``: score a data set with named scorers; progress bar, table, per-item JSONL.

The data file (or ``-``, standard input) is read as ``tracescore score`` reads its runs
(``ingest.cli.run_files``): the list ``tracescore inspect`` prints, JSON Lines of AgentRuns or simple
``{"input", "output", "ground_truth", "context"}`` rows, or one run. A run that lacks what a scorer
reads is not scored by it: the table counts it under ``skipped_empty``, as the service records it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tracescore.ingest.cli.judge_flags import add_judge_arguments, judge_config
from tracescore.ingest.cli.run_files import LoadedRun, read_run_file
from tracescore.ingest.cli.terminal import make_console
from tracescore.scoring.framework.evals import EvalItem, EvalItemResult, RunEvalsResult, run_evals
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.judge import close_clients
from tracescore.scoring.prebuilt.registry import build_scorer

DEFAULT_CONCURRENCY = 4


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``eval`` subcommand on the CLI's subparsers."""
    parser = sub.add_parser(
        "eval",
        help="score a data set (AgentRuns or input/output rows) and print per-scorer statistics",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "Scorer options, either inline or with --options:\n"
            '  --scorer \'tool-call-accuracy-code={"expectedTool": "weather-tool"}\'\n'
            "  --scorer tool-call-accuracy-code "
            '--options \'{"tool-call-accuracy-code": {"expectedTool": "weather-tool"}}\'\n'
            "Option names may be snake_case or Mastra's camelCase."
        ),
    )
    parser.add_argument(
        "--data",
        required=True,
        metavar="FILE|-",
        help="the list `tracescore inspect` prints, or JSON Lines: one AgentRun or "
        '{"input", "output", "ground_truth", "context"} row a line; - reads stdin',
    )
    parser.add_argument(
        "--scorer",
        action="append",
        required=True,
        metavar="NAME[=JSON]",
        help="scorer name or id, optionally =JSON options; repeat for several scorers",
    )
    parser.add_argument(
        "--options",
        metavar="JSON",
        help="a JSON object of options keyed by scorer name or id, as given to --scorer",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        default=DEFAULT_CONCURRENCY,
        help=f"items scored at once (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument("--output", metavar="FILE.jsonl", help="write one JSON result per data line here")
    add_judge_arguments(parser)
    parser.set_defaults(func=cmd_eval)


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object")
    return value


def build_scorers(
    specs: Sequence[str], options_json: str | None, default_judge: Mapping[str, Any] | None = None
) -> list[Scorer]:
    """Scorers from ``NAME`` or ``NAME=JSON`` specs plus an ``--options`` object keyed by name;
    ``default_judge`` (the judge flags' settings) judges the LLM scorers whose options name none."""
    keyed = _json_object(options_json, "--options") if options_json else {}
    names = [spec.partition("=")[0].strip() for spec in specs]
    if unused := sorted(set(keyed) - set(names)):
        raise ValueError(f"--options names scorers not given with --scorer: {', '.join(unused)}")
    scorers = []
    for spec, name in zip(specs, names, strict=True):
        _, has_inline, inline = spec.partition("=")
        options = _json_object(inline, f"options of --scorer {name}") if has_inline else None
        if options is not None and name in keyed:
            raise ValueError(f"scorer {name!r} has options both inline and in --options; give them once")
        chosen = options if options is not None else keyed.get(name, {})
        scorers.append(build_scorer(name, chosen, default_judge=default_judge))
    return scorers


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def results_table(result: RunEvalsResult) -> Table:
    table = Table(title=f"{result.summary.total_items} items in {result.summary.duration_s:.2f}s")
    for column in ("scorer", "mean", "min", "max", "n", "errors", "skipped_empty"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    for summary in result.scorers.values():
        table.add_row(
            summary.scorer_id,
            _fmt(summary.mean),
            _fmt(summary.min),
            _fmt(summary.max),
            str(summary.n),
            str(summary.errors),
            str(summary.skipped_empty),
        )
    return table


def _item_line(item: EvalItemResult, loaded: LoadedRun) -> dict[str, Any]:
    run = item.run
    line: dict[str, Any] = {
        "line": loaded.line,
        "index": item.index,
        "run_id": run.run_id if run is not None and (run.trace_id or run.span_id) else None,
        "scores": {sid: {"score": r.score, "reason": r.reason} for sid, r in item.scores.items()},
        "skipped": item.skipped,
        "errors": item.errors,
        "error": item.error,
    }
    return line if loaded.row_id is None else {"id": loaded.row_id, **line}


async def _evaluate(items: list[EvalItem], scorers: list[Scorer], concurrency: int) -> RunEvalsResult:
    progress = Progress(
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=make_console(stderr=True),
        transient=True,
    )
    try:
        with progress:
            task = progress.add_task("scoring", total=len(items))
            return await run_evals(
                items,
                scorers,
                concurrency=concurrency,
                on_item_complete=lambda _: progress.advance(task),
            )
    finally:
        await close_clients()


def cmd_eval(args: argparse.Namespace, out: TextIO | None = None) -> int:
    if args.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    judge = judge_config(args)
    scorers = build_scorers(args.scorer, args.options, judge.judge_settings() if judge else None)
    loaded, _ = read_run_file(args.data)
    items = [EvalItem(run=entry.run) for entry in loaded]
    result = asyncio.run(_evaluate(items, scorers, args.concurrency))
    if args.output:
        with Path(args.output).open("w", encoding="utf-8") as handle:
            for item in result.items:
                handle.write(json.dumps(_item_line(item, loaded[item.index]), ensure_ascii=False) + "\n")
    make_console(file=out or sys.stdout).print(results_table(result))
    for item in result.items:
        for scorer_id, message in item.errors.items():
            print(f"{loaded[item.index].where}: {scorer_id}: {message}", file=sys.stderr)
    return 0
