"""A ClickHouse server store's user, password and TLS settings, given apart from the DSN, reach
clickhouse-connect: checked at the network boundary, against a local HTTPS server (a throwaway CA)
that records what the client sends and answers as ClickHouse does to a wrong password, quoting the
password back. The password is in no error, description, health, repr or CLI output."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.support.serve import ENV, tracescore
from tests.support.tls import Pki, make_pki
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.config import ConfigError
from tracescore.schemas.errors import StoreError

PASSWORD = "s3cret-clickhouse-password"


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@dataclass
class FakeServer:
    """What reached the server: one Authorization header per request."""

    port: int = 0
    authorizations: list[str | None] = field(default_factory=list)
    peer_certificates: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def basic_credentials(self) -> set[str]:
        return {
            base64.b64decode(value.removeprefix("Basic ")).decode()
            for value in self.authorizations
            if value and value.startswith("Basic ")
        }


@asynccontextmanager
async def clickhouse_like(pki: Pki, require_client_cert: bool = False) -> AsyncIterator[FakeServer]:
    """An HTTPS server refusing every query as ClickHouse refuses a wrong password (code 516)."""
    recorded = FakeServer()

    async def refuse(request: web.Request) -> web.Response:
        recorded.authorizations.append(request.headers.get("Authorization"))
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        recorded.peer_certificates.append(ssl_object.getpeercert() if ssl_object else None)
        body = (
            f"Code: 516. DB::Exception: alice: Authentication failed: password is incorrect, or there is "
            f"no user with such name. (password sent: {PASSWORD}) (AUTHENTICATION_FAILED)"
        )
        return web.Response(status=403, text=body, headers={"X-ClickHouse-Exception-Code": "516"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.cert, pki.key)
    if require_client_cert:
        context.load_verify_locations(cafile=str(pki.ca))
        context.verify_mode = ssl.CERT_REQUIRED
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    recorded.port = runner.addresses[0][1]
    try:
        yield recorded
    finally:
        await runner.cleanup()


def _store(**overrides: Any) -> Store:
    return Store.from_config(load_config(overrides=overrides, environ={}))


async def _start_fails(store: Store) -> StoreError:
    with pytest.raises(StoreError) as caught:
        await store.start()
    await store.shutdown()
    return caught.value


async def test_user_password_and_ca_reach_clickhouse_connect(pki: Pki, tmp_path: Path) -> None:
    async with clickhouse_like(pki) as server:
        config = load_config(
            overrides={"store": server.url, "store_user": "alice", "store_tls_ca": str(pki.ca)},
            environ={"TRACESCORE_STORE_PASSWORD": PASSWORD},
        )
        store = Store.from_config(config)
        error = await _start_fails(store)
    # Over TLS on a port other than 8443 (clickhouse-connect alone would have sent it in clear text),
    # the server checked against the CA.
    assert server.basic_credentials() == {f"alice:{PASSWORD}"}
    assert "AUTHENTICATION_FAILED" in str(error) and not error.retriable
    assert "[REDACTED]" in str(error)  # the server quoted the password back
    for text in (str(error), store.description, repr(store.health()), repr(config), str(config)):
        assert PASSWORD not in text
    assert store.description == server.url


async def test_the_password_file_is_read_and_wins_over_nothing_in_the_dsn(pki: Pki, tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    async with clickhouse_like(pki) as server:
        store = _store(
            store=f"{server.url}/?compress=0",
            store_user="bob",
            store_password_file=str(secret),
            store_tls_ca=str(pki.ca),
        )
        await _start_fails(store)
    assert server.basic_credentials() == {f"bob:{PASSWORD}"}


async def test_a_server_whose_certificate_is_not_trusted_is_not_reached(pki: Pki) -> None:
    async with clickhouse_like(pki) as server:
        error = await _start_fails(_store(store=server.url, store_user="alice"))  # the system's CAs
        assert server.authorizations == []
        assert error.retriable and "certificate" in str(error).lower()

        await _start_fails(_store(store=server.url, store_user="alice", store_verify=False))
        assert len(server.authorizations) >= 1  # not checked: reached


async def test_a_client_certificate_is_presented_for_mutual_tls(pki: Pki) -> None:
    async with clickhouse_like(pki, require_client_cert=True) as server:
        await _start_fails(_store(store=server.url, store_user="alice", store_tls_ca=str(pki.ca)))
        assert server.authorizations == []  # refused in the handshake
        await _start_fails(
            _store(
                store=server.url,
                store_user="alice",
                store_tls_ca=str(pki.ca),
                store_tls_cert=str(pki.client_cert),
                store_tls_key=str(pki.client_key),
            )
        )
    assert server.peer_certificates and server.peer_certificates[-1] is not None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"store_user": "alice"}, "store_user apply to a ClickHouse server store"),
        ({"store": "http://ch:8123", "store_tls_ca": "ca.pem"}, "store_tls_ca need an https:// store"),
        (
            {"store": "https://ch:8443", "store_password": "a", "store_password_file": "f"},
            "not both",
        ),
        ({"store": "https://u:p@ch:8443", "store_password": "a"}, "holds a password already"),
        ({"store": "https://ch:8443", "store_tls_key": "k.pem"}, "store_tls_key needs store_tls_cert"),
    ],
)
def test_server_options_are_checked_with_the_key_named(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=overrides, environ={})


def test_missing_files_are_named_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"store_tls_ca .*missing.pem: no such file"):
        _store(store="https://ch:8443", store_tls_ca=str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match=r"store_password_file .*: cannot read it"):
        _store(store="https://ch:8443", store_password_file=str(tmp_path / "nothing"))


async def test_serve_never_prints_the_password(pki: Pki, tmp_path: Path) -> None:
    async with clickhouse_like(pki) as server:
        env = {
            **ENV,
            "TRACESCORE_STORE": server.url,
            "TRACESCORE_STORE_USER": "alice",
            "TRACESCORE_STORE_PASSWORD": PASSWORD,
            "TRACESCORE_STORE_TLS_CA": str(pki.ca),
        }
        args = ("-v", "serve", "--http-port", "0", "--grpc-port", "0")
        done = await asyncio.to_thread(tracescore, *args, env=env)
    assert done.returncode == 2
    assert "AUTHENTICATION_FAILED" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr
