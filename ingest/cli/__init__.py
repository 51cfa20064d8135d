"""The ``tracescore`` command: one module per subcommand (serve, demo, inspect, score, eval, backfill,
drift, schema, scorers, scores, runs).

Output discipline: what a command produces (JSON, tables) goes to stdout; logs, progress and errors
to stderr. An error is one line (``tracescore: error: …``), exit code 2 for a usage or configuration
mistake; a traceback only with ``-v``.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from typing import NoReturn

from pydantic import ValidationError

from ingest.cli import backfill, demo, drift, inspect, runs, schema, score, scorers, scores, serve
from ingest.cli import eval as eval_command
from schemas.errors import StoreError
from schemas.secrets import ScrubFilter
from schemas.suggest import did_you_mean
from schemas.version import __version__

log = logging.getLogger("tracescore")

COMMANDS = (serve, demo, inspect, score, scores, runs, eval_command, backfill, drift, schema, scorers)
VERBOSE_HELP = "log at debug level, show tracebacks and litellm's own logging"


class Parser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a mistyped command or option."""

    def error(self, message: str) -> NoReturn:
        choice = re.match(r"argument .*: invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            known = re.findall(r"'?([\w-]+)'?", choice.group(2))
            message += did_you_mean(choice.group(1), known)
        unknown = re.match(r"unrecognized arguments: (\S+)", message)
        if unknown and unknown.group(1).startswith("-"):
            message += did_you_mean(unknown.group(1), _option_strings(self))
        super().error(message)


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option of the parser and of its subcommands."""
    found: list[str] = []
    for action in parser._actions:
        found.extend(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                found.extend(_option_strings(subparser))
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tracescore",
        description="Score live LLM-agent traces.",
        epilog="'tracescore COMMAND --help' shows a command's flags, environment variables and config keys.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument("-V", "--version", action="version", version=f"tracescore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    for subparser in sub.choices.values():  # the global flags work after the command too
        subparser.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
        )
        subparser.add_argument("-V", "--version", action="version", version=f"tracescore {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for handler in logging.getLogger().handlers:  # every line, ours or a library's, without secrets
        handler.addFilter(ScrubFilter())
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValidationError, ValueError, OSError, StoreError) as exc:
        if args.verbose:
            log.exception("%s failed", args.command)
        print(f"tracescore: error: {describe(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, the traceback with -v
        if args.verbose:
            raise
        print(
            f"tracescore: error: {args.command} failed unexpectedly: {type(exc).__name__}: {exc}\n"
            "(run it again with -v for the traceback, and please report it)",
            file=sys.stderr,
        )
        return 1


def describe(exc: BaseException) -> str:
    """An error as users read it: pydantic's errors one per line, without its URLs and input types."""
    if isinstance(exc, ValidationError):
        lines = [
            f"{'.'.join(str(part) for part in error['loc']) or 'value'}: {error['msg']}"
            for error in exc.errors()
        ]
        return f"invalid {exc.title}: " + "; ".join(lines)
    return str(exc)
