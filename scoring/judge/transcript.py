"""What a scorer run's judges were sent and answered, kept when ``scoring.record_judge_io`` is on.

Inside ``with transcribed() as transcript:`` (also in tasks and threads started from it) every judge
request the client makes adds a ``JudgeExchange``: the messages as sent (the prompt already redacted
by the run's guard; every text also passed through the redactor and scrubbed of secrets here, so no
key reaches the store) and the raw answer, or the error that ended the request. Outside one (the
default) nothing is kept and the client pays one context-variable read per request.

The texts of one transcript are bounded (``MAX_TRANSCRIPT_CHARS``): a scorer making many calls on a
long run keeps its first exchanges whole, then says how many more it made.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from tracescore.schemas.score import JudgeExchange
from tracescore.schemas.secrets import scrub
from tracescore.scoring.judge.call_guard import redact_text

MAX_TRANSCRIPT_CHARS = 200_000
MAX_TEXT_CHARS = 50_000  # one message or answer


@dataclass
class Transcript:
    """The judge exchanges of one scorer run, in the order they ended."""

    exchanges: list[JudgeExchange] = field(default_factory=list)
    chars: int = 0
    left_out: int = 0  # exchanges past MAX_TRANSCRIPT_CHARS

    def add(self, exchange: JudgeExchange) -> None:
        size = sum(len(m.get("content", "")) for m in exchange.messages) + len(exchange.answer or "")
        if self.chars + size > MAX_TRANSCRIPT_CHARS and self.exchanges:
            self.left_out += 1
            return
        self.chars += size
        self.exchanges.append(exchange)

    def kept(self) -> tuple[JudgeExchange, ...]:
        """The exchanges, with a last one saying how many were left out when any were."""
        if not self.left_out:
            return tuple(self.exchanges)
        note = JudgeExchange(
            model="",
            operation="note",
            error=f"{self.left_out} more judge request(s) not kept: the transcript holds at most "
            f"{MAX_TRANSCRIPT_CHARS} characters",
        )
        return (*self.exchanges, note)


_TRANSCRIPT: ContextVar[Transcript | None] = ContextVar("tracescore_judge_transcript", default=None)


class transcribed:  # noqa: N801 -- used as a function: ``with transcribed() as transcript:``
    """Keep the judge exchanges made in this context (see the module docstring)."""

    __slots__ = ("_token", "transcript")
    transcript: Transcript
    _token: Token[Transcript | None]

    def __enter__(self) -> Transcript:
        self.transcript = Transcript()
        self._token = _TRANSCRIPT.set(self.transcript)
        return self.transcript

    def __exit__(self, *exc_info: object) -> None:
        _TRANSCRIPT.reset(self._token)


def transcribing() -> bool:
    return _TRANSCRIPT.get() is not None


def record_exchange(
    model: str,
    messages: Sequence[dict[str, Any]],
    *,
    operation: str = "chat",
    answer: str | None = None,
    error: str | None = None,
) -> None:
    """Add one request to the current transcript; nothing outside one."""
    transcript = _TRANSCRIPT.get()
    if transcript is None:
        return
    sent = tuple({"role": str(m.get("role", "")), "content": _kept(m.get("content"))} for m in messages)
    transcript.add(
        JudgeExchange(
            model=model,
            operation=operation,
            messages=sent,
            answer=_kept(answer) if answer is not None else None,
            error=scrub(error) if error is not None else None,
        )
    )


def _kept(text: Any) -> str:
    """A text as stored: through the run's redactor, scrubbed of secrets, bounded."""
    value = text if isinstance(text, str) else "" if text is None else str(text)
    value = scrub(redact_text(value))
    if len(value) > MAX_TEXT_CHARS:
        return f"{value[:MAX_TEXT_CHARS]}… [{len(value)} characters]"
    return value
