"""The ClickHouse client of every tracescore table, in embedded chDB or on a ClickHouse server.

One client serves both through clickhouse-connect: a plain path or ``chdb:///abs/path`` opens chDB
in-process; ``http(s)://user:password@host:port`` reaches a server, whose user, password and TLS
settings may also be given apart from the DSN (``ServerOptions``, keeping secrets out of it). Every
client call runs on one dedicated worker thread, so the event loop never blocks and chDB sees one
caller at a time. The DDL lives in ``schemas/sql/*.sql`` and is applied, idempotently, on start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import urlsplit

import clickhouse_connect
from clickhouse_connect.driver.binding import quote_identifier
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError, OperationalError

from tracescore.ingest.configuration.service_secrets import existing_file, secret_value
from tracescore.ingest.store.ddl import COLUMN_TYPES
from tracescore.ingest.store.ddl import (
    DDL_FILES as DDL_FILES,  # re-exported: the store's tables, in apply order
)
from tracescore.ingest.store.ddl import load_ddl as load_ddl
from tracescore.ingest.store.dsn import ServerOptions, describe_dsn, resolve_dsn, without_database
from tracescore.ingest.store.engine_open import closed_here, open_embedded
from tracescore.ingest.store.free_space import (
    POLL_SECONDS,
    SERVER_POLL_SECONDS,
    FreeSpaceGuard,
    broken_parts,
    local_space,
    server_space,
    set_merges,
)
from tracescore.ingest.store.retriable import store_error
from tracescore.ingest.store.schema_changes import apply_schema
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.errors import StoreError, StoreFull
from tracescore.schemas.secrets import register_secret, scrub
from tracescore.schemas.store_config import DEFAULT_STORE_MIN_FREE_BYTES
from tracescore.schemas.store_database import check_database, dsn_database, resolve_database

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


class Store:
    """One ClickHouse database holding the tracescore tables: lifecycle, inserts and queries. The
    pipeline writes through the span and score sinks (``ingest.store.span_sink``, ``.score_sink``)."""

    def __init__(
        self,
        dsn: str,
        database: str | None = None,
        server: ServerOptions | None = None,
        *,
        min_free_bytes: int = DEFAULT_STORE_MIN_FREE_BYTES,
        min_free_ratio: float = 0.0,
    ) -> None:
        self._dsn = resolve_dsn(dsn)
        register_secret(urlsplit(self._dsn).password)  # a password in the DSN is as secret as any
        self._server = server or ServerOptions()
        # None: the DSN's path, else "default" (schemas.store_database).
        self._database = check_database(resolve_database(database, self._dsn))
        in_dsn = dsn_database(self._dsn)
        if in_dsn is not None and in_dsn != self._database:
            message = "store_database %s wins over the database %s that the store DSN's path names"
            logger.warning(message, self._database, in_dsn)
        self._quoted_db = quote_identifier(self._database)
        self._client: Client | None = None
        self._engine: Client | None = None  # the one open on the worker thread: what shutdown closes
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        # Table -> column -> type, given with each insert so that the client does not look the table
        # up (DESCRIBE TABLE) first: our tables' types from our DDL, any other table's read once.
        self._column_types: dict[str, dict[str, str]] = dict(COLUMN_TYPES)
        self.last_error: str | None = None  # of the last statement, None once one succeeds again
        self.last_error_retriable = False
        # The disk's free-space floor: read locally before each write for chDB, polled on a server.
        local = self._dsn[len("chdb://") :] if self.embedded else None
        self.free_space = FreeSpaceGuard(
            min_free_bytes,
            min_free_ratio,
            read=(lambda: local_space(local)) if local is not None else None,
        )
        self._merges_stopped = False
        self._watcher: asyncio.Task[None] | None = None

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
        return cls(
            config.store,
            config.database,
            server=options,
            min_free_bytes=int(config.store_min_free_bytes),
            min_free_ratio=config.store_min_free_ratio,
        )

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
        logger.debug("store open: %s, database %s", self.description, self._database)
        if self.free_space.enabled:
            await self._watch_once()
            self._watcher = asyncio.create_task(self._watch_free_space(), name="store-free-space")

    async def shutdown(self) -> None:
        self._closed = True
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        executor = self._executor
        self._executor, self._client = None, None
        if executor is None:
            return
        # Queued behind any write still running, so shutdown flushes; it closes the engine open at that
        # moment (one the watch opened again meanwhile included), releasing chDB's one-path-per-process hold.
        await asyncio.get_running_loop().run_in_executor(executor, self._close_engine)
        executor.shutdown(wait=False)

    async def query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of a SELECT as dicts; parameters bind ClickHouse-style ``{name:Type}`` placeholders."""
        self._require_client()

        def run() -> list[dict[str, Any]]:
            # The client of the moment it runs: the embedded store may have been opened again meanwhile.
            return list(self._require_client().query(sql, parameters=parameters).named_results())

        return await self._on_worker(run, what="query")

    async def command(self, sql: str, parameters: dict[str, Any] | None = None) -> None:
        """Run a statement that returns no rows (a lightweight ``DELETE``); parameters as ``query``."""
        self._require_client()
        await self._on_worker(lambda: self._require_client().command(sql, parameters=parameters), "command")

    async def insert(self, table: str, rows: list[list[Any]], columns: Sequence[str]) -> None:
        """Append ``rows`` (values in ``columns`` order) to ``table`` of this store's database."""
        self._require_client()
        what = f"insert into {table}"

        def run() -> None:
            self.free_space.check_write(what)
            self._insert(self._require_client(), table, rows, columns)
            self.free_space.check_written(what)

        await self._on_worker(run, what=what)

    async def insert_built(self, build: Callable[[], Sequence[TableRows]], what: str) -> None:
        """Build rows on the store's worker thread (the event loop never pays for turning a large
        batch into rows) and insert them table by table, in order."""
        self._require_client()

        def run() -> None:
            self.free_space.check_write(what)
            client = self._require_client()
            for table, columns, rows in build():
                # Slices: the embedded engine holds the GIL while it inserts, and the event loop
                # must get it back every few milliseconds.
                for start in range(0, len(rows), INSERT_SLICE_ROWS):
                    part = rows[start : start + INSERT_SLICE_ROWS]
                    self._insert(client, table, part, columns)
                    # clickhouse-connect's insert context is a reference cycle holding this list: it
                    # lives until the cycle collector runs, its rows need not.
                    part.clear()
            self.free_space.check_written(what)

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
        except StoreFull:
            raise  # the floor refused it before the engine saw it: health says so through the disk
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
        """What /readyz shows: ok while the last statement succeeded, failing since one did not; and
        the disk's free space against its floor."""
        status = "ok" if self._client is not None and self.last_error is None else "failing"
        if self.free_space.refusing:
            status = "refusing"
        body: dict[str, object] = {
            "status": status,
            "store": self.description,
            "database": self._database,
            "error": self.last_error,
        }
        if self.free_space.enabled:
            body["disk"] = self.free_space.health()
        return body

    async def _watch_free_space(self) -> None:
        """Keep the free-space reading fresh: stop intake and merges under the floor, resume above."""
        period = POLL_SECONDS if self.embedded else SERVER_POLL_SECONDS
        while True:
            await asyncio.sleep(period)
            try:
                await self._watch_once()
            except StoreError as exc:  # a server that cannot be asked: the next round tries again
                logger.debug("reading the store's free space failed: %s", exc)
            except Exception:  # a watch that stopped would leave a refusing store refusing for good
                logger.exception("watching the store's free space failed; the next round tries again")

    async def _watch_once(self) -> None:
        if self.embedded:
            refusing = self.free_space.refresh()
            if refusing != self._merges_stopped:
                # Stopping also cancels the merges under way: none of them may meet the end of the disk.
                client = self._require_client()
                await self._on_worker(lambda: set_merges(client, running=not refusing), what="toggle merges")
                self._merges_stopped = refusing
            if self.free_space.take_ran_out():
                # At once, full disk or not: the parts a damaged merge came from are kept only a while.
                set_aside = await self._on_worker(self._reopen, what="open the store again")
                found = (
                    f"set aside {len(set_aside)} damaged part(s) ({', '.join(set_aside)}) and took back "
                    "the parts they were merged from"
                    if set_aside
                    else "found no damaged part"
                )
                logger.warning(
                    "the store's disk ran out while the engine may have been writing: the store was "
                    "opened again and the engine %s",
                    found,
                )
            return
        client = self._require_client()
        space = await self._on_worker(lambda: server_space(client), what="read system.disks")
        if space is not None:
            self.free_space.observe(space)

    def _connect(self) -> Client:
        """Open the client and bring the schema to what the DDL says (worker thread)."""
        client = self._open_client()
        try:
            apply_schema(client, self._database, self.free_space, embedded=self.embedded)
            # Unqualified table names in query() resolve to our database.
            client.database = self._database
        except BaseException:
            self._close(client)
            raise
        self._engine = client
        return client

    def _close(self, client: Client) -> None:
        """Close a client (worker thread), releasing this process's hold on an embedded directory."""
        if self._engine is client:
            self._engine = None
        client.close()
        if self.embedded:
            closed_here(self._dsn[len("chdb://") :])

    def _close_engine(self) -> None:
        if self._engine is not None:
            self._close(self._engine)

    def _reopen(self) -> list[str]:
        """Close the embedded engine and open it again (worker thread): on opening, it checks every
        part and sets the damaged ones aside. Returns those it set aside (table/part)."""
        old = self._require_client()
        before = broken_parts(old, self._database)
        # self._client stays set meanwhile: callers on the event loop only check that the store is
        # started; what they queue runs on this thread after the new client is in place.
        self._close(old)
        if self._closed:  # shut down meanwhile: its close comes next on this thread
            return []
        client = self._open_client()
        self._engine = client
        client.database = self._database
        if self._merges_stopped:  # a new engine merges again: not on a disk under its floor
            set_merges(client, running=False)
        if not self._closed:
            self._client = client
        return sorted(broken_parts(client, self._database) - before)

    def _open_client(self) -> Client:
        if not self.embedded:
            try:
                # clickhouse-connect reads TLS from the port (443, 8443), not from the DSN's scheme:
                # without interface=, https://host:9440 would send the password in clear text.
                return clickhouse_connect.get_client(
                    dsn=without_database(self._dsn),
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
        return open_embedded(self._dsn, EMBEDDED_ENGINE_OPTIONS)
