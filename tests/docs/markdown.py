"""The documentation as the docs tests read it: README.md and docs/**/*.md, their fenced examples,
headings and links.

An example is a fenced block. Its language says what the test does with it: ``python`` runs as a
program, ``sh``/``bash``/``console`` run in a shell, ``yaml`` loads with the config loader, ``json``
parses, ``text`` (output, shapes, synopses) is shown only. An HTML comment on the line just before the
fence changes that:

- ``<!-- example: not run: REASON -->``: the block cannot run here (a cluster, Docker, a whole suite);
  the reason says why;
- ``<!-- example: file NAME -->``: the block is a file the reader saves as NAME (checked as its
  language says, then written for the blocks after it);
- ``<!-- example: service -->``: each line of the shell block starts a service that runs until
  stopped: it must come up healthy, then it is stopped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"

RUN_LANGUAGES = ("python", "sh", "bash", "console", "yaml", "json")
SHOWN_LANGUAGES = ("text",)
SHELL_LANGUAGES = ("sh", "bash", "console")

_FENCE = re.compile(r"^( *)```(.*)$")
_MARK = re.compile(r"^\s*<!-- example: (.*?) -->\s*$")
_HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def documents() -> list[Path]:
    """README.md and every page under docs/, README first."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@dataclass(frozen=True)
class Example:
    path: Path
    line: int  # the opening fence's line, from 1
    language: str
    text: str
    mark: str | None  # the comment's text after "example: ", if any

    @property
    def where(self) -> str:
        return f"{name(self.path)}:{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        if self.mark is not None and self.mark.startswith("not run:"):
            return self.mark.removeprefix("not run:").strip()
        return None

    @property
    def file_name(self) -> str | None:
        if self.mark is not None and self.mark.startswith("file "):
            return self.mark.removeprefix("file ").strip()
        return None

    @property
    def is_service(self) -> bool:
        return self.mark == "service"

    def commands(self) -> str:
        """The shell text to run: a console block's ``$ `` lines, any other block as it is."""
        if self.language != "console":
            return self.text
        return "".join(line[2:] + "\n" for line in self.text.splitlines() if line.startswith("$ "))


def examples(path: Path) -> list[Example]:
    """The fenced blocks of ``path`` in order (an indented fence, as in a list, is read dedented)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        indent = len(fence.group(1))
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        assert end < len(lines), f"{name(path)}:{index + 1}: the fence is never closed"
        mark = _MARK.match(lines[index - 1]) if index else None
        body = "".join(line[indent:] + "\n" for line in lines[index + 1 : end])
        found.append(Example(path, index + 1, fence.group(2).strip(), body, mark.group(1) if mark else None))
        index = end + 1
    return found


def prose_lines(path: Path) -> list[str]:
    """The lines of ``path`` outside fenced blocks."""
    inside = False
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line) and not inside:
            inside = True
        elif inside and line.strip() == "```":
            inside = False
        elif not inside:
            kept.append(line)
    return kept


def headings(path: Path) -> list[tuple[int, str]]:
    """Every heading of ``path`` (outside code) as (level, text)."""
    found = []
    for line in prose_lines(path):
        match = _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped (but - and _), spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for _, text in headings(path):
        slug = anchor(text)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def links(path: Path) -> list[str]:
    """The targets of the markdown links of ``path`` (outside code), as written."""
    return [target for line in prose_lines(path) for target in _LINK.findall(line)]


def section(path: Path, title: str, level: int = 2) -> str:
    """The text of the heading ``title`` of ``path``, up to the next heading of its level or above."""
    text = path.read_text(encoding="utf-8")
    marker = f"\n{'#' * level} {title}\n"
    assert marker in text, f"{name(path)} has no section {title!r}"
    rest = text.split(marker, 1)[1]
    ends = [rest.find(f"\n{'#' * above} ") for above in range(1, level + 1)]
    ends = [end for end in ends if end != -1]
    return rest[: min(ends)] if ends else rest
