"""Collecting a decoded request: its spans or log records, and its rejected items with a few reasons.

A large request is handed on in slices (``ingest.decode.SliceBounds``): ``take`` returns what was
collected since the last slice and starts the next one, so only one slice of Python objects exists
at a time."""

from __future__ import annotations

from collections.abc import Iterable

from tracescore.schemas.spans import LogRecord, Span, SpanBatch

# A request full of bad spans would otherwise carry one message per span back to the client.
MAX_ERROR_MESSAGES = 10


class BatchBuilder:
    """Collects converted items, and counts rejections while keeping only a few of their messages
    (``MAX_ERROR_MESSAGES`` for the whole request, however many slices it is taken in)."""

    def __init__(
        self, rejected_items: int = 0, errors: Iterable[str] = (), max_attributes: int | None = None
    ) -> None:
        self.max_attributes = max_attributes  # of one span or log record; None: no limit
        self.spans: list[Span] = []
        self.logs: list[LogRecord] = []
        self.rejected_items = rejected_items
        self._errors: list[str] = []
        self._given = 0  # messages kept over the whole request
        self._more_errors = 0
        for error in errors:
            self.error(error)

    def error(self, text: str) -> None:
        if self._given < MAX_ERROR_MESSAGES:
            self._errors.append(text)
            self._given += 1
        else:
            self._more_errors += 1

    def reject(self, reason: str) -> None:
        self.rejected_items += 1
        self.error(reason)

    def too_many_attributes(self, count: int) -> str | None:
        """Why an item of ``count`` attributes is rejected, or None when it is within the limit.

        Rejected whole rather than truncated: OTLP partial success can say exactly that (a count and a
        message naming the item), while a truncation would have no field of its own and would leave
        the store holding a span its sender never sent.
        """
        if self.max_attributes is None or count <= self.max_attributes:
            return None
        return (
            f"{count} attributes, more than the limit of {self.max_attributes} "
            "(receiver.max_attributes_per_item)"
        )

    def build(self) -> SpanBatch:
        """Everything collected (the last slice: with how many messages were left out)."""
        errors = list(self._errors)
        if self._more_errors:
            errors.append(f"... and {self._more_errors} more")
        return SpanBatch.model_construct(
            spans=self.spans, logs=self.logs, rejected_items=self.rejected_items, errors=errors
        )

    def take(self) -> SpanBatch:
        """The items and rejections collected since the last ``take``, and a fresh start for the next
        slice of the same request."""
        batch = SpanBatch.model_construct(
            spans=self.spans, logs=self.logs, rejected_items=self.rejected_items, errors=self._errors
        )
        self.spans, self.logs, self.rejected_items, self._errors = [], [], 0, []
        return batch
