"""Where the store is: a ``--store`` value as a clickhouse-connect DSN (a chDB directory or a ClickHouse
server), how it is shown without credentials, and a server's options kept out of the DSN."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import urllib3

from tracescore.schemas.errors import StoreError


def resolve_dsn(dsn: str) -> str:
    """The clickhouse-connect DSN for a ``--store`` value: a server URL as-is, a path as ``chdb:///abs``."""
    value = dsn.strip()
    scheme = urlsplit(value).scheme.lower()
    if scheme in ("http", "https"):
        return value
    if scheme == "chdb":
        path = value[len("chdb://") :]
        if not path.startswith("/"):
            raise StoreError(f"chDB store {dsn!r} needs an absolute path: chdb:///abs/path")
        return value
    return "chdb://" + os.path.abspath(os.path.expanduser(value))


def without_database(dsn: str) -> str:
    """A server DSN without the database its path names: the store connects to the server first and
    creates its database if missing (clickhouse-connect would query inside it before it exists)."""
    if dsn.startswith("chdb:"):
        return dsn
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "", parts.query, parts.fragment))


def describe_dsn(dsn: str) -> str:
    """The DSN without credentials or query string, safe to log and print."""
    if dsn.startswith("chdb:"):
        return dsn
    parts = urlsplit(dsn)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


@dataclass(frozen=True)
class ServerOptions:
    """What a ClickHouse server store needs beside its DSN (config keys ``store_user``,
    ``store_password``, ``store_tls_ca``, ``store_tls_cert``, ``store_tls_key``, ``store_verify``)."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    verify: bool = True

    def client_kwargs(self) -> dict[str, Any]:
        """clickhouse-connect ``get_client`` arguments; given ones win over the DSN's."""
        kwargs: dict[str, Any] = {}
        if self.user:
            kwargs["username"] = self.user
        if self.password is not None:
            kwargs["password"] = self.password
        if self.tls_ca:
            kwargs["ca_cert"] = self.tls_ca
        if self.tls_cert:
            kwargs["client_cert"] = self.tls_cert
        if self.tls_key:
            kwargs["client_cert_key"] = self.tls_key
        if not self.verify:
            kwargs["verify"] = False
            # The operator chose it; urllib3 would otherwise warn on every request.
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        return kwargs
