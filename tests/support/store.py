"""A real embedded ClickHouse store (chDB through clickhouse-connect) in a temp directory, for one test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ingest.store.clickhouse import Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A started Store on a fresh chDB directory; shut down afterwards (chDB holds one path per process)."""
    started = Store(str(tmp_path / "chdb"))
    await started.start()
    try:
        yield started
    finally:
        await started.shutdown()
