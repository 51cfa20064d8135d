"""``tracescore score``: one scorer on one AgentRun, or on each run of the list ``tracescore inspect``
prints, the results as JSON.

``--run`` names a file, or ``-`` for standard input. The file holds one run object or a list of them.
Standard output holds one result object for one run object (or with ``--index N``, run N of a list),
and a list of results, in the file's order, for a list. A result is the scorer's result with
``"status": "scored"``; a run the scorer cannot score gives
``{"scorer_id", "run_id", "status": "skipped_empty" | "failed", "score": null, "reason"}`` (the
decision names the service stores), its reason also on standard error as one line.

Exit codes: 0 every run was scored; 1 the scorer failed on a run; 3 a run lacked what the scorer needs
(``needs``: no input, output, context or ground truth) and none failed; 2 nothing was scored: an
unknown scorer or option, or a run file that is not JSON or holds no valid run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ingest.cli.judge_flags import add_judge_arguments, judge_config
from schemas import AgentRun
from scoring.scorer import Scorer, ScorerError

EXIT_SCORED = 0
EXIT_FAILED = 1
EXIT_SKIPPED = 3
STDIN = "-"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "score",
        help="score an AgentRun JSON file (one run, or the list `tracescore inspect` prints) with one scorer",
        description=(
            "Score one run, or each run of a list, with one scorer. Exit code 0: every run scored; "
            "1: the scorer failed on a run; 3: a run lacked what the scorer needs; 2: nothing was scored."
        ),
    )
    parser.add_argument(
        "scorer_id", help="scorer name or id, e.g. textual-difference, or module.path:factory"
    )
    parser.add_argument(
        "--run",
        required=True,
        metavar="FILE|-",
        help="AgentRun JSON file: one run, or the list `tracescore inspect` prints; - reads stdin",
    )
    parser.add_argument(
        "--index", type=int, metavar="N", help="score only run N (from 0) of the list, printed as one object"
    )
    parser.add_argument("--options", help="scorer options as a JSON object")
    add_judge_arguments(parser)
    parser.set_defaults(func=cmd_score)


def read_runs(source: str, data: bytes) -> tuple[list[AgentRun], bool]:
    """The runs of a run file, and whether it held a list. Raises ``ValueError`` with one line naming
    the file (and the run) and what is wrong."""
    try:
        document = json.loads(data)
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise ValueError(f"{source}: not JSON: {exc}") from None
    is_list = isinstance(document, list)
    items = document if is_list else [document]
    if not is_list and not isinstance(document, dict):
        raise ValueError(
            f"{source}: holds a JSON {type(document).__name__}, not a run object or a list of runs"
        )
    if not items:
        raise ValueError(f"{source}: the list holds no run")
    runs = []
    for index, item in enumerate(items):
        where = f"{source}[{index}]" if is_list else source
        try:
            runs.append(AgentRun.model_validate(item))
        except ValidationError as exc:
            raise ValueError(f"{where}: not a valid run: {validation_problems(exc)}") from None
    return runs, is_list


def validation_problems(exc: ValidationError) -> str:
    """Pydantic's errors on one line: ``field.path: message`` for each, ``;``-separated."""
    problems = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"])
        problems.append(f"{location}: {error['msg']}" if location else error["msg"])
    return "; ".join(problems)


def unscored(scorer: Scorer, run: AgentRun, status: str, reason: str) -> dict[str, Any]:
    return {
        "scorer_id": scorer.id,
        "run_id": run.run_id if (run.trace_id or run.span_id) else None,
        "status": status,
        "score": None,
        "reason": reason,
    }


async def score_runs(scorer: Scorer, runs: Sequence[AgentRun], labels: Sequence[str]) -> list[dict[str, Any]]:
    """Each run's result, in order; a skipped or failed run's reason is also written to stderr."""
    from scoring.judge import close_clients
    from scoring.route import missing_detail

    results: list[dict[str, Any]] = []
    try:
        for run, label in zip(runs, labels, strict=True):
            if missing := scorer.missing_needs(run):
                reason = missing_detail(missing, run.content_missing)
                print(f"tracescore: skipped {scorer.id} on {label}: {reason}", file=sys.stderr)
                results.append(unscored(scorer, run, "skipped_empty", reason))
                continue
            try:
                result = await scorer.run(run)
            except ScorerError as exc:
                one_line = " ".join(str(exc).split())
                print(f"tracescore: failed {scorer.id} on {label}: {one_line}", file=sys.stderr)
                results.append(unscored(scorer, run, "failed", str(exc)))
                continue
            results.append({**result.model_dump(mode="json"), "status": "scored"})
    finally:
        await close_clients()
    return results


def exit_code(results: Sequence[dict[str, Any]]) -> int:
    statuses = {result["status"] for result in results}
    if "failed" in statuses:
        return EXIT_FAILED
    if "skipped_empty" in statuses:
        return EXIT_SKIPPED
    return EXIT_SCORED


def cmd_score(args: argparse.Namespace) -> int:
    from scoring.registry import build_scorer

    try:
        options = json.loads(args.options) if args.options else {}
    except ValueError as exc:
        raise ValueError(f"--options is not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise ValueError("--options must be a JSON object")
    judge = judge_config(args)
    scorer = build_scorer(args.scorer_id, options, default_judge=judge.judge_settings() if judge else None)
    source = "stdin" if args.run == STDIN else args.run
    data = sys.stdin.buffer.read() if args.run == STDIN else Path(args.run).read_bytes()
    runs, is_list = read_runs(source, data)
    labels = [f"{source}[{index}]" if is_list else source for index in range(len(runs))]
    if args.index is not None:
        if not 0 <= args.index < len(runs):
            raise ValueError(f"--index {args.index}: {source} holds {len(runs)} run(s), numbered from 0")
        runs, labels, is_list = [runs[args.index]], [labels[args.index]], False
    results = asyncio.run(score_runs(scorer, runs, labels))
    json.dump(results if is_list else results[0], sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return exit_code(results)
