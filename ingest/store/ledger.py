"""The span ledger: tracescore's typed copy of every accepted item, and what recovery reads from it.

``span_ledger`` holds each span and log record as it arrived (its JSON, typed, unlike the string
attributes of ``otel_traces``) with the time the group commit stored it (``Arrived``). ``trace_done``
records the rounds whose decisions are written. A trace is undecided while it has items that arrived
after its last ``trace_done.Through``. ``ingest_watermarks`` keeps, per owner, a time before which
every item is decided, so recovery scans only what came after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_sink import read_prior_outcomes
from tracescore.schemas import LogRecord, Span, SpanBatch
from tracescore.schemas.consumers import PriorOutcomes

LEDGER_COLUMNS = ("TraceId", "Arrived", "Kind", "SpanId", "EndedRoot", "Body")
WATERMARK_COLUMNS = ("Owner", "Watermark", "Updated")
KIND_SPAN = 1
KIND_LOG = 2


def ledger_rows(batch: SpanBatch, arrived_ns: int) -> list[list[object]]:
    """The ledger rows of a batch; sets ``batch.item_bytes`` to the stored size of each item.

    Bodies are UTF-8 JSON bytes, as pydantic writes them and the store keeps them: as ``str`` a text
    with one character outside Latin-1 takes 2-4 bytes per character, and would be encoded again
    for the insert."""
    rows: list[list[object]] = []
    sizes: list[int] = []
    to_span_json = Span.__pydantic_serializer__.to_json
    to_log_json = LogRecord.__pydantic_serializer__.to_json
    for span in batch.spans:
        body = to_span_json(span)
        ended_root = int(not span.parent_span_id and span.end_time_unix_nano > 0)
        rows.append([span.trace_id, arrived_ns, KIND_SPAN, span.span_id, ended_root, body])
        sizes.append(len(body))
    for record in batch.logs:
        if not record.trace_id:
            sizes.append(0)  # a record outside any trace is stored in otel_logs only: nothing to score
            continue
        body = to_log_json(record)
        rows.append([record.trace_id, arrived_ns, KIND_LOG, record.span_id, 0, body])
        sizes.append(len(body))
    batch.item_bytes = sizes
    return rows


@dataclass
class StoredTrace:
    """A trace's items as the ledger holds them, each with the time it arrived, oldest first."""

    trace_id: str
    spans: list[tuple[int, Span]] = field(default_factory=list)
    logs: list[tuple[int, LogRecord]] = field(default_factory=list)


@dataclass(frozen=True)
class PriorRounds:
    """What the store knows of a trace's earlier rounds."""

    done_through: int  # Through of its last decided round (ns), 0 if none
    has_decisions: bool  # some decision rows exist (maybe from a round that never got marked done)
    has_scores: bool = False  # some score rows exist (maybe written without their decisions)

    @property
    def has_rows(self) -> bool:
        """An earlier attempt wrote something: its round asks what (``prior_outcomes``)."""
        return self.has_decisions or self.has_scores


@dataclass(frozen=True)
class Undecided:
    """A trace with items that arrived after its last decided round."""

    trace_id: str
    first_arrived: int  # ns, of its undecided items
    last_arrived: int
    root_ended: bool  # among its undecided items
    done_through: int  # its last decided round, 0 if none


