"""A real embedded ClickHouse store (chDB through clickhouse-connect) in a temp directory, for one test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tracescore.ingest.store.clickhouse import Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A started Store on a fresh chDB directory; shut down afterwards (chDB holds one path per process)."""
    started = Store(str(tmp_path / "chdb"))
    await started.start()
    try:
        yield started
    finally:
        await started.shutdown()


def count_queries(store: Store) -> list[int]:
    """A list whose one item counts the queries ``store`` runs from now on (each waits for the
    store's one worker thread)."""
    counted = [0]
    query = store.query

    async def counting(sql: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        counted[0] += 1
        return await query(sql, parameters)

    store.query = counting  # type: ignore[method-assign]
    return counted
