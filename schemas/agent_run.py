"""AgentRun: one agent run rebuilt from its spans, the input every scorer receives.

The JSON shape is a stable interface (see ARCHITECTURE.md). Field names are snake_case; camelCase
names as Mastra writes them (``inputMessages``, ``toolInvocations``...) are accepted on input too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Role = Literal["user", "assistant", "system", "tool"]
ToolState = Literal["call", "result", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class ToolInvocation(_Model):
    tool_call_id: str = ""
    tool_name: str
    args: Any = Field(default_factory=dict)
    result: Any = None
    state: ToolState = "call"


class Part(_Model):
    """A message part: ``type`` is text, reasoning, tool_call, tool_result, blob, uri, file, ...

    Type-specific keys (``text``, ``tool_call_id``, ``mime_type``...) are kept as extra fields.
    """

    model_config = ConfigDict(extra="allow")

    type: str


class Message(_Model):
    id: str = ""
    role: Role
    content: str = ""
    parts: list[Part] = Field(default_factory=list)
    tool_invocations: list[ToolInvocation] = Field(default_factory=list)
    reasoning: str | None = None


class RunInput(_Model):
    input_messages: list[Message] = Field(default_factory=list)
    remembered_messages: list[Message] = Field(default_factory=list)
    system_messages: list[Message] = Field(default_factory=list)
    tagged_system_messages: dict[str, list[Message]] = Field(default_factory=dict)


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0


class Turn(_Model):
    """One run of a conversation, as a session unit holds it: the user's new input and the agent's
    answer (tool calls joined with their results), in the order the runs started."""

    trace_id: str = ""
    span_id: str = ""
    start_time: datetime | None = None
    end_time: datetime | None = None
    status: Literal["ok", "error"] = "ok"
    input: list[Message] = Field(default_factory=list)
    output: list[Message] = Field(default_factory=list)


class AgentRun(_Model):
    trace_id: str = ""
    span_id: str = ""
    agent_name: str | None = None
    service_name: str | None = None
    model: str | None = None
    status: Literal["ok", "error"] = "ok"
    start_time: datetime | None = None
    end_time: datetime | None = None
    input: RunInput = Field(default_factory=RunInput)
    output: list[Message] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    ground_truth: Any = Field(default=None, validation_alias=AliasChoices("ground_truth", "groundTruth"))
    usage: Usage = Field(default_factory=Usage)
    # True when the spans carried no message content at all (capture turned off, redacted):
    # scorers that need text record ``skipped_empty`` instead of scoring empty strings.
    content_missing: bool = False
    # A unit smaller than a run (one model call, a targeted span): the root span id of its run.
    parent_span_id: str | None = None
    # The conversation the run belongs to, read from its spans (docs/sessions.md gives the attributes
    # and their precedence); None when they carry none.
    session_id: str | None = None
    # Only on a session unit (``target: session``): every run of the conversation, in order.
    turns: list[Turn] = Field(default_factory=list)

    @property
    def run_id(self) -> str:
        """Identity of the run: its trace and root span. Sampling and score ids derive from it."""
        return f"{self.trace_id}:{self.span_id}"

    def text_chars(self) -> int:
        """Characters of text a scorer may read: messages (this turn, history, system) and context."""
        # A plain loop: every scorer run of a sync step reads it, and a generator over a joined list
        # cost twice as much on the one- or two-message runs most are.
        chars = sum(map(len, self.context))
        run_input = self.input
        for messages in (
            run_input.input_messages,
            run_input.remembered_messages,
            run_input.system_messages,
            self.output,
        ):
            for message in messages:
                chars += len(message.content)
                if message.reasoning:
                    chars += len(message.reasoning)
        return chars

    def as_turn(self) -> Turn:
        """This run as one turn of a conversation: its new input and its answer, times and status."""
        return Turn(
            trace_id=self.trace_id,
            span_id=self.span_id,
            start_time=self.start_time,
            end_time=self.end_time,
            status=self.status,
            input=self.input.input_messages,
            output=self.output,
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The AgentRun JSON shape of ARCHITECTURE.md (snake_case, ISO times); ``session_id`` and
        ``turns`` only when the run has them."""
        shape = self.model_dump(mode="json", by_alias=False)
        if self.session_id is None:
            del shape["session_id"]
        if not self.turns:
            del shape["turns"]
        return shape
