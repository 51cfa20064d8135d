"""``tracescore score``: one scorer on one AgentRun, or on each run of the list ``tracescore inspect``
prints, the results as JSON.

``--run`` names a file, or ``-`` for standard input, in any shape ``ingest.cli.run_files`` reads
(one AgentRun, the list ``tracescore inspect`` prints, JSON Lines of runs or simple rows). Standard
output holds one result object for one run object (or with ``--index N``, run N of a list), and a list
of results, in the file's order, for a list or JSON Lines. A result is the scorer's result with
``"status": "scored"``; a run the scorer cannot score gives
``{"scorer_id", "run_id", "status": "skipped_empty" | "failed", "score": null, "reason"}`` (the
decision names the service stores), its reason also on standard error as one line.

Exit codes: 0 every run was scored; 1 the scorer failed on a run; 3 a run lacked what the scorer needs
(``needs``: no input, output, context or ground truth) and none failed; 2 nothing was scored: an
unknown scorer or option, or a run file that is not JSON or holds something other than runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from tracescore.ingest.cli.judge_flags import add_judge_arguments, judge_config
from tracescore.ingest.cli.run_files import STDIN, STDIN_NAME, read_run_file
from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer, ScorerError
from tracescore.scoring.runtime.empty_runs import empty_run_reason

EXIT_SCORED = 0
EXIT_FAILED = 1
EXIT_SKIPPED = 3


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
        help="AgentRun JSON file: one run, the list `tracescore inspect` prints, or JSON Lines of runs or "
        "{input, output} rows; - reads stdin",
    )
    parser.add_argument(
        "--index", type=int, metavar="N", help="score only run N (from 0) of the list, printed as one object"
    )
    parser.add_argument("--options", help="scorer options as a JSON object")
    add_judge_arguments(parser)
    parser.set_defaults(func=cmd_score)


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
    from tracescore.scoring.judge import close_clients

    results: list[dict[str, Any]] = []
    try:
        for run, label in zip(runs, labels, strict=True):
            if reason := empty_run_reason(scorer, run):
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
    from tracescore.scoring.prebuilt.registry import build_scorer

    try:
        options = json.loads(args.options) if args.options else {}
    except ValueError as exc:
        raise ValueError(f"--options is not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise ValueError("--options must be a JSON object")
    judge = judge_config(args)
    scorer = build_scorer(args.scorer_id, options, default_judge=judge.judge_settings() if judge else None)
    loaded, is_list = read_run_file(args.run)
    runs = [item.run for item in loaded]
    labels = [item.where for item in loaded]
    if args.index is not None:
        if not 0 <= args.index < len(runs):
            source = STDIN_NAME if args.run == STDIN else args.run
            raise ValueError(f"--index {args.index}: {source} holds {len(runs)} run(s), numbered from 0")
        runs, labels, is_list = [runs[args.index]], [labels[args.index]], False
    results = asyncio.run(score_runs(scorer, runs, labels))
    json.dump(results if is_list else results[0], sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return exit_code(results)
