"""Adapter for the mastra convention (see docs/conventions/mastra.md).

Not written yet: claims no span.
"""

from __future__ import annotations

from ingest.adapters.base import AgentInfo, LlmCall, SpanRole, ToolExecution
from schemas import Span


class MastraAdapter:
    name = "mastra"

    def claims(self, span: Span) -> bool:
        return False

    def classify(self, span: Span) -> SpanRole:
        return SpanRole.OTHER

    def llm_call(self, span: Span) -> LlmCall:
        return LlmCall()

    def tool_execution(self, span: Span) -> ToolExecution:
        return ToolExecution(call_id=None, name=None)

    def agent_info(self, span: Span) -> AgentInfo:
        return AgentInfo()

    def retrieved_texts(self, span: Span) -> list[str]:
        return []
