"""The table ``tracescore scores`` prints: score (or decision) rows as they fit the terminal.

Within the terminal's width (``COLUMNS``, else the terminal's, else 80 when piped): ids shortened as
git shows commits (``5dbdf986``), the time without its year, and the reason cut to the line; the span,
service and agent columns join when the width leaves the reason room. ``--wide`` shows every column
and full ids, as wide as they are. Columns are sized here rather than by rich, which shrinks every
column alike when the table is too wide (the score column went first at 80); on a terminal too
narrow even for the short columns, lines are left to wrap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from tracescore.ingest.cli.terminal import make_console
from tracescore.schemas.suggest import closest

SHORT_ID = 8  # hex characters of a shortened trace or span id
MIN_REASON = 24  # an optional column joins only while the reason keeps this many characters
GAP = 2  # spaces between columns
WIDE_TEXT = 200  # the reason's width with --wide (longer reasons are cut there too)

Row = dict[str, Any]


@dataclass(frozen=True)
class _Column:
    header: str
    cell: Callable[[Row], str]
    optional: bool = False  # shown only when the width leaves the text column MIN_REASON
    right: bool = False
    text: bool = False  # the one column that takes what the width leaves


def _written(wide: bool) -> Callable[[Row], str]:
    def cell(row: Row) -> str:
        written = str(row.get("created_at", ""))[:19].replace("T", " ")
        return written if wide else written[5:]  # 2026-11-27 15:02:11 -> 11-27 15:02:11

    return cell


def _field(key: str, length: int | None = None, empty: str = "") -> Callable[[Row], str]:
    def cell(row: Row) -> str:
        value = str(row.get(key) or empty)
        return value[:length] if length else value

    return cell


def _score(row: Row) -> str:
    value = row.get("score")
    return f"{value:.3f}" if isinstance(value, int | float) else "-"


def _columns(decisions: bool, wide: bool) -> list[_Column]:
    short = None if wide else SHORT_ID
    head = [
        _Column("written (UTC)", _written(wide)),
        _Column("trace", _field("trace_id", short)),
        _Column("span", _field("span_id", short), optional=True),
        _Column("scorer", _field("scorer_id")),
    ]
    if decisions:
        what = [_Column("decision", _field("decision")), _Column("detail", _field("detail"), text=True)]
    else:
        what = [
            _Column("score", _score, right=True),
            _Column("label", _field("label")),
            _Column("reason", _field("reason"), text=True),
        ]
    tail = [
        _Column("service", _field("service_name", empty="-"), optional=True),
        _Column("agent", _field("agent_name", empty="-"), optional=True),
    ]
    return head + what + tail


def _fit(columns: list[_Column], cells: list[list[str]], width: int | None) -> list[tuple[_Column, int]]:
    """The columns shown and their widths: every one as wide as its widest cell, the text column
    what is left of ``width`` (None: as wide as it is, up to WIDE_TEXT)."""
    natural = [max([len(c.header), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    shown = [i for i, c in enumerate(columns) if not c.optional]
    text = next(i for i, c in enumerate(columns) if c.text)
    if width is None:
        return [(c, min(natural[i], WIDE_TEXT) if c.text else natural[i]) for i, c in enumerate(columns)]

    def left(indexes: list[int]) -> int:
        used = sum(natural[i] for i in indexes if i != text) + GAP * (len(indexes) - 1)
        return width - used

    for i, column in enumerate(columns):  # in order: span, then service, then agent
        if column.optional and left(sorted([*shown, i])) >= min(MIN_REASON, natural[text]):
            shown = sorted([*shown, i])
    widths = {i: natural[i] for i in shown}
    widths[text] = max(len(columns[text].header), min(natural[text], left(shown)))
    return [(columns[i], widths[i]) for i in shown]


def print_rows(rows: Sequence[Row], decisions: bool, limit: int, *, wide: bool = False) -> None:
    """The rows as a table on stdout, with how many there are (and whether --limit cut them)."""
    console = make_console()
    kind = "decision" if decisions else "score"
    if not rows:
        console.print(f"no {kind}s match")
        return
    columns = _columns(decisions, wide)
    cells = [[column.cell(row) for column in columns] for row in rows]
    fitted = _fit(columns, cells, None if wide else console.width)
    table = Table(box=None, padding=(0, GAP, 0, 0), pad_edge=False, header_style="bold")
    for column, width in fitted:
        table.add_column(
            column.header,
            width=width,
            no_wrap=True,
            overflow="ellipsis",
            justify="right" if column.right else "left",
        )
    index = {id(column): i for i, column in enumerate(columns)}
    for row_cells in cells:
        table.add_row(*(escape(row_cells[index[id(column)]]) for column, _ in fitted))
    needed = sum(width for _, width in fitted) + GAP * len(fitted)
    if needed > console.width:  # --wide, or a terminal too narrow: lines wrap rather than lose the score
        console = make_console(width=needed)
    with console.capture() as captured:  # written without the padding that ends each line
        console.print(table)
    console.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    more = f" (the newest {limit}; --limit for more)" if len(rows) == limit else ""
    console.print(f"{len(rows)} {kind}(s){more}")


def scorers_hint(scorer: str, found: Sequence[str], kind: str, filtered: bool) -> str:
    """Why ``--scorer`` matched no row of ``kind`` (score, decision): the scorers that have some (among
    the rows of the other filters, when some were given), and the one most like ``scorer``."""
    where = " matching the other filters" if filtered else ""
    if not found:
        return f"no scorer has {kind}s{where}"
    guess = closest(scorer, found)
    mean = f" (did you mean {guess!r}?)" if guess else ""
    return f"no {kind} of scorer {scorer!r}{mean}; scorers with {kind}s{where}: {', '.join(found)}"
