"""The ClickHouse database that holds tracescore's tables: its name, checked, and where it comes from.

One setting serves the service, every command, ``tracescore schema`` and the deployment files:
``store_database`` (``--database``, ``TRACESCORE_STORE_DATABASE``). Without it, a server DSN's path
names the database (``http://host:8123/analytics``: ``analytics``), as it does for clickhouse-connect
and clickhouse-client; without either, ``default``, where tracescore has always written and where the
collector's ClickHouse exporter and Grafana's ClickHouse plugin look unless told otherwise. A chDB
DSN's path is the data directory, never a database.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

DEFAULT_DATABASE = "default"

# A name that needs no quoting anywhere it goes: SQL typed by hand, clickhouse-client's --database,
# a Grafana data source, a Distributed engine's arguments.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ALLOWED = "letters, digits and _, not starting with a digit"
# ClickHouse's own databases: tracescore's tables do not belong there.
_RESERVED = frozenset({"system", "information_schema"})


def check_database(name: str) -> str:
    """``name`` if it is a database name tracescore accepts; else ValueError saying what is allowed."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a database name tracescore accepts: use {ALLOWED}")
    if name.lower() in _RESERVED:
        raise ValueError(f"{name!r} is ClickHouse's own database: choose another for tracescore's tables")
    return name


def dsn_database(dsn: str) -> str | None:
    """The database a server DSN's path names (``http://host:8123/analytics``), checked; None for no
    path or a chDB store (whose path is its data directory)."""
    parts = urlsplit(dsn.strip())
    if parts.scheme.lower() not in ("http", "https"):
        return None
    path = parts.path.strip("/")
    if not path:
        return None
    if "/" in path:
        raise ValueError(
            f"the path of a ClickHouse DSN names one database (http://host:8123/analytics), not {path!r}"
        )
    try:
        return check_database(path)
    except ValueError as exc:
        raise ValueError(f"the DSN's path: {exc}") from None


def resolve_database(setting: str | None, dsn: str) -> str:
    """The database in use: the setting, else the DSN's path, else ``default``."""
    return setting or dsn_database(dsn) or DEFAULT_DATABASE
