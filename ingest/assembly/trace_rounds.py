"""How released traces become rounds: each trace's items, from memory, merged with the span ledger's
when the store holds more of it (spilled, adopted by recovery, seen before), and what the store knows
of its earlier rounds. The store is asked about a whole release at once, never about one trace at a
time.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol

from tracescore.ingest.assembly.trace_state import TracedItems, item_key
from tracescore.ingest.store.ledger import PriorRounds, StoredTrace
from tracescore.schemas import LogRecord, RoundReason, Span, TraceRound
from tracescore.schemas.consumers import PriorOutcomes


class TraceLoader(Protocol):
    """Where the assembler reads traces back (``ingest.store.ledger.Ledger``)."""

    async def load(self, trace_ids: Sequence[str]) -> dict[str, StoredTrace]: ...

    async def status(self, trace_ids: Sequence[str]) -> dict[str, PriorRounds]: ...

    async def prior_outcomes(self, since: Mapping[str, int]) -> dict[str, PriorOutcomes]: ...


def round_of(
    trace: TracedItems,
    reason: RoundReason,
    status: PriorRounds | None,
    stored: StoredTrace | None,
    max_items: int,
) -> tuple[TraceRound, list[Span], list[LogRecord]]:
    """The round of a released trace and its items (from memory, merged with the ledger's if read)."""
    done_through = status.done_through if status is not None else 0
    resumed = trace.resumed or (status is not None and status.has_decisions)
    if stored is None:
        spans = [item for item in trace.items.values() if isinstance(item, Span)]
        logs = [item for item in trace.items.values() if isinstance(item, LogRecord)]
        round = TraceRound(
            trace_id=trace.trace_id,
            since_unix_nano=trace.since,
            through_unix_nano=trace.through,
            reason=reason,
            resumed=resumed,
        )
        return round, spans, logs
    # The first arrival of each item counts: a copy sent again after the trace was decided is not new.
    first: dict[Hashable, tuple[int, Span | LogRecord]] = {}
    arrivals: list[tuple[int, Span | LogRecord]] = [*stored.spans, *stored.logs]
    for arrived, item in sorted(arrivals, key=lambda pair: pair[0]):
        first.setdefault(item_key(item), (arrived, item))
    for key, item in trace.items.items():
        first.setdefault(key, (trace.through, item))
    new = [arrived for arrived, _ in first.values() if arrived > done_through]
    kept = list(first.values())[:max_items]
    round = TraceRound(
        trace_id=trace.trace_id,
        since_unix_nano=min(new, default=trace.since),
        through_unix_nano=max([trace.through, *(arrived for arrived, _ in first.values())]),
        reason=reason,
        resumed=resumed,
        unchanged=done_through > 0 and not new,
    )
    spans = [item for _, item in kept if isinstance(item, Span)]
    logs = [item for _, item in kept if isinstance(item, LogRecord)]
    return round, spans, logs


async def rounds_of(
    ready: Sequence[tuple[TracedItems, RoundReason]], loader: TraceLoader | None, max_items: int
) -> list[tuple[TraceRound, list[Span], list[LogRecord]]]:
    """The rounds of released traces and their items, with what the store knows of them: at most
    three queries for the whole release, each waiting for the store's worker once (the traces'
    status; the items of those it holds more of than memory; what earlier attempts wrote, for the
    traces it says have rows)."""
    status: dict[str, PriorRounds] = {}
    stored: dict[str, StoredTrace] = {}
    if loader is not None:
        status = await loader.status([trace.trace_id for trace, _ in ready])
        to_load = [t.trace_id for t, _ in ready if t.stored or t.trace_id in status]
        stored = await loader.load(to_load)
    rounds = [
        round_of(trace, reason, status.get(trace.trace_id), stored.get(trace.trace_id), max_items)
        for trace, reason in ready
    ]
    if loader is None:
        return rounds  # no store: the executor asks its sink about a resumed round
    written = {
        round.trace_id: round.through_unix_nano
        for round, _, _ in rounds
        if round.resumed and (known := status.get(round.trace_id)) is not None and known.has_rows
    }
    prior = await loader.prior_outcomes(written) if written else {}
    # A resumed round the store knows no rows of carries that (nothing to reuse): not asked again.
    return [
        (round.model_copy(update={"prior": prior.get(round.trace_id, PriorOutcomes())}), spans, logs)
        if round.resumed
        else (round, spans, logs)
        for round, spans, logs in rounds
    ]
