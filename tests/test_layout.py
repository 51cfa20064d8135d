"""The house rules a reader relies on: every module and package of ``ingest``, ``scoring`` and ``schemas``
has a name no other one has (so a name in a traceback, a log line or a review points at one place), and
no module outgrows what one reader holds in mind (400 lines)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("ingest", "scoring", "schemas")
MAX_MODULE_LINES = 400


def modules() -> list[Path]:
    return sorted(
        path for root in ROOTS for path in (REPO / root).rglob("*.py") if "__pycache__" not in path.parts
    )


def test_every_module_and_package_name_is_unique_across_the_three_roots() -> None:
    places: dict[str, list[str]] = defaultdict(list)
    for path in modules():
        if path.name == "__init__.py":
            # A package: the folder's name (data folders such as prompts/ hold no __init__.py).
            if path.parent.name not in ROOTS:
                places[path.parent.name].append(path.parent.relative_to(REPO).as_posix() + "/")
        else:
            places[path.stem].append(path.relative_to(REPO).as_posix())
    shared = {name: where for name, where in places.items() if len(where) > 1}
    assert shared == {}, "name each module and package for what it holds, once"


def test_no_module_is_over_the_line_bound() -> None:
    over = {}
    for path in modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            over[path.relative_to(REPO).as_posix()] = lines
    assert over == {}, f"split these by job (at most {MAX_MODULE_LINES} lines each)"


def test_the_layout_rules_see_the_whole_tree() -> None:
    found = {path.relative_to(REPO).as_posix() for path in modules()}
    assert {"ingest/service.py", "scoring/framework/scorer.py", "schemas/spans.py"} <= found
    assert len(found) > 150
