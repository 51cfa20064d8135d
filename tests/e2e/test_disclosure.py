"""Errors do not map the host: with the store really failing (chDB refusing inserts with TOO_MANY_PARTS,
made real by the tables' own settings), OTLP answers carry a fixed sentence, never the database's
text or the data directory; ``/healthz`` and ``/readyz`` keep their statuses and numbers, and show
error texts only to a caller with the bearer token (or, without a token configured, with the paths
taken out). The detail is in the log."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from google.rpc import status_pb2

from tests.support.otlp import EXPORT_METHOD, agent_trace_requests
from tests.support.service import running_service, service_config
from tracescore.ingest.receivers.disclosure import without_paths
from tracescore.ingest.service import Service
from tracescore.schemas.redaction_placeholders import HIDDEN

PROTOBUF = {"Content-Type": "application/x-protobuf"}
TOKEN = "disclosure-test-token"
UNAVAILABLE = "spans could not be stored: the store is unavailable; retry later"


async def _refuse_inserts(service: Service, table: str, refuse: bool) -> None:
    # One part is "too many" while refusing; merges cannot get below one part.
    limits = (
        "parts_to_throw_insert = 1, parts_to_delay_insert = 1" if refuse else "parts_to_throw_insert = 3000"
    )
    await service.store.query(f"ALTER TABLE {service.store.quoted_database}.{table} MODIFY SETTING {limits}")


async def _request(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, data=body, headers=headers) as r,
    ):
        return r.status, await r.read()


@asynccontextmanager
async def broken_service(tmp_path: Path, **overrides: Any) -> AsyncIterator[Service]:
    """A service whose score table and span table refuse every insert (after one trace was stored)."""
    async with running_service(service_config(tmp_path, **overrides)) as service:
        base = f"http://127.0.0.1:{service.http.port}"
        auth = {"Authorization": f"Bearer {TOKEN}"} if "receiver.auth_token" in overrides else {}
        (first_id, first), (_, second) = agent_trace_requests(2, service="disclosure")
        assert (await _request("POST", f"{base}/v1/traces", first, {**PROTOBUF, **auth}))[0] == 200
        deadline = time.monotonic() + 60
        while not await service.store.query(
            "SELECT 1 FROM scores WHERE TraceId = {t:String} LIMIT 1", {"t": first_id}
        ):  # the tables refuse inserts only once they hold a part
            assert time.monotonic() < deadline, "the first trace was never scored"
            await asyncio.sleep(0.1)
        await _refuse_inserts(service, "scores", True)
        try:
            status, _ = await _request("POST", f"{base}/v1/traces", second, {**PROTOBUF, **auth})
            assert status == 200  # stored; its scores cannot be written
            while service.executor.write_error is None:
                assert time.monotonic() < deadline, "the score writes never failed"
                await asyncio.sleep(0.1)
            await _refuse_inserts(service, "otel_traces", True)
            yield service
        finally:
            await _refuse_inserts(service, "otel_traces", False)
            await _refuse_inserts(service, "scores", False)


def _leaks(text: str, tmp_path: Path) -> list[str]:
    return [word for word in (str(tmp_path), "DB::Exception", "TOO_MANY_PARTS") if word in text]


async def test_store_failures_answer_a_fixed_sentence_and_log_the_detail(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = agent_trace_requests(1, service="refused")[0][1]
    async with broken_service(tmp_path) as service:
        with caplog.at_level(logging.WARNING, logger="tracescore.ingest.receivers.intake"):
            status, raw = await _request(
                "POST", f"http://127.0.0.1:{service.http.port}/v1/traces", body, PROTOBUF
            )
        assert status == 503
        message = status_pb2.Status.FromString(raw).message
        assert message == UNAVAILABLE and not _leaks(raw.decode("latin-1"), tmp_path)
        logged = "\n".join(record.getMessage() for record in caplog.records)
        assert "TOO_MANY_PARTS" in logged and str(tmp_path) in logged  # the operator still sees it

        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await channel.unary_unary(EXPORT_METHOD)(body, timeout=10)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert failed.value.details() == UNAVAILABLE
        assert not _leaks(str(failed.value.debug_error_string()), tmp_path)


async def test_health_without_a_token_shows_errors_without_paths(tmp_path: Path) -> None:
    async with broken_service(tmp_path) as service:
        base = f"http://127.0.0.1:{service.http.port}"
        for path in ("/healthz", "/readyz"):
            status, raw = await _request("GET", f"{base}{path}")
            assert status == (503 if path == "/readyz" else 200)
            assert str(tmp_path) not in raw.decode()

            body = json.loads(raw)
            assert body["status"] == "degraded" and body["scoring"]["status"] == "failing"
            assert "TOO_MANY_PARTS" in body["scoring"]["error"] and "[path]" in body["scoring"]["error"]
            assert body["store"]["store"] == "chdb://[path]"
            assert body["backlog"]["rows_buffered"] > 0  # numbers stay


async def test_health_shows_error_texts_only_to_a_caller_with_the_token(tmp_path: Path) -> None:

    async with broken_service(tmp_path, **{"receiver.auth_token": TOKEN}) as service:
        base = f"http://127.0.0.1:{service.http.port}"
        for path in ("/healthz", "/readyz"):
            _, raw = await _request("GET", f"{base}{path}")
            body = json.loads(raw)
            assert not _leaks(raw.decode(), tmp_path)
            assert body["scoring"] == {"status": "failing", "error": HIDDEN}
            assert body["backlog"]["rows_buffered"] > 0

            _, raw = await _request("GET", f"{base}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
            body = json.loads(raw)
            assert "TOO_MANY_PARTS" in body["scoring"]["error"] and str(tmp_path) in body["scoring"]["error"]


async def test_the_api_answers_a_store_failure_without_its_text(tmp_path: Path) -> None:
    async with running_service(service_config(tmp_path)) as service:
        await service.store.query("DROP TABLE scores")
        url = f"http://127.0.0.1:{service.http.port}/api/scores?trace_id={'ab' * 16}"
        status, raw = await _request("GET", url)
    assert status == 500
    assert raw.decode() == '{"error": "the store could not answer (the service log has the detail)"}'


def test_paths_are_taken_out_and_urls_kept() -> None:
    text = (
        "insert on chdb:///var/lib/ts failed: Code: 252. Too many parts in /var/lib/ts/store/data "
        "(file '/etc/x.conf', 3/4 done) at http://clickhouse:8123/db"
    )
    assert without_paths(text) == (
        "insert on chdb://[path] failed: Code: 252. Too many parts in [path] "
        "(file '[path]', 3/4 done) at http://clickhouse:8123/db"
    )
