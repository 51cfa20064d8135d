"""The session (conversation) id of a run, read from its spans' attributes.

Frameworks name the conversation a run belongs to in different attributes; the first of these keys,
in this order, found on the run's root span, else on the first of its other spans (in start order)
that carries one, is the run's session id:

1. ``session.id``: OpenInference (and Phoenix, Arize, LangChain/LlamaIndex instrumentations)
2. ``gen_ai.conversation.id``: the OTel GenAI semantic conventions (Pydantic AI, OpenAI Agents,
   Mastra's OTel exporter, which writes a memory thread's id there)
3. ``langfuse.session.id``: Langfuse's SDKs and OTel attribute mapping
4. ``ai.telemetry.metadata.sessionId``: the Vercel AI SDK (``experimental_telemetry.metadata``)
5. ``mastra.metadata.threadId``: Mastra's exporters before ``gen_ai.conversation.id`` (its span
   metadata, exported as ``mastra.metadata.*``)

A value that is empty (or only blanks) does not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tracescore.schemas import Span

SESSION_ID_KEYS = (
    "session.id",
    "gen_ai.conversation.id",
    "langfuse.session.id",
    "ai.telemetry.metadata.sessionId",
    "mastra.metadata.threadId",
)


def attribute_session_id(attributes: Mapping[str, Any]) -> str | None:
    """The session id these attributes name, by the precedence above; None when they name none."""
    for key in SESSION_ID_KEYS:
        value = attributes.get(key)
        if value is not None and (text := str(value).strip()):
            return text
    return None


def run_session_id(root: Span, members: Iterable[Span]) -> str | None:
    """The session id of a run: its root span's, else the first other member span's (by start)."""
    found = attribute_session_id(root.attributes)
    if found is not None:
        return found
    for span in sorted(members, key=lambda s: (s.start_time_unix_nano, s.span_id)):
        if span.span_id != root.span_id and (found := attribute_session_id(span.attributes)) is not None:
            return found
    return None
