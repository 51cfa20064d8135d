"""Errors decided once, as a type: could the same operation succeed if it were tried again later?

Every boundary that must choose between waiting and moving on reads ``is_retriable``: the receivers
(503 and retry later, or a permanent error), the Kafka receiver (rewind and retry, or dead-letter and
commit), the score writer (keep the rows and retry, or drop them with a count) and the judge (back
off and retry, or fail the scorer at once). The store, the judge, decoding and scorers raise
subclasses of ``TracescoreError`` that carry the decision; an HTTP answer is decided by its status
(``is_retriable_status``).
"""

from __future__ import annotations


class TracescoreError(Exception):
    """Base of tracescore's errors. ``retriable``: trying the same thing later could succeed."""

    retriable: bool = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class StoreError(TracescoreError):
    """The store cannot be opened, or a statement failed (unreachable and overloaded are retriable)."""


class StoreInUse(StoreError):
    """The embedded store's data directory is held by another process (chDB allows one per directory):
    a reader can ask the process that holds it instead."""


def is_retriable(exc: BaseException) -> bool:
    """The one decision: a ``TracescoreError`` says so itself; a connection that failed or timed out
    may work later; anything else (a bug, bad data) fails the same way again."""
    if isinstance(exc, TracescoreError):
        return exc.retriable
    return isinstance(exc, ConnectionError | TimeoutError)


# HTTP answers worth another try: request timeout, conflict, rate limit, and server-side trouble.
RETRIABLE_HTTP_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


def is_retriable_status(status: int) -> bool:
    """The same decision for an HTTP answer (a judge provider's, a webhook's): the server may take the
    same request later; any other refusal (400, 401, 404, 501, ...) is final."""
    return status in RETRIABLE_HTTP_STATUSES


class Overloaded(TracescoreError):
    """A bound is reached (uncommitted spans, traces tracked, queued runs): the caller should slow down
    and send again after ``retry_after_s`` (OTLP: 429 / RESOURCE_EXHAUSTED; Kafka: pause)."""

    retriable = True

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StoreFull(Overloaded, StoreError):
    """The store's disk is below its free-space floor (``store_min_free_bytes``): nothing is written
    until space comes back. An outage, never a loss: OTLP answers 503 / UNAVAILABLE with Retry-After,
    the Kafka consumer pauses, score rows wait in their buffer."""


class ScoringStopped(TracescoreError):
    """Scoring stopped taking work at shutdown: the rows it holds cannot be written (the store refuses
    them: its disk is under its floor, or it is down), so waiting for room would never end. The work
    stays undecided in the store, and the next start scores it (not retriable here: the round is held
    open, so the watermark stays below it)."""
