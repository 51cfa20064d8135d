"""The process's memory against ``memory_limit``: a request is admitted only if what it will cost
fits, counted before it is read.

What the process holds is what it allocated, as the kernel counts it: its anonymous resident memory
(``/proc/self/statm``, sampled at most every ``SAMPLE_SECONDS``) -- Python's heap, chDB's working
memory and caches, request buffers. The code of its libraries is resident too, mapped from their files
(chDB's engine is one 555 MB library, of which 100 to 400 MiB stay mapped), but it is not counted: the
kernel drops those pages when memory is short and reads them back, so they cannot make it run out,
and how many stay mapped depends on the kernel and its page cache, not on the work done.
``resident_parts`` reports both.

Each request that reads a body reserves what it will cost at its peak (``ingest.decode.cost``: the body,
the slice of it that exists as Python objects, their rows and their insert) before its body is read,
and holds the reservation until its last slice is stored. The store's working memory -- what chDB
allocates while it inserts and merges, given back within seconds -- is set aside from the start
(``Rest.working``). A request is admitted when

    max(resident, rest + store's working memory) + reserved by the requests in flight + its cost
        <=  ADMIT_SHARE x memory_limit

(counting a request in flight twice once its memory is resident errs on the safe side). Otherwise:

- if it could fit once the requests in flight are done, it is refused for now (``Overloaded``:
  OTLP/HTTP 429 with Retry-After, gRPC RESOURCE_EXHAUSTED with RetryInfo, the Kafka consumer pauses);
  the assembler lets go of its held items (they are in the store and are read back when due) and
  freed heap is returned to the system (at most every ``RELIEVE_EVERY_SECONDS``);
- if it could not fit even with nothing else in flight -- its cost is over ``ADMIT_SHARE`` x
  ``memory_limit`` less the rest size and the store's working memory -- it is refused for good
  (``RequestTooLarge``, naming the sizes and the fix).

Other stages bound what they hold from ``memory_limit`` too (held spans: ``assembly.max_held_bytes``;
spans waiting for their commit: the span sink's backlog; rows waiting for the store: the executor's
buffers), and they are in the resident size the next admission sees. As a last line, over
``HIGH`` x the limit every request is refused until the process is back under ``LOW`` (or nothing is in
flight: then refusing cannot help, and it says so in one warning).

The rest size is measured the same way at every start, so that a limit accepted once is accepted
again after any crash: ``measure_rest`` reads the process before its store opens (the interpreter and
tracescore's code, nothing that depends on what the store holds), and the store opened, its working
memory and the pipeline's are set aside beside it (``Rest.working``). What the store and recovery
then hold -- a store of many parts opens larger, recovery adopts the traces a crash left undecided --
is work the admission above counts as it is resident, not a reason to refuse the start. ``settle``
records the size once started (reported beside the rest size). The service refuses to start when
``memory_limit`` cannot hold the rest size, what is set aside and one request of
``receiver.max_request_bytes`` (``ingest.service``). See docs/operations/memory.md for the numbers.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.schemas.errors import Overloaded, TracescoreError

log = logging.getLogger(__name__)

ADMIT_SHARE = 0.9  # admission fills the limit up to here; the rest absorbs what moves between samples
HIGH = 0.94  # refuse everything from here
LOW = 0.85  # take requests again below this (or once nothing is in flight)
SAMPLE_SECONDS = 0.05
RELIEVE_EVERY_SECONDS = 1.0
RETRY_AFTER_SECONDS = 1.0

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MIB = 2**20


def mib(size: float) -> str:
    return f"{size / MIB:.0f} MiB"


def resident_bytes() -> int | None:
    """The process's anonymous resident memory -- what it allocated: heap, Python objects, chDB's
    working memory, request buffers -- or None where the kernel does not tell (not Linux). Pages
    mapped from files (the code of the libraries) are resident too but not counted: the kernel drops
    and reads them again as memory gets short, and how many stay mapped depends on the kernel and its
    page cache rather than on the work done."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            fields = statm.read().split()
        return (int(fields[1]) - int(fields[2])) * _PAGE_BYTES  # resident less file-backed and shared
    except (OSError, ValueError, IndexError):
        return None


