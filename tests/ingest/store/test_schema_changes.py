"""Start-up changes only what the store's schema lacks, on real chDB: a store opened again writes no
metadata at all (every ALTER rewrites its table's metadata file, and one cut short by a full disk left
the store unopenable); a store of an older shape gets just its missing changes; none is made on a disk
under its floor; and an engine that cannot open a store says why in its own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.store.test_free_space import MIB, Disk
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.free_space import FreeSpaceGuard
from tracescore.ingest.store.schema_changes import SchemaState, needed_statements, table_settings
from tracescore.schemas.errors import StoreError, StoreFull, StoreInUse


def metadata_files(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every table's and database's metadata file of a chDB directory: path -> (mtime ns, content)."""
    return {
        str(path.relative_to(directory)): (path.stat().st_mtime_ns, path.read_bytes())
        for path in directory.rglob("*.sql")
        if path.is_file()
    }


async def opened(directory: Path, store: Store | None = None) -> Store:
    store = store or Store(str(directory))
    await store.start()
    return store


async def test_a_store_opened_again_writes_no_metadata(tmp_path: Path) -> None:
    directory = tmp_path / "chdb"
    await (await opened(directory)).shutdown()
    before = metadata_files(directory)
    assert len(before) > 20  # every table and view
    await (await opened(directory)).shutdown()
    assert metadata_files(directory) == before


async def test_a_store_of_an_older_shape_gets_just_the_changes_it_lacks(tmp_path: Path) -> None:
    directory = tmp_path / "chdb"
    store = await opened(directory)
    try:  # as a store made before SessionId, the view's ScorerVersion and the kept merged parts
        await store.command("ALTER TABLE scores DROP COLUMN SessionId")
        await store.command(
            "ALTER TABLE scores_by_scorer_mv MODIFY QUERY SELECT ScorerId, SpanStart, TraceId, SpanId, "
            "ServiceName, AgentName, Score, Label, JudgeModel, InputTokens, OutputTokens, CostUsd, "
            "LatencyMs, Source, Timestamp, Version FROM default.scores"
        )
        await store.command("ALTER TABLE trace_done MODIFY SETTING old_parts_lifetime = 0")
    finally:
        await store.shutdown()
    before = metadata_files(directory)
    store = await opened(directory)
    try:
        columns = await store.query("SELECT name FROM system.columns WHERE table = 'scores'")
        assert "SessionId" in {row["name"] for row in columns}
        [view] = await store.query("SELECT as_select FROM system.tables WHERE name = 'scores_by_scorer_mv'")
        assert view["as_select"].endswith("Version, ScorerVersion FROM default.scores")
        [done] = await store.query(
            "SELECT create_table_query AS q FROM system.tables WHERE name = 'trace_done'"
        )
        [scores] = await store.query(
            "SELECT create_table_query AS q FROM system.tables WHERE name = 'scores'"
        )
        assert (
            table_settings(done["q"])["old_parts_lifetime"]
            == table_settings(scores["q"])["old_parts_lifetime"]
        )
    finally:
        await store.shutdown()
    changed = {name for name, file in metadata_files(directory).items() if before.get(name) != file}
    assert {Path(name).name for name in changed} == {
        "scores.sql",
        "scores_by_scorer_mv.sql",
        "trace_done.sql",
    }


async def test_no_schema_change_is_made_on_a_disk_under_its_floor(tmp_path: Path) -> None:
    new = Store(str(tmp_path / "new"))
    new.free_space = FreeSpaceGuard(100 * MIB, 0.0, read=Disk(free=50 * MIB))
    with pytest.raises(
        StoreFull, match=r"50 MiB free, under its floor of 100 MiB.*needs \d+ change"
    ) as refused:
        await new.start()
    assert "free space on the store's disk and start again" in str(refused.value)
    await new.shutdown()
    assert metadata_files(tmp_path / "new") == {}  # not one table made
    # A store the DDL already describes opens under its floor: it reads, it refuses writes.
    await (await opened(tmp_path / "made")).shutdown()
    made = Store(str(tmp_path / "made"))
    made.free_space = FreeSpaceGuard(100 * MIB, 0.0, read=Disk(free=50 * MIB))
    await opened(tmp_path / "made", made)
    try:
        assert await made.query("SELECT count() AS n FROM scores") == [{"n": 0}]
        assert made.health()["status"] == "refusing"
    finally:
        await made.shutdown()


async def test_an_engine_that_cannot_open_a_store_says_why_and_not_that_another_process_holds_it(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "chdb"
    await (await opened(directory)).shutdown()
    [scores] = [path for path in directory.rglob("scores.sql") if path.is_file()]
    scores.write_bytes(b"")  # as a schema change cut short by a full disk left it
    broken = Store(str(directory))
    with pytest.raises(StoreError) as refused:
        await broken.start()
    await broken.shutdown()
    message = str(refused.value)
    assert not isinstance(refused.value, StoreInUse)
    assert "no other process holds it" in message and "in use" not in message
    assert "scores.sql" in message and "DB::Exception" in message, message


def test_an_alter_is_cut_down_to_the_columns_missing_and_a_table_made_now_keeps_its_whole_alter() -> None:
    statements = [
        "CREATE TABLE IF NOT EXISTS `db`.t (a String) ENGINE = MergeTree ORDER BY a",
        "ALTER TABLE `db`.t ADD COLUMN IF NOT EXISTS b String,\n"
        "    ADD COLUMN IF NOT EXISTS c String AFTER b",
    ]
    same = str  # no view is compared here
    existing = SchemaState(database_exists=True, engines={"t": "MergeTree"}, columns={"t": frozenset("ab")})
    assert needed_statements(existing, statements, same) == [
        "ALTER TABLE `db`.t ADD COLUMN IF NOT EXISTS c String AFTER b"
    ]
    complete = SchemaState(database_exists=True, engines={"t": "MergeTree"}, columns={"t": frozenset("abc")})
    assert needed_statements(complete, statements, same) == []
    assert needed_statements(SchemaState(database_exists=True), statements, same) == statements
