"""The ClickHouse client of every tracescore table, in embedded chDB or on a ClickHouse server.

One client serves both through clickhouse-connect: a plain path or ``chdb:///abs/path`` opens chDB
in-process; ``http(s)://user:password@host:port`` reaches a server, whose user, password and TLS
settings may also be given apart from the DSN (``ServerOptions``, keeping secrets out of it). Every
client call runs on one dedicated worker thread, so the event loop never blocks and chDB sees one
caller at a time. The DDL lives in ``schemas/sql/*.sql`` and is applied, idempotently, on start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import clickhouse_connect
import urllib3
from clickhouse_connect.driver.binding import quote_identifier
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError, OperationalError

from ingest.credentials import existing_file, secret_value
from ingest.store.ddl import COLUMN_TYPES
from ingest.store.ddl import DDL_FILES as DDL_FILES  # re-exported: the store's tables, in apply order
from ingest.store.ddl import load_ddl as load_ddl
from schemas.config import ServiceConfig
from schemas.errors import StoreError, StoreInUse
from schemas.secrets import register_secret, scrub

logger = logging.getLogger(__name__)

T = TypeVar("T")
INSERT_SLICE_ROWS = 5_000
# The embedded engine merges parts one at a time. Each merge of the wide span tables holds buffers
# for every column of every part it reads, and by default up to 32 ran at once: under a flood with
# a 20 MB request at memory_limit 512 MiB the process peaked at 101-108% of the limit; one at a
# time, 95-100% (measured), and intake got faster (fewer refusals while merges hold memory).
EMBEDDED_ENGINE_OPTIONS = {"background_pool_size": "1", "background_merges_mutations_concurrency_ratio": "1"}
# One insert: table, column names, rows (values in column order).
TableRows = tuple[str, Sequence[str], list[list[Any]]]

# Server error codes worth another try: the server is busy, short of memory, or a replica lags.
RETRIABLE_CODES = frozenset(
    {
        3,  # UNEXPECTED_END_OF_FILE (a connection cut mid-answer)
        159,  # TIMEOUT_EXCEEDED
        202,  # TOO_MANY_SIMULTANEOUS_QUERIES
        203,  # NO_FREE_CONNECTION
        209,  # SOCKET_TIMEOUT
        210,  # NETWORK_ERROR
        241,  # MEMORY_LIMIT_EXCEEDED
        242,  # TABLE_IS_READ_ONLY (a replica lost its Keeper session)
        252,  # TOO_MANY_PARTS (inserts faster than merges)
        285,  # TOO_FEW_LIVE_REPLICAS
        319,  # UNKNOWN_STATUS_OF_INSERT
        425,  # SYSTEM_ERROR
        999,  # KEEPER_EXCEPTION
    }
)
_ERROR_CODE = re.compile(r"\bCode:\s*(\d+)")


def store_error(what: str, exc: ClickHouseError) -> StoreError:
    """The ``StoreError`` for a clickhouse-connect failure, classified once: the server unreachable
    or one of ``RETRIABLE_CODES`` is retriable; the rest (bad SQL, a missing table, a refused row,
    authentication) fails the same way again."""
    code = _ERROR_CODE.search(str(exc))
    retriable = isinstance(exc, OperationalError) or (
        code is not None and int(code.group(1)) in RETRIABLE_CODES
    )
    # scrub: a driver or a proxy in front of the server may quote the credentials back.
    return StoreError(scrub(f"{what} failed: {exc}"), retriable=retriable)


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


class Store:
    """One ClickHouse database holding the tracescore tables: lifecycle, inserts and queries.

    The pipeline writes through the span sink (``ingest.store.span_sink``) and the score sink
    (``ingest.store.score_sink``), both over one ``Store``.
    """

    def __init__(self, dsn: str, database: str = "default", server: ServerOptions | None = None) -> None:
        self._dsn = resolve_dsn(dsn)
        register_secret(urlsplit(self._dsn).password)  # a password in the DSN is as secret as any
        self._server = server or ServerOptions()
        self._database = database
        self._quoted_db = quote_identifier(database)
        self._client: Client | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        # Table -> column -> type, given with each insert so that the client does not look the table
        # up (DESCRIBE TABLE) first: our tables' types from our DDL, any other table's read once.
        self._column_types: dict[str, dict[str, str]] = dict(COLUMN_TYPES)
        self.last_error: str | None = None  # of the last statement, None once one succeeds again
        self.last_error_retriable = False

    @classmethod
    def from_config(cls, config: ServiceConfig) -> Store:
        """The store of the service config: its DSN and the server options beside it (the password
        read from its file, and registered as a secret; TLS files checked to exist)."""
        options = ServerOptions(
            user=config.store_user,
            password=secret_value(config.store_password, config.store_password_file, "store_password"),
            tls_ca=existing_file(config.store_tls_ca, "store_tls_ca"),
            tls_cert=existing_file(config.store_tls_cert, "store_tls_cert"),
            tls_key=existing_file(config.store_tls_key, "store_tls_key"),
            verify=config.store_verify,
        )
        return cls(config.store, server=options)

    @property
    def description(self) -> str:
        return describe_dsn(self._dsn)

    @property
    def database(self) -> str:
        return self._database

    @property
    def quoted_database(self) -> str:
        """The database name quoted for SQL text (``{database}`` in the queries of the sinks)."""
        return self._quoted_db

    @property
    def embedded(self) -> bool:
        return self._dsn.startswith("chdb:")

    async def start(self) -> None:
        if self._client is not None:
            return
        if self._closed:
            raise StoreError(f"store {self.description} was shut down; build a new Store")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracescore-store")
        try:
            self._client = await self._on_worker(self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        if not self.embedded and not self._server.verify:
            logger.warning("store_verify is false: the certificate of %s is not checked", self.description)
        logger.info("store open: %s, database %s", self.description, self._database)

    async def shutdown(self) -> None:
        self._closed = True
        executor, client = self._executor, self._client
        self._executor, self._client = None, None
        if executor is None:
            return
        if client is not None:
            # Queued behind any write still running, so shutdown flushes; closing releases chDB's
            # one-data-path-per-process hold.
            await asyncio.get_running_loop().run_in_executor(executor, client.close)
        executor.shutdown(wait=False)

    async def query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of a SELECT as dicts; parameters bind ClickHouse-style ``{name:Type}`` placeholders."""
        client = self._require_client()

        def run() -> list[dict[str, Any]]:
            return list(client.query(sql, parameters=parameters).named_results())

        return await self._on_worker(run, what="query")

    async def insert(self, table: str, rows: list[list[Any]], columns: Sequence[str]) -> None:
        """Append ``rows`` (values in ``columns`` order) to ``table`` of this store's database."""
        client = self._require_client()

        def run() -> None:
            self._insert(client, table, rows, columns)

        await self._on_worker(run, what=f"insert into {table}")

    async def insert_built(self, build: Callable[[], Sequence[TableRows]], what: str) -> None:
        """Build rows on the store's worker thread (the event loop never pays for turning a large
        batch into rows) and insert them table by table, in order."""
        client = self._require_client()

        def run() -> None:
            for table, columns, rows in build():
                # Slices: the embedded engine holds the GIL while it inserts, and the event loop
                # must get it back every few milliseconds.
                for start in range(0, len(rows), INSERT_SLICE_ROWS):
                    part = rows[start : start + INSERT_SLICE_ROWS]
                    self._insert(client, table, part, columns)
                    # clickhouse-connect's insert context is a reference cycle holding this list: it
                    # lives until the cycle collector runs, its rows need not.
                    part.clear()

        await self._on_worker(run, what=what)

    def _insert(
        self, client: Client, table: str, rows: Sequence[Sequence[Any]], columns: Sequence[str]
    ) -> None:
        """One insert, on the worker thread, with the columns' types from the cache."""
        types = self._column_types.get(table)
        if types is None:
            described = client.query(
                "SELECT name, type FROM system.columns "
                "WHERE database = {db:String} AND table = {table:String}",
                parameters={"db": self._database, "table": table},
            )
            types = {name: kind for name, kind in described.result_rows}
            if types:  # a table that is not there is left to the insert to report
                self._column_types[table] = types
        known = all(column in types for column in columns)
        client.insert(
            table,
            rows,
            column_names=list(columns),
            column_type_names=[types[column] for column in columns] if known else None,
            database=self._database,
        )

    def _require_client(self) -> Client:
        if self._client is None:
            state = "shut down" if self._closed else "not started"
            raise StoreError(f"store {self.description} is {state}")
        return self._client

    async def _on_worker(self, call: Callable[[], T], what: str = "") -> T:
        if self._executor is None:
            raise StoreError(f"store {self.description} is not started")
        try:
            result = await asyncio.get_running_loop().run_in_executor(self._executor, call)
        except StoreError as exc:
            self._failed(exc)
            raise
        except ClickHouseError as exc:
            error = store_error(f"{what} on {self.description}", exc)
            self._failed(error)
            raise error from exc
        self.last_error = None
        return result

    def _failed(self, error: StoreError) -> None:
        self.last_error = str(error)
        self.last_error_retriable = error.retriable

    def health(self) -> dict[str, object]:
        """What /readyz shows: ok while the last statement succeeded, failing since one did not."""
        status = "ok" if self._client is not None and self.last_error is None else "failing"
        return {"status": status, "store": self.description, "error": self.last_error}

    def _connect(self) -> Client:
        """Open the client and apply the DDL (worker thread)."""
        client = self._open_client()
        try:
            client.command(f"CREATE DATABASE IF NOT EXISTS {self._quoted_db}")
            for statement in load_ddl(self._database):
                client.command(statement)
            # Unqualified table names in query() resolve to our database.
            client.database = self._database
        except BaseException:
            client.close()
            raise
        return client

    def _open_client(self) -> Client:
        if not self.embedded:
            try:
                # clickhouse-connect reads TLS from the port (443, 8443), not from the DSN's scheme:
                # without interface=, https://host:9440 would send the password in clear text.
                return clickhouse_connect.get_client(
                    dsn=self._dsn,
                    interface=urlsplit(self._dsn).scheme.lower(),
                    **self._server.client_kwargs(),
                )
            except OperationalError as exc:
                raise StoreError(
                    scrub(f"cannot reach ClickHouse at {self.description}: {exc}"), retriable=True
                ) from exc
            except ClickHouseError as exc:
                raise StoreError(scrub(f"cannot open ClickHouse at {self.description}: {exc}")) from exc
            except (TypeError, ValueError) as exc:  # clickhouse-connect's answer to unknown DSN options
                raise StoreError(scrub(f"invalid ClickHouse DSN for {self.description}: {exc}")) from exc
        path = self._dsn[len("chdb://") :]
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the chDB data directory {path}: {exc}") from exc
        try:
            return clickhouse_connect.get_client(dsn=self._dsn, chdb_options=EMBEDDED_ENGINE_OPTIONS)
        except ClickHouseError as exc:
            if not os.access(path, os.W_OK):
                raise StoreError(f"the chDB data directory {path} is not writable: {exc}") from exc
            raise StoreInUse(
                f"cannot open the chDB data directory {path}: it is in use. chDB allows one data directory "
                "per process: another tracescore process holds this directory, or this process already has "
                f"another one open. Stop the other tracescore or choose another --store. (chDB: {exc})"
            ) from exc
