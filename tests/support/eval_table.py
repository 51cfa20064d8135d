"""The table ``tracescore eval`` prints, read back by the tests (run with ``COLUMNS=200``: no wrapping)."""

from __future__ import annotations


def eval_table_rows(stdout: str) -> dict[str, list[str]]:
    """The printed table's rows: scorer id -> [mean, min, max, n, errors, skipped_empty]."""
    rows: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│") if cell.strip()]
        if len(cells) == 7 and cells[0] != "scorer":
            rows[cells[0]] = cells[1:]
    return rows
