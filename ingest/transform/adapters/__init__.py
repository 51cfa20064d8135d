"""Convention adapters, in detection order: the first adapter that claims a span reads it.

Traces mix conventions (FIELD-GUIDE, cross-cutting advice 1), so detection is per span. Adapters
with more specific markers (``openinference.span.kind``, ``mastra.span.type``) must come before
the generic ``gen_ai.operation.name`` one when they are added.
"""

from __future__ import annotations

from tracescore.ingest.transform.adapters.base import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
)
from tracescore.ingest.transform.adapters.genai_semconv import GenAiSemconvAdapter
from tracescore.ingest.transform.adapters.mastra_tracing import MastraAdapter
from tracescore.ingest.transform.adapters.openinference import OpenInferenceAdapter
from tracescore.ingest.transform.adapters.openllmetry import OpenLlmetryAdapter
from tracescore.ingest.transform.adapters.pydantic_ai import PydanticAiAdapter
from tracescore.ingest.transform.adapters.vercel_ai import VercelAiAdapter
from tracescore.schemas import Span

# Most specific markers first (FIELD-GUIDE, cross-cutting advice 1): openinference.span.kind,
# mastra.span.type, the AI SDK's ai.* spans, pydantic-ai/logfire keys, OpenLLMetry's traceloop.* and
# indexed gen_ai.prompt.N keys, and last the generic gen_ai.operation.name of the semantic conventions.
ADAPTERS: tuple[ConventionAdapter, ...] = (
    OpenInferenceAdapter(),
    MastraAdapter(),
    VercelAiAdapter(),
    PydanticAiAdapter(),
    OpenLlmetryAdapter(),
    GenAiSemconvAdapter(),
)


def adapter_for(span: Span, adapters: tuple[ConventionAdapter, ...] = ADAPTERS) -> ConventionAdapter | None:
    """The first adapter claiming the span, or None when no known convention wrote it."""
    for adapter in adapters:
        if adapter.claims(span):
            return adapter
    return None


__all__ = [
    "ADAPTERS",
    "AgentInfo",
    "ConventionAdapter",
    "GenAiSemconvAdapter",
    "MastraAdapter",
    "OpenInferenceAdapter",
    "OpenLlmetryAdapter",
    "PydanticAiAdapter",
    "VercelAiAdapter",
    "LlmCall",
    "SpanRole",
    "ToolExecution",
    "adapter_for",
]
