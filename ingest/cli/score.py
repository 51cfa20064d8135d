"""``tracescore score``: one scorer on one AgentRun JSON file, the result as JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ingest.cli.judge_flags import add_judge_arguments, judge_config
from schemas import AgentRun
from scoring.scorer import Scorer, ScorerError, ScorerResult


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("score", help="score one AgentRun JSON file with one scorer")
    parser.add_argument(
        "scorer_id", help="scorer name or id, e.g. textual-difference, or module.path:factory"
    )
    parser.add_argument("--run", required=True, help="AgentRun JSON file")
    parser.add_argument("--options", help="scorer options as a JSON object")
    add_judge_arguments(parser)
    parser.set_defaults(func=cmd_score)


async def _score_once(scorer: Scorer, run: AgentRun) -> ScorerResult:
    from scoring.judge import close_clients

    try:
        return await scorer.run(run)
    finally:
        await close_clients()


def cmd_score(args: argparse.Namespace) -> int:
    from scoring.registry import build_scorer

    options = json.loads(args.options) if args.options else {}
    if not isinstance(options, dict):
        raise ValueError("--options must be a JSON object")
    judge = judge_config(args)
    scorer = build_scorer(args.scorer_id, options, default_judge=judge.judge_settings() if judge else None)
    run = AgentRun.model_validate_json(Path(args.run).read_bytes())
    try:
        result = asyncio.run(_score_once(scorer, run))
    except ScorerError as exc:  # no score: the reason says what failed (a judge's says what to set)
        print(f"tracescore score: failed: {exc}", file=sys.stderr)
        return 1
    json.dump(result.model_dump(mode="json"), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
