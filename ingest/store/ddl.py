"""The DDL of every tracescore table (``schemas/sql/*.sql``), and the column types it declares.

``load_ddl`` gives the statements the store applies on start. ``COLUMN_TYPES`` reads, from the same
statements, each insertable column's ClickHouse type (``Nested`` columns flattened as the server does:
``Events.Name Array(...)``; ``ALIAS`` and ``MATERIALIZED`` columns left out, since no insert names
them). Inserts pass these types to clickhouse-connect, which would otherwise ask the server
(``DESCRIBE TABLE``) before every insert.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources

from clickhouse_connect.driver.binding import quote_identifier

# Applied in this order: the view reads the tables before it.
DDL_FILES = (
    "otel_traces.sql",
    "otel_logs.sql",
    "span_ledger.sql",
    "trace_done.sql",
    "session_runs.sql",
    "session_done.sql",
    "ingest_watermarks.sql",
    "replicas.sql",
    "trace_handoffs.sql",
    "judge_spend.sql",
    "scores.sql",
    "score_decisions.sql",
    "judge_io.sql",
    "span_scores_view.sql",
    "score_series.sql",
    "score_drift.sql",
    "annotations.sql",
    "judge_agreement.sql",
)

_STATEMENT_END = re.compile(r";\s*$", re.MULTILINE)
_CREATE_TABLE = re.compile(r"^CREATE TABLE IF NOT EXISTS \S+?\.(?P<name>\w+)\s*\(")
_ALTER_TABLE = re.compile(r"^ALTER TABLE \S+?\.(?P<name>\w+)\s+")
_ADD_COLUMN = re.compile(r"^ADD COLUMN (?:IF NOT EXISTS )?", re.IGNORECASE)
_NAME = re.compile(r"`(?:[^`]|``)+`|\w+")
_TYPE_NAME = re.compile(r"\w+")
_NOT_A_COLUMN = ("INDEX ", "PROJECTION ", "CONSTRAINT ")
_NOT_INSERTED = ("ALIAS", "MATERIALIZED")


def load_ddl(database: str) -> list[str]:
    """The DDL statements of ``schemas/sql``, with ``{database}`` filled in, in apply order."""
    quoted = quote_identifier(database)
    statements = []
    for name in DDL_FILES:
        text = resources.files("tracescore.schemas").joinpath("sql", name).read_text(encoding="utf-8")
        for chunk in _STATEMENT_END.split(text.replace("{database}", quoted)):
            body = "\n".join(line for line in chunk.splitlines() if not line.lstrip().startswith("--"))
            if body.strip():
                statements.append(body.strip())
    return statements


def column_types(statements: list[str]) -> dict[str, dict[str, str]]:
    """Table -> insertable column -> its type, from CREATE TABLE and ALTER TABLE ... ADD COLUMN."""
    tables: dict[str, dict[str, str]] = {}
    for statement in statements:
        if create := _CREATE_TABLE.match(statement):
            end = _closing(statement, create.end() - 1)
            columns = tables.setdefault(create["name"], {})
            for item in split_top(statement[create.end() : end]):
                if not item.upper().startswith(_NOT_A_COLUMN):
                    _add_column(columns, item)
        elif alter := _ALTER_TABLE.match(statement):
            for item in split_top(statement[alter.end() :]):
                if added := _ADD_COLUMN.match(item):  # (a view's MODIFY QUERY adds no table's column)
                    columns = tables.setdefault(alter["name"], {})
                    _add_column(columns, item[added.end() :], keep_existing=True)
    return tables


def column_name(item: str) -> str:
    """The name of the column a DDL item (``Name Type ...``) declares, unquoted."""
    name_match = _NAME.match(item)
    if name_match is None:
        raise ValueError(f"no column name in DDL item {item[:60]!r}")
    return _unquoted(name_match.group())


def _add_column(columns: dict[str, str], item: str, keep_existing: bool = False) -> None:
    name_match = _NAME.match(item)
    if name_match is None:
        raise ValueError(f"no column name in DDL item {item[:60]!r}")
    name = _unquoted(name_match.group())
    kind, rest = _type_at(item, name_match.end())
    if rest.upper().startswith(_NOT_INSERTED):
        return
    if kind.startswith("Nested("):
        for sub in split_top(kind[len("Nested(") : -1]):
            sub_name = _NAME.match(sub)
            if sub_name is None:
                raise ValueError(f"no column name in Nested item {sub[:60]!r}")
            sub_kind, _ = _type_at(sub, sub_name.end())
            columns.setdefault(f"{name}.{_unquoted(sub_name.group())}", f"Array({sub_kind})")
        return
    if keep_existing:
        columns.setdefault(name, kind)
    else:
        columns[name] = kind


def _type_at(text: str, start: int) -> tuple[str, str]:
    """The type that starts at ``text[start:]`` (after blanks), with what follows it."""
    position = len(text) - len(text[start:].lstrip())
    name = _TYPE_NAME.match(text, position)
    if name is None:
        raise ValueError(f"no column type in DDL item {text[:60]!r}")
    end = name.end()
    after = len(text) - len(text[end:].lstrip())
    if after < len(text) and text[after] == "(":
        close = _closing(text, after)
        return name.group() + text[after : close + 1], text[close + 1 :].strip()
    return name.group(), text[end:].strip()


def _closing(text: str, open_at: int) -> int:
    """The index of the parenthesis that closes ``text[open_at]``."""
    for index, char, depth in _outside_quotes(text, open_at):
        if char == ")" and depth == 0:
            return index
    raise ValueError(f"unbalanced parentheses in DDL: {text[open_at : open_at + 60]!r}")


def split_top(text: str) -> list[str]:
    """``text`` split at its top-level commas (not inside parentheses or quotes), items stripped."""
    items: list[str] = []
    start = 0
    for index, char, depth in _outside_quotes(text, 0):
        if char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    items.append(text[start:].strip())
    return [item for item in items if item]


def _outside_quotes(text: str, start: int) -> Iterator[tuple[int, str, int]]:
    """Each character of ``text`` from ``start`` that is outside quotes, with the parenthesis depth
    around it (an opening parenthesis counts itself, a closing one does not)."""
    depth = 0
    quote = ""
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "'`\"":
            quote = char
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        yield index, char, depth


def _unquoted(identifier: str) -> str:
    return identifier[1:-1].replace("``", "`") if identifier.startswith("`") else identifier


# The database name does not change a table's columns.
COLUMN_TYPES: dict[str, dict[str, str]] = column_types(load_ddl("default"))
