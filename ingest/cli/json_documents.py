"""Files that hold one JSON document, or JSON Lines (one document a line): what ``tracescore inspect``
reads (OTLP/JSON export requests, as the Collector's file exporter writes them) and what ``score`` and
``eval`` read (runs)."""

from __future__ import annotations

import json
from typing import Any


class NotJsonError(ValueError):
    """Neither one JSON document nor JSON Lines.

    ``whole_error`` is the whole file's parse error; ``line`` and ``line_error`` name the first line
    that does not parse when the file reads as JSON Lines up to there (``line`` is None when its first
    line does not parse either: then the file is a broken document, and ``whole_error`` says where).
    """

    def __init__(
        self, whole_error: ValueError, line: int | None = None, line_error: ValueError | None = None
    ):
        self.whole_error = whole_error
        self.line = line
        self.line_error = line_error
        super().__init__(str(line_error if line_error is not None else whole_error))


def json_documents(payload: bytes) -> tuple[list[tuple[int, Any]], bool]:
    """The file's documents, each with the line it starts on, and whether the file is one document
    (``False``: JSON Lines). Blank lines are skipped; a blank file has no documents."""
    if not payload.strip():
        return [], False
    try:
        document = json.loads(payload)
    except ValueError as whole_error:  # JSONDecodeError, or bytes that are not UTF-8
        documents: list[tuple[int, Any]] = []
        for number, line in enumerate(payload.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append((number, json.loads(line)))
            except ValueError as line_error:
                raise NotJsonError(whole_error, number if documents else None, line_error) from None
        return documents, False
    start = payload[: len(payload) - len(payload.lstrip())].count(b"\n") + 1
    return [(start, document)], True
