"""The ``session`` section of the service config: when a conversation is complete and scored.

A session is the runs sharing a session id (``ingest.transform.session_ids``). It is complete, and
its ``target: session`` rules score it, when no run of it has arrived for ``idle``, or when its
oldest run not yet scored arrived ``max_duration`` ago (a conversation that never pauses is scored
with everything so far, then again as it goes on). Durations are ``30s``, ``15m``, ``1h``, ``7d``.
See docs/sessions.md.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tracescore.schemas.drift_config import Duration

DEFAULT_SESSION_IDLE_SECONDS = 15 * 60.0
# A day: conversations with a person rarely last longer; a thread kept open for days (an assistant
# with memory) is scored at least once a day instead of never, and one scoring never has more than a
# day of turns to rebuild.
DEFAULT_SESSION_MAX_DURATION_SECONDS = 86_400.0
# Sessions whose last run arrived longer ago than this beyond max_duration are not looked at again:
# the completion pass reads the recent part of session_runs only.
DEFAULT_SESSION_LOOKBACK_SECONDS = 7 * 86_400.0


class SessionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idle: Duration = DEFAULT_SESSION_IDLE_SECONDS
    max_duration: Duration = DEFAULT_SESSION_MAX_DURATION_SECONDS
    # How often the completion pass looks for complete sessions; default: a fifth of ``idle``,
    # between half a second and 30 s.
    check_interval: Duration | None = None
    lookback: Duration = DEFAULT_SESSION_LOOKBACK_SECONDS
    # Sessions scored together in one pass (their judge calls run concurrently).
    batch: int = Field(default=100, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> SessionConfig:
        if self.max_duration < self.idle:
            raise ValueError("session.max_duration must be at least session.idle")
        return self

    @property
    def interval(self) -> float:
        """Seconds between completion passes."""
        if self.check_interval is not None:
            return self.check_interval
        return min(30.0, max(0.5, self.idle / 5))
