"""What the store holds after the soak, read where it lives: inside the tmpfs's namespace (chDB resolves
``/proc/<pid>/root`` paths to the host's own directory, so the store must be opened from inside).

``read_store`` runs there (``Tmpfs.python``; ``python -m tests.soak.store_reading STORE`` prints the
same JSON) and opens the store once: the trace ids of ``otel_traces`` and ``span_ledger``, each trace's
decisions per rule under FINAL, and every (trace, span, rule) with more than one decision or score row
under FINAL; and what the store takes on its disk, in all and per table (active and merged-away parts).
``store_state`` runs it from outside and returns a ``StoreState``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from typing import Any

from tests.soak.observations import StoreState
from tests.support.serve import ENV
from tests.support.tmpfs import Tmpfs

DOUBLED = (
    "SELECT TraceId, SpanId, ScorerId, count() AS n FROM {table} FINAL "
    "GROUP BY TraceId, SpanId, ScorerId HAVING n > 1"
)


async def _read(store_dir: str) -> dict[str, Any]:
    from tracescore.ingest.store.clickhouse import Store

    store = Store(store_dir, min_free_bytes=0)  # read whatever space is left
    await store.start()
    try:
        traces = {
            table: [row["TraceId"] for row in await store.query(f"SELECT DISTINCT TraceId FROM {table}")]
            for table in ("otel_traces", "span_ledger")
        }
        decisions: dict[str, dict[str, int]] = {}
        rows = await store.query(
            "SELECT TraceId, ScorerId, count() AS n FROM score_decisions FINAL GROUP BY TraceId, ScorerId"
        )
        for row in rows:
            decisions.setdefault(row["TraceId"], {})[row["ScorerId"]] = int(row["n"])
        parts = await store.query(
            "SELECT table, active, count() AS parts, sum(bytes_on_disk) AS bytes FROM system.parts "
            "WHERE database = currentDatabase() GROUP BY table, active ORDER BY bytes DESC"
        )
        doubled = {
            table: [
                [row["TraceId"], row["SpanId"], row["ScorerId"], int(row["n"])]
                for row in await store.query(DOUBLED.format(table=table))
            ]
            for table in ("score_decisions", "scores")
        }
    finally:
        await store.shutdown()
    footprint = {
        "allocated_bytes": allocated_bytes(store_dir),
        "parts": [
            {
                "table": row["table"],
                "active": bool(row["active"]),
                "parts": int(row["parts"]),
                "bytes": int(row["bytes"]),
            }
            for row in parts
        ],
    }
    return {**traces, "decisions": decisions, "doubled": doubled, "footprint": footprint}


def allocated_bytes(directory: str) -> int:
    """What the files under ``directory`` take on their disk (blocks allocated, not their lengths)."""
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def read_store(store_dir: str) -> str:
    """The store's state as JSON (run inside the namespace)."""
    return json.dumps(asyncio.run(_read(store_dir)))


def store_state(disk: Tmpfs, store_dir: str) -> StoreState:
    """Open the store inside ``disk``'s namespace and read it; a store that does not open says why."""
    code = f"from tests.soak.store_reading import read_store; print(read_store({store_dir!r}))"
    try:
        read = json.loads(disk.python(code, ENV))
    except (AssertionError, subprocess.SubprocessError, json.JSONDecodeError) as error:
        lines = str(error).strip().splitlines()
        return StoreState(opened=False, error=lines[-1] if lines else type(error).__name__)

    def doubled(table: str) -> list[tuple[str, str, str, int]]:
        return [(t, s, r, int(n)) for t, s, r, n in read["doubled"][table]]

    return StoreState(
        opened=True,
        otel_traces=frozenset(read["otel_traces"]),
        span_ledger=frozenset(read["span_ledger"]),
        decisions=read["decisions"],
        doubled_decisions=doubled("score_decisions"),
        doubled_scores=doubled("scores"),
        footprint=read["footprint"],
    )


if __name__ == "__main__":
    print(read_store(sys.argv[1]))
