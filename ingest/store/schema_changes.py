"""What start-up must change in a store's schema: only the DDL statements the store does not already
satisfy, read from the engine's own catalogue first.

Every ``ALTER`` rewrites its table's metadata file, ``IF NOT EXISTS`` or not, and so does ``MODIFY
SETTING``. Run on every start, they wrote every table's metadata each time; one cut short by a full
disk left a table's metadata file empty, and the engine then refused to open the store at all (every
span and score in it out of reach). So a start that finds the store as the DDL describes it writes no
metadata at all, and one that has changes to make checks the disk first (``ingest.store.clickhouse``):

- ``CREATE DATABASE`` / ``CREATE TABLE`` / ``CREATE [MATERIALIZED] VIEW ... IF NOT EXISTS``: only for
  what ``system.databases`` / ``system.tables`` does not list;
- ``ALTER TABLE ... ADD COLUMN IF NOT EXISTS``: only the clauses whose column ``system.columns`` does not
  list (a table this start creates keeps the whole statement);
- ``ALTER TABLE <view> MODIFY QUERY``: only when the view's query, as the engine formats it, differs;
- table settings the service keeps on its embedded store (``merged_parts_settings``): only where a
  table's ``SETTINGS`` clause does not already hold the value.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from clickhouse_connect.driver.binding import quote_identifier
from clickhouse_connect.driver.client import Client

from tracescore.ingest.store.ddl import column_name, load_ddl, split_top
from tracescore.ingest.store.free_space import (
    MERGED_PARTS_SETTINGS,
    RETRY_AFTER_SECONDS,
    FreeSpaceGuard,
    server_space,
)
from tracescore.schemas.errors import StoreFull

log = logging.getLogger(__name__)

_CREATE_DATABASE = re.compile(r"^CREATE DATABASE IF NOT EXISTS (?P<db>\S+)$")
_CREATE = re.compile(
    r"^CREATE (?:TABLE|VIEW|MATERIALIZED VIEW) IF NOT EXISTS \S+?\.(?P<name>`(?:[^`]|``)+`|\w+)[\s(]"
)
_ALTER = re.compile(r"^ALTER TABLE \S+?\.(?P<name>`(?:[^`]|``)+`|\w+)\s+")
_ADD_COLUMN = re.compile(r"^ADD COLUMN IF NOT EXISTS\s+", re.IGNORECASE)
_MODIFY_QUERY = re.compile(r"^MODIFY QUERY\s+", re.IGNORECASE)
_SETTINGS = re.compile(r"\bSETTINGS\s+(?P<settings>.*)$", re.DOTALL)
_SETTINGS_LINE = re.compile(r"^SETTINGS .*$", re.MULTILINE)
_MERGE_TREE_ENGINE = re.compile(r"^\) ENGINE = \w*MergeTree\b", re.MULTILINE)
_SETTING = re.compile(r"(?P<name>\w+)\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'|[^,\s]+)")


def apply_schema(client: Client, database: str, free_space: FreeSpaceGuard, *, embedded: bool) -> None:
    """Bring the store's schema to what the DDL says, making only the changes it lacks (a store as the
    DDL describes it gets no metadata written at all) and none on a disk under its floor: then
    ``StoreFull`` says so (a change cut short by a full disk can leave a table unreadable)."""
    state = read_state(client, database)
    statements = [f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}", *load_ddl(database)]
    if embedded:  # tables made now are born with the embedded store's settings
        statements = [with_table_settings(statement, MERGED_PARTS_SETTINGS) for statement in statements]
    changes = needed_statements(state, statements, engine_formatter(client))
    # The embedded store's own table settings (a server keeps its own defaults).
    settings = merged_parts_settings(state, database, MERGED_PARTS_SETTINGS) if embedded else []
    if not changes and not settings:
        return
    _require_space(client, free_space, len(changes) + len(settings), embedded=embedded)
    for statement in changes:
        client.command(statement)
    if embedded and changes:  # the tables made now get the settings too
        settings = merged_parts_settings(read_state(client, database), database, MERGED_PARTS_SETTINGS)
    for statement in settings:
        client.command(statement)
    log.info("store schema: %d change(s) made in database %s", len(changes) + len(settings), database)


def with_table_settings(statement: str, settings: Mapping[str, int]) -> str:
    """A ``CREATE TABLE`` of a MergeTree table with ``settings`` added to its ``SETTINGS`` (any other
    statement as it is)."""
    if not statement.startswith("CREATE TABLE ") or not _MERGE_TREE_ENGINE.search(statement):
        return statement
    assignments = ", ".join(f"{name} = {value}" for name, value in settings.items())
    if clause := _SETTINGS_LINE.search(statement):
        return f"{statement[: clause.end()]}, {assignments}{statement[clause.end() :]}"
    return f"{statement}\nSETTINGS {assignments}"


def _require_space(client: Client, free_space: FreeSpaceGuard, changes: int, *, embedded: bool) -> None:
    if not free_space.enabled:
        return
    if embedded:
        free_space.refresh()
    elif (space := server_space(client)) is not None:
        free_space.observe(space)
    if free_space.refusing:
        raise StoreFull(
            f"{free_space.reason('schema changes')}. The store's schema needs {changes} change(s) before it "
            "can be used, and none is made on a disk this full (a change cut short by a full disk can "
            "leave a table unreadable): free space on the store's disk and start again",
            retry_after_s=RETRY_AFTER_SECONDS,
        )


@dataclass(frozen=True)
class SchemaState:
    """What the engine's catalogue says of one database."""

    database_exists: bool
    engines: Mapping[str, str] = field(default_factory=dict)  # table or view -> engine
    columns: Mapping[str, frozenset[str]] = field(default_factory=dict)
    view_queries: Mapping[str, str] = field(default_factory=dict)  # view -> its SELECT, engine-formatted
    settings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # table -> its SETTINGS


