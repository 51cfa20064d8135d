"""Opening the embedded chDB engine without its own lines on the terminal.

The engine prints its errors straight to the process's stderr (file descriptor 2) before it raises
them to Python -- ``Code: 76. DB::Exception: Cannot lock file …/status. Another server instance in
same directory is already running.`` -- and no log level of it turns that off. So:

- ``held_by_another`` looks at the lock the engine takes first: an exclusive ``flock`` on the data
  directory's ``status`` file, held as long as the engine runs. A directory held by another process
  is refused without starting the engine at all.
- ``native_stderr_to_log`` catches what is written to descriptor 2 while the engine opens (the lock
  taken between the look and the open, any other refusal): the engine's lines go to the log at DEBUG
  (``tracescore -v`` shows them) and to the caller, so that a refusal can say why in the engine's
  own words (a table whose metadata it cannot read, say); anything else written meanwhile is passed
  on to stderr unchanged.
- ``opened_here`` / ``closed_here`` keep which data directory this process's engine has open: the
  engine takes one at a time, so a second one is refused for that reason, not another process's.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError

from tracescore.schemas.errors import StoreError, StoreInUse

logger = logging.getLogger(__name__)

# How the engine's own lines begin (``Code: 76. DB::Exception: …``, ``<Error> …``).
_ENGINE_LINE_MARKS = ("Code: ", "DB::Exception", "<Error>", "<Warning>", "<Fatal>")


# The data directories this process's engine has opened: it holds their lock itself (for as long as the
# process lives), so a second store object on one of them (replicas in one process) is not refused.
_OPENED_HERE: set[str] = set()
# Store objects with each directory open now (several replicas in one process may share one).
_OPEN_NOW: dict[str, int] = {}


def opened_here(path: str) -> None:
    """Record that this process's engine has the chDB data directory ``path`` open."""
    real = os.path.realpath(path)
    _OPENED_HERE.add(real)
    _OPEN_NOW[real] = _OPEN_NOW.get(real, 0) + 1


def closed_here(path: str) -> None:
    """Record that a store object of this process closed its client of ``path``."""
    real = os.path.realpath(path)
    if _OPEN_NOW.get(real, 0) > 1:
        _OPEN_NOW[real] -= 1
    else:
        _OPEN_NOW.pop(real, None)


def open_elsewhere_here(path: str) -> str | None:
    """Another data directory this process's engine has open now (it takes one at a time), if any."""
    real = os.path.realpath(path)
    return next((other for other in _OPEN_NOW if other != real), None)


def held_by_another(path: str) -> bool:
    """Whether another process has the chDB data directory ``path`` open."""
    if os.path.realpath(path) in _OPENED_HERE:
        return False
    try:
        fd = os.open(os.path.join(path, "status"), os.O_RDONLY)
    except OSError:
        return False  # never opened, or not readable: opening the store says what is wrong
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and with it the lock, if it was taken
    return False


@contextlib.contextmanager
def native_stderr_to_log(logger: logging.Logger) -> Iterator[list[str]]:
    """Catch what native code writes to descriptor 2 in the block: the engine's lines to ``logger``
    at DEBUG and, once the block has ended (also by an exception), in the list it yields; the rest
    back to stderr."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    engine_lines: list[str] = []
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield engine_lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            text = caught.read().decode("utf-8", errors="replace")
            passed = []
            for line in text.splitlines():
                if any(mark in line for mark in _ENGINE_LINE_MARKS):
                    logger.debug("chDB: %s", line.strip())
                    engine_lines.append(line.strip())
                elif line.strip():
                    passed.append(line)
            if passed:
                os.write(2, ("\n".join(passed) + "\n").encode())


def engine_reason(lines: list[str], fallback: str) -> str:
    """The engine's own account of why it did not open: its first exception line naming a cause
    (``Code: 62. DB::Exception: Empty query (in file …/scores.sql): Cannot parse definition …``),
    else ``fallback`` (what the client raised)."""
    for line in lines:
        if "DB::Exception" in line and "Error initializing EmbeddedServer" not in line:
            return line
    return fallback


def open_embedded(dsn: str, options: Mapping[str, str]) -> Client:
    """A client of the embedded engine on ``chdb://path`` (made if missing), or a ``StoreError`` that
    says why not: another process holds the directory (``StoreInUse``), this process's engine has
    another one open, it is not writable, or the engine's own reason."""
    path = dsn[len("chdb://") :]
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the chDB data directory {path}: {exc}") from exc
    in_use = (
        f"cannot open the chDB data directory {path}: it is in use by another process (a running "
        "'tracescore serve'?). chDB allows one process per data directory: stop the other tracescore "
        "or choose another --store"
    )
    if held_by_another(path):  # refused before the engine starts and prints its own refusal
        raise StoreInUse(in_use)
    try:
        with native_stderr_to_log(logger) as engine_lines:
            client = clickhouse_connect.get_client(dsn=dsn, chdb_options=dict(options))
        opened_here(path)
        return client
    except ClickHouseError as exc:
        if not os.access(path, os.W_OK):
            raise StoreError(f"the chDB data directory {path} is not writable: {exc}") from exc
        if held_by_another(path):  # taken between the look and the open
            raise StoreInUse(in_use) from exc
        if (other := open_elsewhere_here(path)) is not None:
            raise StoreInUse(
                f"cannot open the chDB data directory {path}: this process's engine is in use with "
                f"{other}, and chDB opens one data directory per process: close that store first, or "
                "choose another --store"
            ) from exc
        raise StoreError(
            f"the embedded engine cannot open the store at {path} (no other process holds it): "
            f"{engine_reason(engine_lines, str(exc))}"
        ) from exc
