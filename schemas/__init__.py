"""Typed data of tracescore: spans, agent runs, scores, decisions and configuration. No I/O."""

from schemas.agent_run import AgentRun, Message, Part, RunInput, ToolInvocation, Usage
from schemas.rounds import RoundReason, TraceRound
from schemas.score import Decision, DecisionKind, Score, ScoreRecord, ScoreSource
from schemas.spans import LogRecord, Span, SpanBatch, SpanEvent, SpanLink
from schemas.version import __version__

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
    "Usage",
]
