"""The documentation's shape holds: a short README, a table of contents on every page, links that lead
somewhere, and an architecture page that names every package, top-level module and command of the
tree as it is (read from the file system and from the command's own parser)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tests.docs.markdown import DOCS, README, REPO, anchor, anchors, documents, headings, links, name
from tracescore.ingest.cli import build_parser

README_MAX_LINES = 400
ARCHITECTURE = DOCS / "architecture.md"
ROOTS = ("schemas", "scoring", "ingest")
# Pages other work of this round adds; linked before they land. Remove a name once its page exists.
PAGES_UNDER_WAY: set[str] = set()
# Some of what the tree must hold, so that an empty reading of it fails.
SOME_PACKAGES = {"ingest/alerting/", "ingest/replay/", "scoring/framework/", "scoring/runtime/"}
SOME_MODULES = {"ingest/service.py", "schemas/config.py", "schemas/agent_run.py", "schemas/spans.py"}
SOME_COMMANDS = {
    "serve",
    "demo",
    "inspect",
    "score",
    "eval",
    "drift",
    "backfill",
    "schema",
    "scorers",
    "scores",
}
COMMAND_ROW = re.compile(r"^\| `tracescore ([a-z-]+)` \|.*\| `(ingest/cli/[a-z_]+\.py)` \|$", re.MULTILINE)


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move reference text to docs/"


def test_every_page_with_sections_has_a_table_of_contents() -> None:
    """A page of three or more sections opens with "Contents", linking each of them in order."""
    missing = []
    for path in documents():
        sections = [text for level, text in headings(path) if level == 2 and text != "Contents"]
        if len(sections) < 3:
            continue
        text = path.read_text(encoding="utf-8")
        if "\n## Contents\n" not in text:
            missing.append(f"{name(path)}: no '## Contents'")
            continue
        contents = text.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
        listed = re.findall(r"^- \[[^\]]*\]\(#([^)]+)\)", contents, re.MULTILINE)
        wanted = [anchor(section) for section in sections]
        if listed != wanted:
            missing.append(f"{name(path)}: contents {listed} should be {wanted}")
    assert missing == []


def _target(path: Path, link: str) -> tuple[Path, str]:
    file_part, _, fragment = link.partition("#")
    target = (path.parent / file_part).resolve() if file_part else path
    return target, fragment


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    broken = []
    for path in documents():
        for link in links(path):
            if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
                continue
            target, fragment = _target(path, link)
            if not target.exists():
                if target.parent == DOCS and target.name in PAGES_UNDER_WAY:
                    continue
                broken.append(f"{name(path)}: {link} (no such file)")
            elif fragment and target.suffix == ".md" and fragment not in anchors(target):
                broken.append(f"{name(path)}: {link} (no such heading in {name(target)})")
    assert broken == []


def test_the_readme_and_the_docs_index_link_every_page() -> None:
    index = DOCS / "README.md"
    readme, index_text = README.read_text(encoding="utf-8"), index.read_text(encoding="utf-8")
    for page in [*sorted(DOCS.glob("*.md")), *(DOCS / page_name for page_name in sorted(PAGES_UNDER_WAY))]:
        if page == index:
            continue
        relative = page.relative_to(DOCS).as_posix()
        assert f"(docs/{relative})" in readme, f"README.md does not link {relative}"
        assert f"({relative})" in index_text, f"docs/README.md does not link {relative}"


# --- the architecture page against the tree ------------------------------------------------------


def packages() -> list[str]:
    """Every package under the three roots, as ``root/sub/`` (a directory with ``__init__.py``)."""
    found = []
    for root in ROOTS:
        for init in sorted((REPO / root).rglob("__init__.py")):
            if "prompts" in init.parts or "__pycache__" in init.parts:
                continue
            found.append(init.parent.relative_to(REPO).as_posix() + "/")
    return found


def top_level_modules() -> list[str]:
    """The modules directly in each root package (``ingest/replay/recovery.py``), the ones a reader looks
    for first."""
    return [
        path.relative_to(REPO).as_posix()
        for root in ROOTS
        for path in sorted((REPO / root).glob("*.py"))
        if path.name != "__init__.py"
    ]


def commands() -> list[str]:
    """The subcommands the ``tracescore`` parser has, as the user types them."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


def test_the_architecture_page_names_every_package_and_top_level_module() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    found = packages()
    modules = top_level_modules()
    assert set(found) >= SOME_PACKAGES and set(modules) >= SOME_MODULES
    missing = [item for item in [*found, *modules] if f"`{item}`" not in page]
    assert missing == [], f"add these to {name(ARCHITECTURE)}"


def test_the_architecture_page_names_every_command_and_its_module() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    found = commands()
    assert set(found) >= SOME_COMMANDS
    missing = [command for command in found if f"`tracescore {command}`" not in page]
    assert missing == [], f"add these commands to {name(ARCHITECTURE)}"
    rows = dict(COMMAND_ROW.findall(page))
    for command in found:
        module = rows.get(command)
        assert module is not None and (REPO / module).is_file(), f"tracescore {command}: no module row"
