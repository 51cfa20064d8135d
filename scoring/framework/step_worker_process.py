"""A step worker process (started by ``scoring.framework.step_workers``): run each pickled step it is
sent, and time it.

python -m tracescore.scoring.framework.step_worker_process REQUESTS_FD ANSWERS_FD
"""

from __future__ import annotations

import signal
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle

from tracescore.scoring.framework.step_placement import timed_call


def _serve(requests: Connection, answers: Connection) -> None:
    """A worker's loop: run each pickled (fn, argument), answer (ok, (value, seconds) or error, error
    text)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the service decides
    while True:
        try:
            payload = requests.recv_bytes()
        except (EOFError, OSError):
            return  # the service is gone
        try:
            fn, argument = cloudpickle.loads(payload)
            reply: tuple[bool, Any, str] = (True, timed_call(fn, argument), "")
        except Exception as exc:
            reply = (False, exc, "".join(traceback.format_exception_only(exc)).strip())
        try:
            data = cloudpickle.dumps(reply)
        except Exception as exc:  # an answer that cannot travel back
            what = "result" if reply[0] else f"error ({reply[2]})"
            data = cloudpickle.dumps((False, None, f"the step's {what} cannot be pickled: {exc}"))
        try:
            answers.send_bytes(data)
        except (EOFError, OSError):
            return


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