class Ledger:
    """Reads of the span ledger, decided rounds and watermarks (writes go through the sinks)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def load(self, trace_ids: Sequence[str]) -> dict[str, StoredTrace]:
        """The stored items of these traces (one query)."""
        if not trace_ids:
            return {}
        rows = await self._store.query(
            "SELECT TraceId, toUnixTimestamp64Nano(Arrived) AS Arrived, toInt8(Kind) AS Kind, Body "
            f"FROM {self._store.quoted_database}.span_ledger "
            "WHERE TraceId IN {ids:Array(String)} ORDER BY TraceId, Arrived",
            {"ids": list(trace_ids)},
        )
        traces: dict[str, StoredTrace] = {}
        for row in rows:
            trace = traces.setdefault(row["TraceId"], StoredTrace(row["TraceId"]))
            if row["Kind"] == KIND_SPAN:
                trace.spans.append((row["Arrived"], Span.model_validate_json(row["Body"])))
            else:
                trace.logs.append((row["Arrived"], LogRecord.model_validate_json(row["Body"])))
        return traces

    async def status(self, trace_ids: Sequence[str]) -> dict[str, PriorRounds]:
        """Earlier decided rounds, decision rows and score rows of these traces (absent: the store
        knows none), in one query: it waits for the store's worker once."""
        if not trace_ids:
            return {}
        database = self._store.quoted_database
        rows = await self._store.query(
            "SELECT TraceId, max(Through) AS Through, max(Decided) AS Decided, max(Scored) AS Scored "
            "FROM ("
            "SELECT TraceId, toUnixTimestamp64Nano(max(Through)) AS Through, 0 AS Decided, 0 AS Scored "
            f"FROM {database}.trace_done WHERE TraceId IN {{ids:Array(String)}} GROUP BY TraceId "
            "UNION ALL "
            "SELECT DISTINCT TraceId, toInt64(0) AS Through, 1 AS Decided, 0 AS Scored "
            f"FROM {database}.score_decisions WHERE TraceId IN {{ids:Array(String)}} "
            "UNION ALL "
            "SELECT DISTINCT TraceId, toInt64(0) AS Through, 0 AS Decided, 1 AS Scored "
            f"FROM {database}.scores WHERE TraceId IN {{ids:Array(String)}}"
            ") GROUP BY TraceId",
            {"ids": list(trace_ids)},
        )
        return {
            row["TraceId"]: PriorRounds(int(row["Through"]), bool(row["Decided"]), bool(row["Scored"]))
            for row in rows
        }

    async def prior_outcomes(self, since: Mapping[str, int]) -> dict[str, PriorOutcomes]:
        """What earlier attempts wrote for each of these traces at or after its ``since`` (ns), in
        one query (``ingest.store.score_sink.read_prior_outcomes``)."""
        return await read_prior_outcomes(self._store, since)

    async def undecided(
        self, since_ns: int, limit: int, trace_ids: Sequence[str] | None = None, *, after: str = ""
    ) -> list[Undecided]:
        """Traces with items that arrived at or after ``since_ns`` and are not decided yet, oldest
        first (by their first such item, then by id); only among ``trace_ids`` when given. A page
        of a longer scan: ``after`` skips the traces whose first item arrived at ``since_ns`` with
        an id up to it (the previous page's last)."""
        database = self._store.quoted_database
        among = "TraceId IN {ids:Array(String)}"
        scope = (
            among
            if trace_ids is not None
            else f"TraceId IN (SELECT TraceId FROM {database}.span_ledger "
            "WHERE Arrived >= fromUnixTimestamp64Nano({since:Int64}))"
        )
        rows = await self._store.query(
            f"""
            SELECT l.TraceId AS TraceId,
                   toUnixTimestamp64Nano(min(l.Arrived)) AS First,
                   toUnixTimestamp64Nano(max(l.Arrived)) AS Last,
                   max(l.EndedRoot) AS Root,
                   toUnixTimestamp64Nano(any(d.Through)) AS Through
            FROM {database}.span_ledger AS l
            LEFT JOIN (
                SELECT TraceId, max(Through) AS Through FROM {database}.trace_done
                WHERE {scope}
                GROUP BY TraceId
            ) AS d ON l.TraceId = d.TraceId
            WHERE l.Arrived >= fromUnixTimestamp64Nano({{since:Int64}}) AND l.Arrived > d.Through
                  {"AND l." + among if trace_ids is not None else ""}
            GROUP BY l.TraceId
            HAVING (First, TraceId) > ({{since:Int64}}, {{after:String}})
            ORDER BY First, TraceId
            LIMIT {{limit:UInt64}}
            SETTINGS join_use_nulls = 0
            """,
            {"since": since_ns, "limit": limit, "ids": list(trace_ids or []), "after": after},
        )
        return [
            Undecided(
                row["TraceId"], int(row["First"]), int(row["Last"]), bool(row["Root"]), int(row["Through"])
            )
            for row in rows
        ]

    async def watermark(self, owner: str) -> int:
        """The owner's durable low watermark (ns): every item that arrived before it is decided."""
        rows = await self._store.query(
            "SELECT toUnixTimestamp64Nano(argMax(Watermark, Updated)) AS W "
            f"FROM {self._store.quoted_database}.ingest_watermarks WHERE Owner = {{owner:String}}",
            {"owner": owner},
        )
        return int(rows[0]["W"]) if rows else 0

    async def save_watermark(self, owner: str, watermark_ns: int, now_ns: int) -> None:
        await self._store.insert("ingest_watermarks", [[owner, watermark_ns, now_ns]], WATERMARK_COLUMNS)
