"""``GET /report`` on a store that cannot be read answers a clear error status with a JSON error, never
a broken page (a store that is unavailable for a while is a 503 with Retry-After, as for every
``/api/*`` read; one that refuses the read, a table gone or the store closed, a 500). The receiver is the
real HTTP receiver over a real chDB store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.support.otlp import Recorder, http_request, receiver_config
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.commands import StoreCommands
from tracescore.ingest.receivers.disclosure import API_STORE_FAILED
from tracescore.ingest.receivers.http import HttpReceiver
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.schemas.config import ServiceConfig


@asynccontextmanager
async def serving(store: Store) -> AsyncIterator[str]:
    """The HTTP receiver with the store's routes; its base URL."""
    receiver = HttpReceiver(
        receiver_config(),
        next=Recorder(),
        metrics=Metrics(),
        scores=ScoreResults(store),
        commands=StoreCommands(store, ServiceConfig(), rule_groups=(), thresholds={}),
    )
    await receiver.start()
    try:
        yield f"http://127.0.0.1:{receiver.port}"
    finally:
        await receiver.shutdown()


async def test_a_readable_store_gets_the_page(store: Store) -> None:
    async with serving(store) as base:
        reply = await http_request("GET", f"{base}/report?since=1h")
    assert (reply.status, reply.content_type) == (200, "text/html")
    assert b'<h2 id="over-time">Scores over time</h2>' in reply.body
    assert b"No scores in this period." in reply.body


async def test_a_table_the_store_no_longer_has_is_a_500_naming_no_page(store: Store) -> None:
    await store.query(f"DROP TABLE {store.quoted_database}.scores SYNC")
    async with serving(store) as base:
        reply = await http_request("GET", f"{base}/report")
    assert (reply.status, reply.content_type) == (500, "application/json")
    assert reply.json() == {"error": API_STORE_FAILED}


async def test_a_closed_store_is_an_error_status_not_a_page(store: Store) -> None:
    async with serving(store) as base:
        await store.shutdown()
        reply = await http_request("GET", f"{base}/report")
    assert (reply.status, reply.content_type) == (500, "application/json")
    assert reply.json() == {"error": API_STORE_FAILED}
