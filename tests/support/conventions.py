"""Which convention adapter claims a span, by name, for the adapter tests."""

from __future__ import annotations

from tracescore.ingest.transform.adapters import adapter_for
from tracescore.schemas import Span


def adapter_name(span: Span) -> str | None:
    """The name of the adapter claiming ``span``; None when no known convention wrote it."""
    adapter = adapter_for(span)
    return adapter.name if adapter is not None else None
