"""Opening the embedded chDB engine without its own lines on the terminal.

The engine prints its errors straight to the process's stderr (file descriptor 2) before it raises
them to Python -- ``Code: 76. DB::Exception: Cannot lock file …/status. Another server instance in
same directory is already running.`` -- and no log level of it turns that off. So:

- ``held_by_another`` looks at the lock the engine takes first: an exclusive ``flock`` on the data
  directory's ``status`` file, held as long as the engine runs. A directory held by another process
  is refused without starting the engine at all.
- ``native_stderr_to_log`` catches what is written to descriptor 2 while the engine opens (the lock
  taken between the look and the open, any other refusal): the engine's lines go to the log at DEBUG
  (``tracescore -v`` shows them), anything else written meanwhile is passed on to stderr unchanged.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import tempfile
from collections.abc import Iterator

# How the engine's own lines begin (``Code: 76. DB::Exception: …``, ``<Error> …``).
_ENGINE_LINE_MARKS = ("Code: ", "DB::Exception", "<Error>", "<Warning>", "<Fatal>")


# The data directories this process's engine has opened: it holds their lock itself (for as long as the
# process lives), so a second store object on one of them (replicas in one process) is not refused.
_OPENED_HERE: set[str] = set()


def opened_here(path: str) -> None:
    """Record that this process's engine has the chDB data directory ``path`` open."""
    _OPENED_HERE.add(os.path.realpath(path))


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
def native_stderr_to_log(logger: logging.Logger) -> Iterator[None]:
    """Catch what native code writes to descriptor 2 in the block: the engine's lines to ``logger``
    at DEBUG, the rest back to stderr."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            text = caught.read().decode("utf-8", errors="replace")
            passed = []
            for line in text.splitlines():
                if any(mark in line for mark in _ENGINE_LINE_MARKS):
                    logger.debug("chDB: %s", line.strip())
                elif line.strip():
                    passed.append(line)
            if passed:
                os.write(2, ("\n".join(passed) + "\n").encode())
