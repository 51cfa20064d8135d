"""What the ``tracescore`` command writes to the terminal besides its output: its own log lines only,
quiet ends of broken pipes, and the consoles tables are printed with.

- Log lines: tracescore's own loggers (``ingest``, ``scoring``, ``schemas``, ``tracescore``) at INFO
  and up. The libraries' Python loggers (kafka-python, litellm, grpc, aiohttp, OpenTelemetry, Python
  warnings) and the native engines' own lines show only with ``-v``: gRPC's C++ core logs as
  ``GRPC_VERBOSITY`` says, which is read once, when grpc is first imported, so ``quiet_native_logs``
  runs before any command module is; chDB prints its engine's errors straight to the process's stderr,
  which the store catches while it opens the engine (``ingest.store.engine_open``).
- A reader that stops early (``tracescore scorers --json | head``) ends the command quietly, exit 0:
  what it did not read, it did not want.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from tracescore.schemas.secrets import ScrubFilter

OWN_LOGGERS = ("tracescore", "ingest", "scoring", "schemas")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# gRPC's C++ core: its lines (``E1127 ... add_port.cc:83] Failed to add port ...``) only with -v.
NATIVE_QUIET = {"GRPC_VERBOSITY": "NONE"}


def wants_verbose(argv: Sequence[str]) -> bool:
    """Whether the command line asks for ``-v``, before it is parsed (parsing imports the commands)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--verbose" or (arg.startswith("-") and not arg.startswith("--") and "v" in arg[1:]):
            return True
    return False


def quiet_native_logs(verbose: bool) -> None:
    """Silence the native libraries' own logging unless ``verbose`` (a variable the user set wins)."""
    if verbose:
        return
    for variable, value in NATIVE_QUIET.items():
        os.environ.setdefault(variable, value)


class OwnLinesOnly(logging.Filter):
    """Passes tracescore's own records; the libraries' go to ``-v``."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        return any(name == own or name.startswith(own + ".") for own in OWN_LOGGERS)


def setup_logging(verbose: bool) -> None:
    """One handler on stderr, scrubbed of secrets: everything at DEBUG with ``-v``, else tracescore's
    own lines at INFO and up. Where logging is set up already (``main`` called in a process that
    has its handlers), those handlers are kept, and only scrubbed."""
    root = logging.getLogger()
    if root.handlers:
        for handler in root.handlers:
            if not any(isinstance(f, ScrubFilter) for f in handler.filters):
                handler.addFilter(ScrubFilter())
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(ScrubFilter())  # every line, ours or a library's, without secrets
    if not verbose:
        handler.addFilter(OwnLinesOnly())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.captureWarnings(True)  # Python warnings are a library's lines too


class _Console(Console):
    """rich's console, raising ``BrokenPipeError`` when its reader is gone (rich exits with status 1)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def make_console(**options: Any) -> Console:
    """A rich console for the command's output (stdout unless ``stderr=True``)."""
    return _Console(**options)


def end_broken_pipe() -> int:
    """After stdout's reader went away: point stdout at /dev/null, so the interpreter's last flush does
    not fail again, and end quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 0
