"""Typed data of tracescore: spans, agent runs, scores, decisions and configuration. No I/O."""

from tracescore.schemas.agent_run import AgentRun, Message, Part, RunInput, ToolInvocation, Turn, Usage
from tracescore.schemas.assembly_rounds import RoundReason, TraceRound
from tracescore.schemas.score import Decision, DecisionKind, Score, ScoreRecord, ScoreSource
from tracescore.schemas.spans import LogRecord, Span, SpanBatch, SpanEvent, SpanLink
from tracescore.schemas.version import __version__

__all__ = [
    "__version__",
    "AgentRun",
    "Decision",
    "DecisionKind",
    "LogRecord",
    "Message",
    "Part",
    "RoundReason",
    "RunInput",
    "Score",
    "ScoreRecord",
    "ScoreSource",
    "Span",
    "SpanBatch",
    "SpanEvent",
    "SpanLink",
    "ToolInvocation",
    "TraceRound",
    "Turn",
    "Usage",
]
