"""The span sink: group commit of every accepted batch into ``span_ledger``, ``otel_logs`` and
``otel_traces`` (and ``annotations``, for the people's labels it carries), then the batch is handed on.

Concurrent export requests (and Kafka batches) wait together: while one insert runs, the batches
that arrive meanwhile gather into the next, so the store sees few large inserts (ClickHouse's
advice) however many clients send. The clients the last commit acknowledged are about to send
again: until their batches join those that arrived while it ran, the next commit waits a moment
for them (``MAX_GATHER_SECONDS``, at most a quarter of the last commit's time), as PostgreSQL's
``commit_delay`` does. Otherwise clients that send back to back split into groups that take
turns, each commit carrying only part of them.

Each commit writes one part in every table it fills (``span_ledger``, ``otel_traces`` and the view
beside it), and each part is a directory of a dozen files that the engine merges away and keeps a
while after (``ingest.store.free_space.MERGED_PARTS_SETTINGS``). One commit per request -- 60 of
them a second from clients sending one trace each -- grew the embedded store by 5 MB a second with
dead parts. So a small commit starts no sooner than ``COMMIT_INTERVAL_SECONDS`` after the last one
began (the OpenTelemetry Collector's batch processor and ClickHouse's asynchronous inserts wait
200 ms the same way); one of at least ``FULL_COMMIT_ITEMS`` items or ``FULL_COMMIT_BYTES`` (a slice of
a large request, a Kafka poll) starts at once. A batch is acknowledged -- its ``consume_spans``
returns -- only once the insert that holds it has committed, and it carries the commit's time
(``arrived_unix_nano``, the ledger's ``Arrived``). When too many items wait for a commit, new batches
are refused with ``Overloaded`` (the client slows down) instead of growing memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.annotation_rows import ANNOTATION_COLUMNS, annotation_row, batch_annotations
from tracescore.ingest.store.clickhouse import Store, TableRows
from tracescore.ingest.store.ledger import LEDGER_COLUMNS, ledger_rows
from tracescore.ingest.store.replica_table import HANDOFF_COLUMNS, handoff_row
from tracescore.ingest.store.rows import OTEL_LOGS_COLUMNS, OTEL_TRACES_COLUMNS, log_row, span_rows
from tracescore.schemas import LogRecord, Span, SpanBatch
from tracescore.schemas.consumers import SpanConsumer
from tracescore.schemas.errors import Overloaded

log = logging.getLogger(__name__)

DEFAULT_MAX_COMMIT_ITEMS = 50_000  # items per commit (a larger batch is committed on its own)
DEFAULT_MAX_PENDING_ITEMS = 200_000  # items waiting for a commit before new batches are refused
MAX_GATHER_SECONDS = 0.005  # the longest a commit waits for the clients the last one acknowledged
COMMIT_INTERVAL_SECONDS = 0.1  # a small commit starts no sooner after the last one began
FULL_COMMIT_ITEMS = 1_000  # a commit this large starts at once
FULL_COMMIT_BYTES = 256 * 1024  # as its items came in


class Router(Protocol):
    """Which replica owns a trace (``ingest.replication.membership.Membership``)."""

    @property
    def replica_id(self) -> str: ...

    @property
    def solo(self) -> bool: ...

    def owner(self, trace_id: str) -> str: ...


def split_by_owner(
    batches: Sequence[SpanBatch], arrived_ns: int, router: Router
) -> tuple[list[list[object]], list[SpanBatch]]:
    """Split a commit by owner: a hand-off row for each trace another replica owns, and each batch
    cut down to the items this replica assembles (log records outside any trace stay)."""
    me = router.replica_id
    owners: dict[str, str] = {}
    roots: dict[str, bool] = {}
    owned: list[SpanBatch] = []
    for batch in batches:
        spans: list[Span] = []
        logs: list[LogRecord] = []
        sizes: list[int] = []
        items: list[Span | LogRecord] = [*batch.spans, *batch.logs]
        for index, item in enumerate(items):
            trace_id = item.trace_id
            owner = owners.get(trace_id) if trace_id else me
            if owner is None:
                owner = owners[trace_id] = router.owner(trace_id)
            if owner != me:
                root = isinstance(item, Span) and not item.parent_span_id and item.end_time_unix_nano > 0
                roots[trace_id] = roots.get(trace_id, False) or root
                continue
            if isinstance(item, Span):
                spans.append(item)
            else:
                logs.append(item)
            if index < len(batch.item_bytes):
                sizes.append(batch.item_bytes[index])
        owned.append(
            SpanBatch.model_construct(
                spans=spans,
                logs=logs,
                rejected_items=batch.rejected_items,
                errors=batch.errors,
                arrived_unix_nano=arrived_ns,
                item_bytes=sizes,
            )
        )
    handoffs = [
        handoff_row(owners[trace_id], arrived_ns, trace_id, arrived_ns, root, me)
        for trace_id, root in roots.items()
    ]
    return handoffs, owned


def stored_rows(
    batches: Sequence[SpanBatch], arrived_ns: int, refused: list[str] | None = None
) -> list[TableRows]:
    """The rows of a commit in the order they are inserted, built on the store's worker thread:
    ``span_ledger`` (what the scorers read) last, so that a process killed between two inserts never
    leaves a span to be scored that ``otel_traces`` (what Grafana shows) does not hold. Such a commit
    is not acknowledged: its client sends it again (its labels are then written again, with the same
    ids: they replace themselves). Why each person's evaluation result that is no label was refused is
    added to ``refused``."""
    ledger: list[list[object]] = []
    traces: list[list[object]] = []
    logs: list[list[object]] = []
    labels: list[list[object]] = []
    for batch in batches:
        batch.arrived_unix_nano = arrived_ns
        ledger.extend(ledger_rows(batch, arrived_ns))
        traces.extend(span_rows(batch.spans))
        logs.extend(log_row(record) for record in batch.logs)
        found = batch_annotations(batch, arrived_ns)
        labels.extend(annotation_row(label, arrived_ns) for label in found.labels)
        if refused is not None:
            refused.extend(found.refused)
    return [
        *([("annotations", ANNOTATION_COLUMNS, labels)] if labels else []),
        ("otel_logs", OTEL_LOGS_COLUMNS, logs),
        ("otel_traces", OTEL_TRACES_COLUMNS, traces),
        ("span_ledger", LEDGER_COLUMNS, ledger),
    ]


async def insert_spans(store: Store, spans: Sequence[Span]) -> None:
    """Write spans (ledger and ``otel_traces``) outside the pipeline, e.g. in tests and tools."""
    batch = SpanBatch(spans=list(spans))
    await store.insert_built(lambda: stored_rows([batch], time.time_ns()), "insert spans")


async def insert_logs(store: Store, records: Sequence[LogRecord]) -> None:
    """Write log records (ledger and ``otel_logs``) outside the pipeline."""
    batch = SpanBatch(logs=list(records))
    await store.insert_built(lambda: stored_rows([batch], time.time_ns()), "insert logs")


@dataclass
class _Waiting:
    batch: SpanBatch
    committed: asyncio.Future[int]  # the commit's Arrived, or its error

    @property
    def items(self) -> int:
        return len(self.batch.spans) + len(self.batch.logs)

    @property
    def bytes(self) -> int:
        return sum(self.batch.item_bytes)


class SpanSink:
    """Stores each batch (group commit) before handing it on: a span is durable once accepted."""

    def __init__(
        self,
        store: Store,
        next: SpanConsumer,
        metrics: Metrics,
        *,
        max_commit_items: int = DEFAULT_MAX_COMMIT_ITEMS,
        max_pending_items: int = DEFAULT_MAX_PENDING_ITEMS,
        clock_ns: Callable[[], int] = time.time_ns,
        router: Router | None = None,
    ) -> None:
        self._store = store
        self._router = router
        self._next = next
        self._metrics = metrics
        self._max_commit_items = max_commit_items
        self._max_pending_items = max_pending_items
        self._clock_ns = clock_ns
        self._waiting: list[_Waiting] = []
        self._uncommitted_items = 0  # waiting for a commit, or in the one under way
        self._waiting_bytes = 0  # of the waiting batches, as they came in
        self._wake = asyncio.Event()
        self._arrived = asyncio.Event()  # a batch joined the waiting ones
        self._expected = 0  # batches the next commit waits for: the last one's and those that came meanwhile
        self._last_commit_seconds = 0.0
        self._last_commit_started = -float("inf")  # event loop time
        self._flusher: asyncio.Task[None] | None = None
        self._stopping = False
        # Arrived of committed batches not yet handed on, with how many: the watermark stays below them.
        self._unhanded: Counter[int] = Counter()
        self._orphans: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_loop(), name="span-sink-group-commit")

    async def shutdown(self) -> None:
        """Commit what waits, then stop. Idempotent."""
        self._stopping = True
        self._wake.set()
        if self._flusher is not None:
            await self._flusher
            self._flusher = None

    @property
    def uncommitted_items(self) -> int:
        return self._uncommitted_items

    def oldest_unhanded(self) -> int | None:
        """The Arrived of the oldest committed batch still on its way to the assembler."""
        return min(self._unhanded) if self._unhanded else None

    async def consume_spans(self, batch: SpanBatch) -> None:
        waiting = _Waiting(batch, asyncio.get_running_loop().create_future())
        if not waiting.items:
            return
        if self._stopping:
            raise RuntimeError("the span sink is shut down")
        await self.start()  # the first batch starts the group commit if nobody did
        self._store.free_space.admit()  # the store's disk under its floor: StoreFull (503, Kafka paused)
        if self._uncommitted_items and self._uncommitted_items + waiting.items > self._max_pending_items:
            self._metrics.requests_refused.labels("store_backlog").inc()
            waiting_items = self._uncommitted_items
            raise Overloaded(f"{waiting_items} spans and log records wait to be stored; send again later")
        self._waiting.append(waiting)
        self._uncommitted_items += waiting.items
        self._waiting_bytes += waiting.bytes
        self._wake.set()
        self._arrived.set()
        arrived = await waiting.committed
        try:
            await self._next.consume_spans(waiting.batch)  # what this replica assembles of it
        finally:
            self._release(arrived)

    async def _flush_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._waiting:
                await self._gather()
                await self._commit(self._take_window())
            if self._stopping:
                await asyncio.gather(*self._orphans, return_exceptions=True)
                return

    async def _gather(self) -> None:
        """Wait for more batches to join the commit: a small one until ``COMMIT_INTERVAL_SECONDS``
        after the last commit began, and a moment more for the clients the last commit acknowledged
        (those that arrived while it ran are here already); a full one not at all."""
        loop = asyncio.get_running_loop()
        not_before = self._last_commit_started + COMMIT_INTERVAL_SECONDS
        gathered_by = max(not_before, loop.time() + min(MAX_GATHER_SECONDS, self._last_commit_seconds / 4))
        while not self._full():
            now = loop.time()
            if now >= not_before and (self._gathered() or now >= gathered_by):
                return
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._arrived.wait(), (not_before if now < not_before else gathered_by) - now
                )

    def _full(self) -> bool:
        """The waiting batches make a commit that starts at once."""
        return (
            self._stopping
            or self._uncommitted_items >= min(FULL_COMMIT_ITEMS, self._max_commit_items)
            or self._waiting_bytes >= FULL_COMMIT_BYTES
        )

    def _gathered(self) -> bool:
        # Nothing is in flight while the flusher gathers: the uncommitted items are the waiting ones.
        return len(self._waiting) >= self._expected

    def _take_window(self) -> list[_Waiting]:
        """The oldest waiting batches, up to the item bound (at least one)."""
        window: list[_Waiting] = []
        items = 0
        while self._waiting and (not window or items + self._waiting[0].items <= self._max_commit_items):
            waiting = self._waiting.pop(0)
            window.append(waiting)
            items += waiting.items
            self._waiting_bytes -= waiting.bytes
        return window

    async def _commit(self, window: list[_Waiting]) -> None:
        items = sum(waiting.items for waiting in window)  # before the insert cuts batches down by owner
        started = time.monotonic()
        self._last_commit_started = asyncio.get_running_loop().time()
        try:
            await self._insert(window)
        finally:
            self._uncommitted_items -= items
            self._expected = len(window) + len(self._waiting)
            self._last_commit_seconds = time.monotonic() - started

    async def _insert(self, window: list[_Waiting]) -> None:
        arrived = self._clock_ns()
        batches = [waiting.batch for waiting in window]
        self._unhanded[arrived] += len(window)  # before the insert: a checkpoint meanwhile must not pass it
        routed: list[SpanBatch] = []
        labels: list[list[list[object]]] = []  # the annotation rows of the commit, counted once stored
        refused: list[str] = []  # people's evaluation results that are no label, and why
        router = self._router

        def build() -> list[TableRows]:
            tables = stored_rows(batches, arrived, refused)
            labels.extend(rows for table, _, rows in tables if table == "annotations")
            if router is not None and not router.solo:
                # In the same commit as the items: an acknowledged item always has an owner that knows.
                handoffs, owned = split_by_owner(batches, arrived, router)
                tables.insert(-1, ("trace_handoffs", HANDOFF_COLUMNS, handoffs))  # before the ledger
                routed.extend(owned)
            return tables

        try:
            await self._store.insert_built(build, "group commit")
        except Exception as exc:
            del self._unhanded[arrived]
            for waiting in window:
                if not waiting.committed.done():
                    waiting.committed.set_exception(exc)
            log.warning("storing %d batch(es) failed: %s", len(window), exc)
            return
        self._metrics.commits.inc()
        self._metrics.spans_stored.inc(sum(len(batch.spans) for batch in batches))
        self._metrics.logs_stored.inc(sum(len(batch.logs) for batch in batches))
        if labels:
            self._metrics.annotations_stored.labels("otlp").inc(sum(len(rows) for rows in labels))
        if refused:
            self._metrics.annotations_refused.inc(len(refused))
            log.warning(
                "%d evaluation result(s) with an annotator are no label: %s", len(refused), refused[0]
            )
        for waiting, owned in zip(window, routed or batches, strict=True):
            waiting.batch = owned
            if waiting.committed.done():
                # The request went away while its batch was stored: hand the batch on all the same,
                # so what is stored is scored (the client will likely send it again; that is harmless).
                orphan = asyncio.create_task(self._hand_on(waiting.batch, arrived))
                self._orphans.add(orphan)
                orphan.add_done_callback(self._orphans.discard)
            else:
                waiting.committed.set_result(arrived)

    async def _hand_on(self, batch: SpanBatch, arrived: int) -> None:
        try:
            await self._next.consume_spans(batch)
        except Exception:
            log.exception("handing on a stored batch whose request went away failed")
        finally:
            self._release(arrived)

    def _release(self, arrived: int) -> None:
        self._unhanded[arrived] -= 1
        if self._unhanded[arrived] <= 0:
            del self._unhanded[arrived]
