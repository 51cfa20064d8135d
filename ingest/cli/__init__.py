"""The ``tracescore`` command: one module per subcommand (serve, demo, inspect, score, eval, backfill,
drift, report, agreement, annotate, schema, scorers, scores, runs).

Output discipline: what a command produces (JSON, tables) goes to stdout; logs, progress and errors
to stderr. An error is one line (``tracescore: error: …``), exit code 2 for a usage or configuration
mistake; a traceback only with ``-v``. The libraries' own log lines show only with ``-v``
(``ingest.cli.terminal``); a reader that stops early ends the command quietly, exit 0.

The command modules are imported when the parser is built, after the native libraries' logging is
set (gRPC reads ``GRPC_VERBOSITY`` once, when it is first imported); only the named command's module
when the command line names one (each pulls in what it runs: the store, the service, litellm), every
module for ``tracescore --help`` or a command that is not there.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys
from types import ModuleType
from typing import NoReturn

from pydantic import ValidationError

from tracescore.ingest.cli.terminal import end_broken_pipe, quiet_native_logs, setup_logging, wants_verbose
from tracescore.schemas.environment import unknown_variables
from tracescore.schemas.errors import StoreError
from tracescore.schemas.suggest import did_you_mean
from tracescore.schemas.version import __version__

log = logging.getLogger("tracescore")

# The subcommands' modules, in the order ``tracescore --help`` lists them.
COMMAND_MODULES = (
    "serve", "demo", "inspect", "score", "scores", "runs", "eval", "backfill", "drift", "report",
    "agreement", "annotate", "schema", "scorers",
)  # fmt: skip
VERBOSE_HELP = "log at debug level; show tracebacks and the libraries' own lines (litellm, Kafka, gRPC, chDB)"


def commands(argv: list[str] | None = None) -> list[ModuleType]:
    """The command modules the parser needs for ``argv``: the one it names, else all of them."""
    named = next((arg for arg in argv or [] if not arg.startswith("-")), None)
    names = [named] if named in COMMAND_MODULES else COMMAND_MODULES
    return [importlib.import_module(f".{name}_command", __package__) for name in names]


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


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv`` (all commands when it is None: what ``--help`` lists)."""
    parser = Parser(
        prog="tracescore",
        description="Score live LLM-agent traces.",
        epilog="'tracescore COMMAND --help' shows a command's flags, environment variables and config keys.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument("-V", "--version", action="version", version=f"tracescore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in commands(argv):
        command.add_parser(sub)
    for subparser in sub.choices.values():  # the global flags work after the command too
        subparser.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
        )
        subparser.add_argument("-V", "--version", action="version", version=f"tracescore {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quiet_native_logs(wants_verbose(argv))
    args = build_parser(argv).parse_args(argv)
    setup_logging(args.verbose)
    for name, guess in unknown_variables(os.environ):
        log.warning(
            "environment variable %s is not one tracescore reads; it is ignored%s",
            name,
            f"; did you mean {guess}?" if guess else " ('tracescore serve --help' lists them)",
        )
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a reader gone is caught, rather than at exit
        return status
    except BrokenPipeError:  # stdout's reader stopped early (| head): what it did not read, it did not want
        return end_broken_pipe()
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
