"""The process's resident memory against ``memory_limit``: past the bound, intake slows.

Each memory-holding stage has its own bound, derived from ``memory_limit`` unless set (held spans:
``assembly.max_held_bytes``; spans waiting for their commit: the span sink's backlog; rows waiting
for the store: the executor's buffers). Those bounds count what the code holds; the guard watches
what the process really uses (chDB's caches and Python's heap included), read from the kernel at
most every ``SAMPLE_SECONDS``:

- Over ``HIGH`` × the limit, every request is refused (OTLP/HTTP 429 with Retry-After, gRPC
  RESOURCE_EXHAUSTED, the Kafka consumer pauses), the assembler lets go of every held item (they
  are in the store and are read back when due) and freed heap is returned to the system.
- Under ``LOW`` × the limit, or once nothing is in flight, requests are taken again.

Refusing helps only while the pipeline holds work that will finish and free memory; a process over
its limit with nothing in flight (a limit set below what it needs at rest) keeps taking requests and
says so in one warning.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
import time
from collections.abc import Callable

from ingest.metrics import Metrics
from schemas.errors import Overloaded

log = logging.getLogger(__name__)

HIGH = 0.85  # refuse from here
LOW = 0.75  # take requests again below this (or once nothing is in flight)
SAMPLE_SECONDS = 0.05
RELIEVE_EVERY_SECONDS = 1.0
RETRY_AFTER_SECONDS = 1.0

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int | None:
    """The process's resident set size, or None where the kernel does not tell (not Linux)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


def _malloc_trim() -> Callable[[], None]:
    """glibc's malloc_trim: hand freed heap pages back to the system (a no-op elsewhere)."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def release() -> None:
        trim(0)

    return release


class MemoryGuard:
    """Admits requests while the process's memory is under its limit (see the module docstring)."""

    def __init__(
        self,
        limit: int,
        metrics: Metrics,
        *,
        busy: Callable[[], bool],
        relieve: Callable[[], None],
        read: Callable[[], int | None] = resident_bytes,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self._metrics = metrics
        self._busy = busy
        self._relieve = relieve
        self._read = read
        self._clock = clock
        self._trim = _malloc_trim()
        self._sampled_at = -1.0
        self._resident = 0
        self._refusing = False
        self._relieved_at = -RELIEVE_EVERY_SECONDS
        self._warned_idle = False
        metrics.memory_limit.set(limit)
        metrics.resident_bytes.set_function(lambda: self.resident)

    @property
    def resident(self) -> int:
        self._sample()
        return self._resident

    @property
    def refusing(self) -> bool:
        return self._refusing

    def admit(self) -> None:
        """Raise Overloaded when the process is over its memory bound and refusing can help."""
        self._sample()
        if not self._refusing:
            return
        self._metrics.requests_refused.labels("memory").inc()
        raise Overloaded(
            f"tracescore uses {self._resident / 2**20:.0f} MiB of its memory_limit of "
            f"{self.limit / 2**20:.0f} MiB; send again later",
            retry_after_s=RETRY_AFTER_SECONDS,
        )

    def _sample(self) -> None:
        now = self._clock()
        if now - self._sampled_at < SAMPLE_SECONDS:
            return
        self._sampled_at = now
        resident = self._read()
        if resident is None:
            return
        self._resident = resident
        if resident > self.limit * HIGH:
            if now - self._relieved_at >= RELIEVE_EVERY_SECONDS:
                self._relieved_at = now
                self._relieve()
                gc.collect(1)
                self._trim()
            if not self._busy():
                if not self._warned_idle:
                    self._warned_idle = True
                    log.warning(
                        "tracescore uses %.0f MiB with nothing in flight, over 85%% of its memory_limit "
                        "of %.0f MiB: raise memory_limit",
                        resident / 2**20,
                        self.limit / 2**20,
                    )
                self._refusing = False
                return
            if not self._refusing:
                log.warning(
                    "memory at %.0f MiB of %.0f MiB: refusing new spans until it is under %.0f MiB",
                    resident / 2**20,
                    self.limit / 2**20,
                    self.limit * LOW / 2**20,
                )
            self._refusing = True
        elif resident < self.limit * LOW or not self._busy():
            self._refusing = False
