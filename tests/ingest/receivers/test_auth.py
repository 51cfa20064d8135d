"""Bearer-token authentication on OTLP/HTTP, OTLP/gRPC (the real OTel SDK exporter) and the API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.support.otlp import EXPORT_METHOD, Recording, emit_agent_trace, proto_request, proto_span
from tests.support.service import running_service, service_config
from tracescore.ingest.receivers.auth import bearer_matches
from tracescore.ingest.service import Service

TOKEN = "s3cret-token-for-tests"
PROTOBUF = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")  # as a mounted secret often ends
    async with running_service(service_config(tmp_path, **{"receiver.auth_token_file": str(secret)})) as svc:
        yield svc


def _body() -> bytes:
    return proto_request(proto_span("invoke_agent")).SerializeToString()


async def _post(service: Service, headers: dict[str, str]) -> tuple[int, bytes, str | None]:
    url = f"http://127.0.0.1:{service.http.port}/v1/traces"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=_body(), headers={**PROTOBUF, **headers}) as resp,
    ):
        return resp.status, await resp.read(), resp.headers.get("WWW-Authenticate")


async def _get(service: Service, path: str, headers: dict[str, str] | None = None) -> int:
    url = f"http://127.0.0.1:{service.http.port}{path}"
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as resp:
        return resp.status


async def test_otlp_http_wants_the_token(service: Service) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        status, body, challenge = await _post(service, headers)
        assert (status, challenge) == (401, 'Bearer realm="tracescore"')
        assert status_pb2.Status.FromString(body).code == code_pb2.UNAUTHENTICATED
    status, _, _ = await _post(service, {"Authorization": f"bearer {TOKEN}"})
    assert status == 200
    assert (
        service.metrics.registry.get_sample_value(
            "tracescore_export_requests_total", {"transport": "http", "outcome": "unauthenticated"}
        )
        == 3
    )


async def test_the_api_and_metrics_want_the_token_and_the_probes_do_not(service: Service) -> None:
    labels = "/api/annotations?trace_id=5dbdf98695bd5785f3d3e61006ad2dba"
    for path in (
        "/api/scores?limit=1",
        "/api/decisions?limit=1",
        labels,
        "/api/annotate?scorer=tone",
        "/metrics",
    ):
        assert await _get(service, path) == 401
        assert await _get(service, path, {"Authorization": f"Bearer {TOKEN}"}) == 200
    assert await _get(service, "/healthz") == 200
    assert await _get(service, "/readyz") == 200


async def test_otlp_grpc_wants_the_token_in_its_metadata(service: Service) -> None:
    endpoint = f"127.0.0.1:{service.grpc.port}"
    refused = Recording(OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=5))
    accepted = Recording(
        OTLPSpanExporter(
            endpoint=endpoint, insecure=True, timeout=5, headers={"authorization": f"Bearer {TOKEN}"}
        )
    )
    await asyncio.to_thread(emit_agent_trace, refused)
    await asyncio.to_thread(emit_agent_trace, accepted)
    assert refused.results == [SpanExportResult.FAILURE]
    assert accepted.results == [SpanExportResult.SUCCESS]

    async with grpc.aio.insecure_channel(endpoint) as channel:
        export = channel.unary_unary(EXPORT_METHOD)
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await export(_body(), metadata=(("authorization", "Bearer wrong"),))
    assert failed.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_metrics_can_be_left_open_for_a_scraper(tmp_path: Path) -> None:
    overrides = {"receiver.auth_token": TOKEN, "receiver.metrics_open": True}
    async with running_service(service_config(tmp_path, **overrides)) as service:
        assert await _get(service, "/metrics") == 200
        assert await _get(service, "/api/scores?trace_id=5dbdf98695bd5785f3d3e61006ad2dba") == 401


def test_tokens_are_compared_whole() -> None:
    assert bearer_matches(f"Bearer {TOKEN}", TOKEN) and bearer_matches(f"BEARER  {TOKEN} ", TOKEN)
    for value in (None, "", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x"):
        assert not bearer_matches(value, TOKEN)


def test_the_token_comes_from_one_place() -> None:
    with pytest.raises(ValueError, match="not both"):
        service_config(Path("/nonexistent"), **{"receiver.auth_token": "a", "receiver.auth_token_file": "f"})