def read_state(client: Client, database: str) -> SchemaState:
    """The catalogue of ``database`` (reads only)."""
    exists = client.query(
        "SELECT count() FROM system.databases WHERE name = {db:String}", parameters={"db": database}
    ).result_rows[0][0]
    if not exists:
        return SchemaState(database_exists=False)
    tables = client.query(
        "SELECT name, engine, as_select, create_table_query FROM system.tables WHERE database = {db:String}",
        parameters={"db": database},
    ).result_rows
    columns: dict[str, set[str]] = {}
    for table, column in client.query(
        "SELECT table, name FROM system.columns WHERE database = {db:String}", parameters={"db": database}
    ).result_rows:
        columns.setdefault(table, set()).add(column)
    return SchemaState(
        database_exists=True,
        engines={name: engine for name, engine, _, _ in tables},
        columns={table: frozenset(names) for table, names in columns.items()},
        view_queries={name: select for name, _, select, _ in tables if select},
        settings={name: table_settings(sql) for name, engine, _, sql in tables if "MergeTree" in engine},
    )


def table_settings(create_table_query: str) -> dict[str, str]:
    """The ``SETTINGS`` clause of a table's ``CREATE`` as the engine shows it: name -> value text."""
    match = _SETTINGS.search(create_table_query)
    if match is None:
        return {}
    return {m["name"]: m["value"] for m in _SETTING.finditer(match["settings"])}


def needed_statements(
    state: SchemaState, statements: Sequence[str], formatted: Callable[[str], str]
) -> list[str]:
    """The statements of ``statements`` (the DDL, in order) the store does not satisfy yet, cut down to
    what is missing. ``formatted`` formats a query as the engine shows a view's (to compare them)."""
    created: set[str] = set()  # made by this start: its columns are unknown until then
    needed: list[str] = []
    for statement in statements:
        if _CREATE_DATABASE.match(statement):
            if not state.database_exists:
                needed.append(statement)
        elif create := _CREATE.match(statement):
            name = _unquoted(create["name"])
            if name not in state.engines:
                created.add(name)
                needed.append(statement)
        elif alter := _ALTER.match(statement):
            name = _unquoted(alter["name"])
            change = _needed_alter(state, statement, alter.end(), name, created, formatted)
            if change is not None:
                needed.append(change)
        else:
            raise ValueError(f"a DDL statement of a kind start-up does not know: {statement[:60]!r}")
    return needed


def _needed_alter(
    state: SchemaState,
    statement: str,
    clauses_at: int,
    table: str,
    created: set[str],
    formatted: Callable[[str], str],
) -> str | None:
    if table in created or table not in state.engines:
        return statement  # made by this start (or not there: the engine says what is wrong)
    rest = statement[clauses_at:]
    if modify := _MODIFY_QUERY.match(rest):
        query = rest[modify.end() :]
        current = state.view_queries.get(table, "")
        return None if formatted(query) == formatted(current) else statement
    clauses = split_top(rest)
    if not all(_ADD_COLUMN.match(clause) for clause in clauses):
        return statement  # a change this module cannot compare: made as written
    present = state.columns.get(table, frozenset())
    missing = [clause for clause in clauses if _added_column(clause) not in present]
    if not missing:
        return None
    return statement[:clauses_at] + ",\n    ".join(missing)


def _added_column(clause: str) -> str:
    added = _ADD_COLUMN.match(clause)
    return column_name(clause[added.end() :]) if added else ""


def merged_parts_settings(state: SchemaState, database: str, settings: Mapping[str, int]) -> list[str]:
    """``ALTER TABLE ... MODIFY SETTING`` for each MergeTree table whose ``SETTINGS`` do not already hold
    ``settings`` (the embedded store's own: ``ingest.store.free_space``)."""
    out = []
    for table, current in sorted(state.settings.items()):
        changed = {name: value for name, value in settings.items() if current.get(name) != str(value)}
        if changed:
            assignments = ", ".join(f"{name} = {value}" for name, value in changed.items())
            target = f"{quote_identifier(database)}.{quote_identifier(table)}"
            out.append(f"ALTER TABLE {target} MODIFY SETTING {assignments}")
    return out


def engine_formatter(client: Client) -> Callable[[str], str]:
    """Format a query as the engine does (``formatQuerySingleLine``), as ``system.tables`` shows views."""

    def formatted(query: str) -> str:
        if not query.strip():
            return ""
        rows = client.query("SELECT formatQuerySingleLine({q:String})", parameters={"q": query}).result_rows
        return str(rows[0][0])

    return formatted


def _unquoted(identifier: str) -> str:
    return identifier[1:-1].replace("``", "`") if identifier.startswith("`") else identifier