def resident_parts() -> dict[str, int]:
    """The resident set by kind, as the kernel counts it: anonymous (heap, Python objects, chDB's
    working memory), file-backed (code and data of the libraries: the kernel can drop these pages and
    read them again) and shared memory. Empty where the kernel does not tell."""
    names = {"RssAnon:": "anonymous_bytes", "RssFile:": "file_backed_bytes", "RssShmem:": "shared_bytes"}
    parts: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                fields = line.split()
                if fields and fields[0] in names:
                    parts[names[fields[0]]] = int(fields[1]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return parts


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


class RequestTooLarge(TracescoreError):
    """A request costs more memory than the service can give it under ``memory_limit`` even with
    nothing else in flight: sending it again cannot help (OTLP/HTTP 413)."""

    retriable = False


@dataclass(frozen=True)
class Rest:
    """What the service needs before any request: what it holds before its store opens, and what is
    set aside beside it."""

    resident: int  # bytes, measured before the store opened
    working: int  # bytes set aside: the store opened and storing spans, the pipeline (not requests)
    started: int = 0  # bytes resident once started (the store open, recovery's traces adopted)

    @property
    def floor(self) -> int:
        return self.resident + self.working


class MemoryReservation:
    """Memory held for one request from before its body is read until its last slice is stored."""

    def __init__(self, guard: MemoryGuard | None, size: int, what: str) -> None:
        self._guard = guard
        self.size = size
        self.what = what
        self.compressed = 0  # bytes of its body as sent, when that was compressed

    @classmethod
    def unbounded(cls) -> MemoryReservation:
        """A reservation that holds nothing and always grows (no memory guard)."""
        return cls(None, 0, "a request")

    def resize(self, size: int) -> None:
        """Hold ``size`` bytes now (a chunked or compressed body grows as it arrives); raises as
        ``MemoryGuard.reserve`` when the growth does not fit, keeping what was held."""
        if self._guard is None:
            self.size = size
        else:
            self._guard._resize(self, size)

    def release(self) -> None:
        if self._guard is not None:
            self._guard._release(self)

    def __enter__(self) -> MemoryReservation:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class MemoryGuard:
    """Admits requests whose cost fits under the memory limit (see the module docstring)."""

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
        self._relieve_pipeline = relieve
        self._read = read
        self._clock = clock
        self._trim = _malloc_trim()
        self._lock = threading.RLock()  # the Kafka consumer reserves from its own thread
        self._loop: asyncio.AbstractEventLoop | None = None  # where relieving runs (the pipeline's)
        self._sampled_at = -1.0
        self._resident = 0
        self._reserved = 0
        self._reservations: set[MemoryReservation] = set()
        self._refusing = False
        self._relieved_at = -RELIEVE_EVERY_SECONDS
        self._warned_idle = False
        self._base: int | None = None  # resident before the store opened (measure_base)
        self.rest: Rest | None = None
        metrics.memory_limit.set(limit)
        metrics.resident_bytes.set_function(lambda: self.resident)
        metrics.memory_reserved.set_function(lambda: self._reserved)

    @property
    def resident(self) -> int:
        with self._lock:
            self._sample()
            return self._resident

    @property
    def reserved(self) -> int:
        return self._reserved

    @property
    def refusing(self) -> bool:
        return self._refusing

    @property
    def admittable(self) -> int:
        """The largest cost a request may have: what the limit leaves beside the rest size and the
        store's working memory (before ``settle``: the limit's admission share)."""
        floor = self.rest.floor if self.rest is not None else 0
        return max(0, int(self.limit * ADMIT_SHARE) - floor)

    def measure_rest(self, working: int) -> Rest:
        """Measure the rest size -- what the process holds before its store opens, the same at every
        start whatever the store holds -- with ``working`` set aside beside it."""
        self.rest = Rest(self._measure(), working)
        self._metrics.memory_rest.set(self.rest.resident)
        return self.rest

    async def settle(self) -> Rest:
        """The service has started and holds nothing for a request yet: record what is resident now
        (the store open, recovery's traces adopted) beside the rest size (``measure_rest``)."""
        if self.rest is None:
            raise RuntimeError("MemoryGuard.settle before measure_rest")
        self._loop = asyncio.get_running_loop()
        self.rest = replace(self.rest, started=self._measure())
        return self.rest

    def _measure(self) -> int:
        gc.collect()
        self._trim()
        with self._lock:
            self._sampled_at = -1.0
            self._sample()
            return self._resident

    def admit(self) -> None:
        """Raise Overloaded while the process is over its high mark and refusing can help (for work
        that reserves nothing of its own)."""
        self.reserve(0, "a batch").release()

    def reserve(self, cost: int, what: str) -> MemoryReservation:
        """Hold ``cost`` bytes for a request (``what`` names it in messages). Raises Overloaded when it
        does not fit now but could once the requests in flight are done, RequestTooLarge when it
        could never fit under the limit."""
        reservation = MemoryReservation(self, 0, what)
        self._resize(reservation, cost)
        return reservation

    def _resize(self, reservation: MemoryReservation, size: int) -> None:
        with self._lock:
            growth = size - reservation.size
            self._admit(max(0, growth), size, reservation)
            self._reserved += growth
            reservation.size = size
            if size > 0:
                self._reservations.add(reservation)
            else:
                self._reservations.discard(reservation)

    def _release(self, reservation: MemoryReservation) -> None:
        with self._lock:
            if reservation in self._reservations:
                self._reservations.discard(reservation)
                self._reserved -= reservation.size
                reservation.size = 0

    def _admit(self, growth: int, size: int, reservation: MemoryReservation) -> None:
        """Return if ``growth`` more bytes fit for ``reservation`` (now ``size``); raise otherwise."""
        admittable = self.admittable
        if size > admittable:
            self._metrics.requests_refused.labels("memory_too_large").inc()
            raise RequestTooLarge(
                f"{reservation.what} needs {mib(size)} of memory to be stored, more than the "
                f"{mib(admittable)} that memory_limit {mib(self.limit)} leaves beside what tracescore "
                f"needs without requests ({mib(self.rest.floor if self.rest else 0)}): raise "
                "memory_limit, or send smaller batches (the OpenTelemetry Collector's batch processor: "
                "send_batch_max_size)"
            )
        self._sample()
        # Refusing helps only while something in flight will finish and free memory.
        waiting_helps = self._reserved - reservation.size > 0 or self._busy()
        resident = self._resident
        if self._refusing and (resident < self.limit * LOW or not waiting_helps):
            self._refusing = False
        elif not self._refusing and resident > self.limit * HIGH and waiting_helps:
            self._refusing = True
            log.warning(
                "memory at %s of %s: refusing new spans until it is under %s",
                mib(resident),
                mib(self.limit),
                mib(self.limit * LOW),
            )
        if self._refusing:
            raise self._refuse_for_now(size, reservation.what)
        floor = self.rest.floor if self.rest is not None else 0
        if growth == 0 or max(resident, floor) + self._reserved + growth <= self.limit * ADMIT_SHARE:
            return
        self._relieve_soon()
        if waiting_helps:
            raise self._refuse_for_now(size, reservation.what)
        if not self._warned_idle:
            # Nothing is in flight, yet the resident size leaves no room: what it holds is not freed
            # by waiting (freed heap the allocator keeps, caches), so refusing cannot help.
            self._warned_idle = True
            log.warning(
                "tracescore holds %s with nothing in flight, of its memory_limit of %s; taking %s (%s) "
                "alone. If this persists, raise memory_limit",
                mib(resident),
                mib(self.limit),
                reservation.what,
                mib(size),
            )

    def _refuse_for_now(self, size: int, what: str) -> Overloaded:
        self._metrics.requests_refused.labels("memory").inc()
        return Overloaded(
            f"tracescore holds {mib(self._resident)} and has reserved {mib(self._reserved)} for requests "
            f"in flight, of its memory_limit of {mib(self.limit)}; {what} needs {mib(size)}: send it "
            "again later",
            retry_after_s=RETRY_AFTER_SECONDS,
        )

    def _relieve_soon(self) -> None:
        """Relieve on the event loop (the assembler lives there), at most every RELIEVE_EVERY_SECONDS."""
        now = self._clock()
        if now - self._relieved_at < RELIEVE_EVERY_SECONDS:
            return
        self._relieved_at = now
        if self._loop is None:
            self.relieve()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.relieve)

    def relieve(self) -> None:
        """Let go of what can be let go: held items (they are stored) and freed heap."""
        self._relieve_pipeline()
        gc.collect(1)
        self._trim()
        with self._lock:
            self._sampled_at = -1.0
            self._sample()

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
            self._relieve_soon()
