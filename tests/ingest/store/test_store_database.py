"""The embedded store in a database of its own: created on start when missing, with every table, and
nothing written to ``default``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tracescore.ingest.store.clickhouse import DDL_FILES, Store


async def test_the_embedded_store_creates_its_database_when_missing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "data"), "fresh_evals")
    await store.start()
    try:
        (current,) = await store.query("SELECT currentDatabase() AS db")
        assert current["db"] == "fresh_evals"  # unqualified names resolve there
        rows = await store.query(
            "SELECT database, name FROM system.tables WHERE database IN ('fresh_evals', 'default')"
        )
        assert {r["database"] for r in rows} == {"fresh_evals"}
        names = {r["name"] for r in rows}
        assert {Path(f).stem for f in DDL_FILES} - {"score_series", "span_scores_view"} <= names
        assert {"otel_traces_scored", "scores_by_scorer", "decisions_by_scorer"} <= names
        now = datetime.now(UTC)
        await store.insert("ingest_watermarks", [["test-owner", now, now]], ["Owner", "Watermark", "Updated"])
        (row,) = await store.query("SELECT count() AS n FROM fresh_evals.ingest_watermarks")
        assert row["n"] == 1
    finally:
        await store.shutdown()
