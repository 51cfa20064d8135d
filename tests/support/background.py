"""Work a test runs beside what it measures: a thread that takes a turn every so often."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def every(seconds: float, turn: Callable[[], bool | None], join_s: float = 10) -> Iterator[None]:
    """Calls ``turn`` in a thread, then again ``seconds`` after each call returns, while the block
    runs; a turn that returns False ends it early (the thing it watches is gone)."""
    done = threading.Event()

    def run() -> None:
        while not done.is_set():
            if turn() is False:
                return
            done.wait(seconds)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=join_s)
