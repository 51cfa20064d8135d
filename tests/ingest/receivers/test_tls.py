"""TLS on both receivers, with a throwaway CA: the real OTel SDK gRPC exporter and an HTTPS client that
trust the CA get through; a client that does not trust it, and plain text on the TLS ports, do not;
mutual TLS wants the client's certificate; bad settings stop the start with the key named."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.support.otlp import EXPORT_METHOD, Recording, emit_agent_trace, proto_request, proto_span
from tests.support.serve import tracescore
from tests.support.service import running_service, service_config
from tests.support.tls import Pki, make_pki
from tracescore.ingest.service import Service
from tracescore.schemas.config import ConfigError

PROTOBUF = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
async def service(tmp_path: Path, pki: Pki) -> AsyncIterator[Service]:
    tls = {"receiver.tls_cert": str(pki.cert), "receiver.tls_key": str(pki.key)}
    async with running_service(service_config(tmp_path, **tls)) as svc:
        yield svc


def _body() -> bytes:
    return proto_request(proto_span("invoke_agent")).SerializeToString()


async def _post(url: str, ssl_context: ssl.SSLContext | bool) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=_body(), headers=PROTOBUF, ssl=ssl_context) as resp,
    ):
        return resp.status


def _client_context(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key) if key else None)
    return context


async def test_the_sdk_exporter_sends_over_tls_with_the_ca(service: Service, pki: Pki) -> None:
    credentials = grpc.ssl_channel_credentials(root_certificates=pki.read("ca"))
    exporter = Recording(
        OTLPSpanExporter(
            endpoint=f"127.0.0.1:{service.grpc.port}", insecure=False, credentials=credentials, timeout=10
        )
    )
    emitted = await asyncio.to_thread(emit_agent_trace, exporter)
    assert exporter.results == [SpanExportResult.SUCCESS]
    rows = await service.store.query(
        "SELECT count() AS n FROM otel_traces WHERE TraceId = {t:String}", {"t": emitted.trace_id}
    )
    assert rows[0]["n"] == 3  # acknowledged means stored


async def test_https_post_with_the_ca_is_accepted(service: Service, pki: Pki) -> None:
    base = f"https://127.0.0.1:{service.http.port}"
    assert await _post(f"{base}/v1/traces", _client_context(pki.ca)) == 200
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{base}/healthz", ssl=_client_context(pki.ca)) as resp,
    ):
        assert resp.status == 200


async def test_a_client_that_does_not_trust_the_ca_fails_the_handshake(
    service: Service, tmp_path: Path
) -> None:
    other = make_pki(tmp_path / "other", name="other")
    url = f"https://127.0.0.1:{service.http.port}/v1/traces"
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _post(url, _client_context(other.ca))
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _post(url, True)  # the system's CAs

    credentials = grpc.ssl_channel_credentials(root_certificates=other.read("ca"))
    async with grpc.aio.secure_channel(f"127.0.0.1:{service.grpc.port}", credentials) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await channel.unary_unary(EXPORT_METHOD)(_body(), timeout=5)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "handshake" in (failed.value.details() or "").lower()


async def test_plain_text_to_the_tls_ports_fails(service: Service) -> None:
    with pytest.raises(aiohttp.ClientError):
        await _post(f"http://127.0.0.1:{service.http.port}/v1/traces", False)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await channel.unary_unary(EXPORT_METHOD)(_body(), timeout=5)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    rows = await service.store.query("SELECT count() AS n FROM otel_traces")
    assert rows[0]["n"] == 0


async def test_mutual_tls_wants_a_client_certificate_from_the_ca(tmp_path: Path, pki: Pki) -> None:
    tls = {
        "receiver.tls_cert": str(pki.cert),
        "receiver.tls_key": str(pki.key),
        "receiver.tls_client_ca": str(pki.ca),
    }
    async with running_service(service_config(tmp_path, **tls)) as service:
        url = f"https://127.0.0.1:{service.http.port}/v1/traces"
        with pytest.raises(aiohttp.ClientError):
            await _post(url, _client_context(pki.ca))
        assert await _post(url, _client_context(pki.ca, pki.client_cert, pki.client_key)) == 200

        endpoint = f"127.0.0.1:{service.grpc.port}"
        anonymous = grpc.ssl_channel_credentials(root_certificates=pki.read("ca"))
        async with grpc.aio.secure_channel(endpoint, anonymous) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await channel.unary_unary(EXPORT_METHOD)(_body(), timeout=5)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        known = grpc.ssl_channel_credentials(pki.read("ca"), pki.read("client_key"), pki.read("client_cert"))
        async with grpc.aio.secure_channel(endpoint, known) as channel:
            assert await channel.unary_unary(EXPORT_METHOD)(_body(), timeout=5) == b""


def test_cert_and_key_come_together() -> None:
    with pytest.raises(ConfigError, match=r"receiver.tls_cert is set but receiver.tls_key is not"):
        service_config(Path("/nonexistent"), **{"receiver.tls_cert": "server.pem"})
    with pytest.raises(ConfigError, match=r"receiver.tls_key is set but receiver.tls_cert is not"):
        service_config(Path("/nonexistent"), **{"receiver.tls_key": "server.key"})
    with pytest.raises(ConfigError, match=r"receiver.tls_client_ca needs receiver.tls_cert"):
        service_config(Path("/nonexistent"), **{"receiver.tls_client_ca": "ca.pem"})


async def test_bad_files_stop_the_start_naming_the_key(tmp_path: Path, pki: Pki) -> None:
    other = make_pki(tmp_path / "other", name="other")
    cases = [
        ({"receiver.tls_cert": str(tmp_path / "missing.pem"), "receiver.tls_key": str(pki.key)}, "tls_cert"),
        ({"receiver.tls_cert": str(pki.cert), "receiver.tls_key": str(other.key)}, "do not load"),
        ({"receiver.tls_cert": str(pki.cert), "receiver.tls_key": str(tmp_path)}, "tls_key"),
    ]
    for overrides, message in cases:
        with pytest.raises(ValueError, match=message):
            async with running_service(service_config(tmp_path, **overrides)):
                pass


def test_serve_flags_and_environment_name_the_missing_half(tmp_path: Path, pki: Pki) -> None:
    done = tracescore("serve", "--store", str(tmp_path / "store"), "--tls-cert", str(pki.cert))
    assert done.returncode == 2
    assert "receiver.tls_cert is set but receiver.tls_key is not" in done.stderr
