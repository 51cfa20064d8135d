"""Human labels (annotations): what a person said of a unit a scorer scored, as ``POST /api/annotations``
takes it and as the ``annotations`` table holds it, and the OTLP names that carry one.

An annotation judges one span of one trace under a name, the scorer id it is compared with: a value,
a label, or both, with who gave it and why. The same person labelling the same (trace, span, name)
again replaces their earlier label: the row's id is derived from those four (``annotation_id``).
"""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AnnotationSource = Literal["api", "otlp"]

# The GenAI semantic conventions' evaluation event and its attributes (gen-ai-events.md).
EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
# Not in the conventions: who gave the result. Its presence is what makes an evaluation result a
# person's label rather than a machine evaluation (tracescore's own exported events never carry it).
ANNOTATOR_ATTRIBUTE = "tracescore.annotator"

MAX_NAME_CHARS = 200
MAX_LABEL_CHARS = 200
MAX_ANNOTATOR_CHARS = 200
MAX_COMMENT_CHARS = 10_000

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
# Fixed namespace so an annotation id is the same on every replica, retry and replay.
_ANNOTATION_ID_NAMESPACE = uuid.UUID("0b5e8f57-4d3a-5e61-a7c2-93d1f4e6b208")


def annotation_id(trace_id: str, span_id: str, name: str, annotator: str) -> str:
    """Deterministic id of one person's label of one unit under one name: a new label replaces it."""
    return str(uuid.uuid5(_ANNOTATION_ID_NAMESPACE, f"{trace_id}:{span_id}:{name}:{annotator}"))


def _hex_id(value: Any, pattern: re.Pattern[str], length: int) -> Any:
    if isinstance(value, str):
        value = value.strip().lower()
        if not pattern.fullmatch(value):
            raise ValueError(f"must be {length} hex characters")
    return value


class _Labelled(BaseModel):
    """What a label says, checked the same way whichever way it came."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    value: float | None = None
    label: str = Field(default="", max_length=MAX_LABEL_CHARS)
    annotator: str = Field(min_length=1, max_length=MAX_ANNOTATOR_CHARS)
    comment: str = Field(default="", max_length=MAX_COMMENT_CHARS)

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _says_something(self) -> _Labelled:
        if self.value is None and not self.label:
            raise ValueError("give a value, a label, or both")
        return self


class AnnotationRequest(_Labelled):
    """One item of ``POST /api/annotations``. ``span_id`` left out: the trace's root span. ``time``:
    when the label was given (default: when it was received); the latest label of a person wins."""

    trace_id: str
    span_id: str | None = None
    time: datetime | None = None

    @field_validator("trace_id", mode="before")
    @classmethod
    def _trace_id(cls, value: Any) -> Any:
        return _hex_id(value, _TRACE_ID, 32)

    @field_validator("span_id", mode="before")
    @classmethod
    def _span_id(cls, value: Any) -> Any:
        return None if value in (None, "") else _hex_id(value, _SPAN_ID, 16)


class Annotation(_Labelled):
    """One row of the ``annotations`` table: a label of a known span."""

    trace_id: str
    span_id: str
    source: AnnotationSource
    time: datetime

    @property
    def annotation_id(self) -> str:
        return annotation_id(self.trace_id, self.span_id, self.name, self.annotator)

    @classmethod
    def of_request(cls, request: AnnotationRequest, span_id: str, received: datetime) -> Annotation:
        """The row of an API request, its span found (``span_id``) and its time defaulted."""
        fields = request.model_dump(exclude={"span_id", "time"})
        time = request.time or received
        moment = time if time.tzinfo else time.replace(tzinfo=UTC)
        return cls(**fields, span_id=span_id, source="api", time=moment)

    def as_json(self) -> dict[str, Any]:
        """The row as the API answers it."""
        return {"id": self.annotation_id, **self.model_dump(mode="json")}
