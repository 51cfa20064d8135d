"""The ClickHouse store against real chDB (through clickhouse-connect) in temp directories: lifecycle,
persistence, queries and how its errors are classified."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from tests.ingest.store.samples import ROOT_SPAN, TRACE, agent_span, relevancy, tool_span
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.retriable import store_error
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.ingest.store.span_sink import insert_spans
from tracescore.schemas.errors import StoreError

REPO_ROOT = Path(__file__).resolve().parents[3]


async def test_data_survives_a_restart_on_the_same_directory(tmp_path: Path) -> None:
    first = Store(str(tmp_path / "data"))
    await first.start()
    try:
        await insert_spans(first, [agent_span()])
        await ClickHouseScoreSink(first).write_scores([relevancy()], [])
    finally:
        await first.shutdown()

    reopened = Store(f"chdb://{tmp_path / 'data'}")
    await reopened.start()  # the DDL runs again: IF NOT EXISTS everywhere
    try:
        assert [row["reason"] for row in await ScoreResults(reopened).trace_scores(TRACE)] == [
            "answers the question"
        ]
        assert await reopened.query("SELECT SpanId FROM otel_traces") == [{"SpanId": ROOT_SPAN}]
    finally:
        await reopened.shutdown()


async def test_second_chdb_path_in_one_process_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    other = Store(str(tmp_path / "other"))
    with pytest.raises(StoreError) as caught:
        await other.start()
    message = str(caught.value)
    assert "in use" in message and "--store" in message and str(tmp_path / "other") in message
    await other.shutdown()
    assert await store.query("SELECT 1 AS one") == [{"one": 1}]  # the open store is unharmed


async def test_directory_held_by_another_process_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    held = str(tmp_path / "chdb")  # the fixture's directory, open in this process
    program = (
        "import asyncio, sys\n"
        "from tracescore.ingest.store.clickhouse import Store, StoreError\n"
        "async def main():\n"
        f"    s = Store({held!r})\n"
        "    try:\n"
        "        await s.start()\n"
        "    except StoreError as exc:\n"
        "        print(exc)\n"
        "        sys.exit(3)\n"
        "    await s.shutdown()\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", program, cwd=REPO_ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 3
    assert "in use" in out.decode() and "stop the other tracescore" in out.decode().lower()


async def test_query_binds_parameters(store: Store) -> None:
    await insert_spans(store, [agent_span(), tool_span()])
    assert await store.query("SELECT {a:UInt32} + 1 AS x, {s:String} AS s", {"a": 41, "s": "it's"}) == [
        {"x": 42, "s": "it's"}
    ]
    rows = await store.query(
        "SELECT SpanName FROM otel_traces WHERE SpanKind = {kind:String} AND Duration > {d:UInt64}",
        {"kind": "Client", "d": 1_000},
    )
    assert rows == [{"SpanName": "invoke_agent weather"}]
    with pytest.raises(StoreError, match="query on chdb://") as missing_table:
        await store.query("SELECT * FROM no_such_table")
    assert not missing_table.value.retriable  # the same statement fails the same way again
    with pytest.raises(StoreError, match="UNKNOWN_TABLE") as refused:  # an insert refused: permanently
        await store.insert("no_such_table", [[1]], ["x"])
    assert not refused.value.retriable


def test_server_errors_are_classified_by_their_code() -> None:
    # clickhouse-connect raises DatabaseError with the server's "Code: N." for statement failures.
    def classified(message: str) -> bool:
        return store_error("insert into scores", DatabaseError(message)).retriable

    assert classified(
        "HTTPDriver for http://ch:8123 received ClickHouse error code 252\n Code: 252. "
        "DB::Exception: Too many parts (300). Merges are processing significantly slower"
    )
    assert classified("Code: 241. DB::Exception: Memory limit (total) exceeded: would use 9.31 GiB")
    assert not classified("Code: 60. DB::Exception: Table default.scores does not exist. (UNKNOWN_TABLE)")
    assert not classified("Code: 516. DB::Exception: default: Authentication failed")
    assert not classified("something without a code")


async def test_lifecycle_is_safe_in_any_order(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "life"))
    await store.shutdown()  # before start
    await store.shutdown()
    with pytest.raises(StoreError, match="shut down"):
        await insert_spans(store, [agent_span()])
    with pytest.raises(StoreError, match="shut down"):
        await store.start()

    store = Store(str(tmp_path / "life"))
    await store.start()
    await store.start()  # already started: no second client
    await insert_spans(store, [])
    await ClickHouseScoreSink(store).write_scores([], [])
    await store.shutdown()
    await store.shutdown()
    with pytest.raises(StoreError):
        await ScoreResults(store).trace_scores(TRACE)


async def test_unreachable_server_is_a_retriable_store_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = Store(f"http://alice:s3cret@127.0.0.1:{port}")
    with pytest.raises(StoreError) as caught:
        await store.start()
    assert caught.value.retriable
    assert f"http://127.0.0.1:{port}" in str(caught.value) and "s3cret" not in str(caught.value)
    await store.shutdown()


def test_description_names_the_store_without_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert Store("rel/data").description == f"chdb://{tmp_path}/rel/data"
    assert Store("chdb:///var/lib/ts").description == "chdb:///var/lib/ts"
    assert Store("http://alice:s3cret@clickhouse:8123/?compress=1").description == "http://clickhouse:8123"
    assert Store("https://ch.internal").description == "https://ch.internal"
    with pytest.raises(StoreError, match="absolute"):
        Store("chdb://relative")
