"""The ``tracescore`` command: one module per subcommand (serve, demo, inspect, score, eval, backfill,
drift, schema)."""

from __future__ import annotations

import argparse
import logging
import sys

from pydantic import ValidationError

from ingest.cli import backfill, demo, drift, inspect, schema, score, scores, serve
from ingest.cli import eval as eval_command
from schemas.errors import StoreError
from schemas.secrets import ScrubFilter

log = logging.getLogger("tracescore")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracescore", description="Score live LLM-agent traces.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (serve, demo, inspect, score, eval_command, backfill, drift, schema, scores):
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:  # every line, ours or a library's, without secrets
        handler.addFilter(ScrubFilter())
    try:
        return int(args.func(args) or 0)
    except (ValidationError, ValueError, OSError, StoreError) as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
