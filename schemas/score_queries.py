"""What a reader of results asks for and is told: the filters of ``GET /api/scores``,
``GET /api/decisions`` and ``tracescore scores``, and the answer for a trace that has no rows.

One model validates the filters for the API and the command alike, so both accept the same values
and refuse the same ones with the same sentence, naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tracescore.schemas.durations import parse_time
from tracescore.schemas.score import DecisionKind

DEFAULT_LIMIT = 100
MAX_LIMIT = 10_000
FILTERS = ("trace_id", "scorer", "service", "agent", "session", "since", "until", "limit")
DECISION_FILTER = "decision"
DECISION_KINDS: tuple[str, ...] = get_args(DecisionKind)

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_TIME_HINT = "give an RFC 3339 time (2026-11-20T00:00:00Z) or an age (30m, 1h, 7d)"

Table = Literal["scores", "decisions"]
TraceState = Literal["not_received", "pending", "nothing_to_score", "not_scored"]


class QueryError(ValueError):
    """A filter the reader cannot use: which one (as the API names it) and why."""

    def __init__(self, parameter: str, reason: str) -> None:
        super().__init__(f"{parameter}: {reason}")
        self.parameter = parameter
        self.reason = reason


class ResultQuery(BaseModel):
    """Filters of a read of ``scores`` or ``score_decisions``; rows come newest first.

    ``since`` and ``until`` bound when a row was written (its ``created_at``): ``since`` included,
    ``until`` excluded. ``scorer`` is the stored scorer id: the rule's ``name``, else the scorer's id.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    trace_id: str | None = None
    scorer: str | None = None
    service: str | None = None
    agent: str | None = None
    session: str | None = None  # the rows of a conversation's session scores (``target: session``)
    since: datetime | None = None
    until: datetime | None = None
    decision: DecisionKind | None = None
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)

    @field_validator("trace_id", mode="before")
    @classmethod
    def _trace_id(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            if not _TRACE_ID.fullmatch(value):
                raise ValueError("must be 32 hex characters")
        return value

    @field_validator("since", "until", mode="before")
    @classmethod
    def _time(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return parse_time(value, datetime.now(UTC))
            except ValueError:
                raise ValueError(f"{value!r} is not a time: {_TIME_HINT}") from None
        return value

    @model_validator(mode="after")
    def _window(self) -> ResultQuery:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("until: must be after since")
        return self


def parse_query(params: Mapping[str, str], *, decisions: bool) -> ResultQuery:
    """The query of string parameters (an HTTP query string or command-line flags); an empty value
    counts as not given. Raises ``QueryError`` naming the first wrong parameter."""
    allowed = (*FILTERS, DECISION_FILTER) if decisions else FILTERS
    for name in params:
        if name not in allowed:
            if name == DECISION_FILTER:
                raise QueryError(name, "only decisions have one: ask /api/decisions")
            raise QueryError(name, f"unknown parameter; the filters are {', '.join(allowed)}")
    given = {name: value.strip() for name, value in params.items() if value.strip()}
    try:
        return ResultQuery.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        if not error["loc"]:  # the window check, which names its parameter itself
            parameter, _, reason = error["msg"].removeprefix("Value error, ").partition(": ")
            raise QueryError(parameter, reason) from None
        parameter = str(error["loc"][0])
        if parameter == "limit":
            raise QueryError(parameter, f"must be a whole number from 1 to {MAX_LIMIT}") from None
        if parameter == DECISION_FILTER:
            raise QueryError(parameter, f"must be one of {', '.join(DECISION_KINDS)}") from None
        raise QueryError(parameter, error["msg"].removeprefix("Value error, ")) from None


class TraceStatus(BaseModel):
    """Why a trace has no rows to show (the body of the API's 404): what the store knows of it.

    ``status``: ``not_received`` (no span of it was received), ``pending`` (received, waiting to be
    scored), ``nothing_to_score`` (assembled, but no rule had a unit in it to score), ``not_scored``
    (decided, and no decision was a score: ``decisions`` counts them by kind).
    """

    model_config = ConfigDict(frozen=True)

    trace_id: str
    status: TraceState
    message: str
    spans: int = 0
    decisions: dict[str, int] = Field(default_factory=dict)
    see: str | None = None  # where the rows that explain it are
