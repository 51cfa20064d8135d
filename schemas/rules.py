"""Scorer rules as configured: which scorer, on which units of a trace, filtered how, within what budget.

A rule (one item of ``scoring.rules``)::

    - scorer: toxicity                 # a prebuilt scorer's name or id; or `use: package.module:factory`
      options: {scale: 1}
      target: llm_call                 # run (default) | llm_call | session | {span: {name: [...], ...}}
      sample_rate: 0.25
      filter:
        agent_name: [support_agent]
        attributes: {gen_ai.request.model: {in: [gpt-4o, gpt-4o-mini]}, user.tier: gold}
        resource_attributes: {deployment.environment: production}
        min_duration_ms: 500
        trace_has: {attributes: {error.type: {exists: true}}}
      budget: {max_calls_per_hour: 500, max_usd_per_day: 5}
      circuit_breaker: {failures: 5, cooldown_seconds: 30}
      when: {rule: tone, score_below: 0.5}   # a cascade: only after rule tone's result on the unit

Everything here is validated once, when the config loads (a regular expression that does not compile
fails there, naming the rule and the field). ``scoring.rules`` evaluates these models at run time.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tracescore.schemas.score import DecisionKind

Scalar = str | int | float | bool
SPAN_KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
RunStatus = Literal["ok", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ValueMatch(_Model):
    """One attribute test. A bare value in the config means ``{equals: value}``.

    ``equals``/``in`` compare numbers as numbers and everything else as text (``"5"`` equals ``5``);
    ``regex`` searches the value's text; ``exists`` asks for the key to be present (or absent);
    ``gt``/``lt`` compare numbers (a value that is not a number never matches them).
    """

    equals: Scalar | None = None
    in_: list[Scalar] | None = Field(default=None, alias="in", min_length=1)
    regex: str | None = None
    exists: bool | None = None
    gt: float | None = None
    lt: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_value(cls, data: Any) -> Any:
        if isinstance(data, str | int | float | bool):
            return {"equals": data}
        if isinstance(data, list):
            return {"in": data}
        return data

    @model_validator(mode="after")
    def _one_test(self) -> ValueMatch:
        given = [
            name
            for name, value in (
                ("equals", self.equals),
                ("in", self.in_),
                ("regex", self.regex),
                ("exists", self.exists),
            )
            if value is not None
        ]
        numeric = self.gt is not None or self.lt is not None
        if len(given) + numeric != 1:
            raise ValueError(
                "give exactly one of equals, in, regex, exists, or gt/lt (both may be given)"
                + (f"; got {', '.join(given + (['gt/lt'] if numeric else []))}" if given else "")
            )
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex {self.regex!r} does not compile: {exc}") from exc
        return self


class SpanMatch(_Model):
    """Tests on one span; every given field must hold.

    ``name``: the span name (a list of names, or a test such as ``{regex: "^chat "}``);
    ``span_kind``: OTel span kinds (``internal``, ``server``, ``client``, ``producer``, ``consumer``);
    ``operation``: the GenAI operation (``gen_ai.operation.name``: ``chat``, ``invoke_agent``,
    ``execute_tool``, ...) or the OpenInference span kind (``llm``, ``agent``, ``tool``, ...);
    ``status``: ``ok`` or ``error``; ``min_duration_ms``: at least this long;
    ``attributes`` / ``resource_attributes``: tests by attribute key.
    """

    name: ValueMatch | None = None
    span_kind: list[str] | None = Field(default=None, min_length=1)
    operation: list[str] | None = Field(default=None, min_length=1)
    status: list[RunStatus] | None = Field(default=None, min_length=1)
    min_duration_ms: float | None = Field(default=None, ge=0)
    attributes: dict[str, ValueMatch] = Field(default_factory=dict)
    resource_attributes: dict[str, ValueMatch] = Field(default_factory=dict)

    @field_validator("span_kind")
    @classmethod
    def _known_kinds(cls, kinds: list[str] | None) -> list[str] | None:
        if kinds is None:
            return None
        unknown = [kind for kind in kinds if kind.lower() not in SPAN_KINDS]
        if unknown:
            raise ValueError(f"unknown span kinds {unknown}; use {', '.join(SPAN_KINDS[1:])}")
        return [kind.lower() for kind in kinds]

    @field_validator("operation")
    @classmethod
    def _lower(cls, operations: list[str] | None) -> list[str] | None:
        return [operation.lower() for operation in operations] if operations is not None else None


class RunFilter(SpanMatch):
    """Which units a rule scores. The span tests apply to the unit's own span (a run's root span, a
    model call's span); ``agent_name``, ``service_name`` and ``status`` to the unit as built;
    ``trace_has`` asks the trace for a span passing its tests (each one, when a list)."""

    agent_name: list[str] | None = None
    service_name: list[str] | None = None
    trace_has: list[SpanMatch] = Field(default_factory=list)

    @field_validator("trace_has", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class SpanTarget(_Model):
    """``target: {span: {...}}``: every span passing these tests is scored, the score landing on it."""

    span: SpanMatch


# ``session``: the whole conversation (the runs sharing a session id), once it is complete
# (docs/sessions.md); its score lands on the conversation's last run's root span.
Target = Literal["run", "llm_call", "session"] | SpanTarget


class BudgetLimits(_Model):
    """Judge spend allowed in a UTC clock hour and a UTC day; a limit left out is no limit.

    Calls count every request sent to the judge's provider (retries too); the cost is estimated from
    the prompt and litellm's price map before a call and settled with the provider's usage after it.
    """

    max_calls_per_hour: int | None = Field(default=None, ge=0)
    max_calls_per_day: int | None = Field(default=None, ge=0)
    max_usd_per_hour: float | None = Field(default=None, ge=0)
    max_usd_per_day: float | None = Field(default=None, ge=0)

    @property
    def limited(self) -> bool:
        return any(value is not None for value in self.model_dump().values())


DEFAULT_BREAKER_FAILURES = 5
DEFAULT_BREAKER_COOLDOWN_SECONDS = 30.0


class CircuitBreakerConfig(_Model):
    """Per judge model: after ``failures`` retriable failures in a row (429, 5xx, timeouts), calls to
    the model stop for ``cooldown_seconds``; then one probe call is let through (half-open), and its
    success closes the circuit again. Runs wait meanwhile, as in a judge outage."""

    enabled: bool = True
    failures: int = Field(default=DEFAULT_BREAKER_FAILURES, ge=1)
    cooldown_seconds: float = Field(default=DEFAULT_BREAKER_COOLDOWN_SECONDS, gt=0)


class RuleGate(_Model):
    """``when:``: the rule runs on a unit only after the rule named ``rule`` (its ``name``, else its
    scorer) has decided the same unit, and only if every test given here holds of that result.

    ``score_below``/``score_above``: the gate scored the unit below / above the value (both: between);
    ``label``: its score's label is this one (or one of these); ``decision``: its decision is this kind
    (or one of these: ``failed`` runs a fallback). A score or label test never holds of a unit the gate
    did not score.
    """

    rule: str = Field(min_length=1)
    score_below: float | None = None
    score_above: float | None = None
    label: list[str] | None = Field(default=None, min_length=1)
    decision: list[DecisionKind] | None = Field(default=None, min_length=1)

    @field_validator("label", "decision", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _some_test(self) -> RuleGate:
        tests = (self.score_below, self.score_above, self.label, self.decision)
        if all(test is None for test in tests):
            raise ValueError("give at least one of score_below, score_above, label, decision")
        below, above = self.score_below, self.score_above
        if below is not None and above is not None and above >= below:
            raise ValueError(f"score_above ({above:g}) must be less than score_below ({below:g})")
        return self


class ScorerRule(_Model):
    """One item of ``scoring.rules``."""

    scorer: str | None = None  # a prebuilt scorer's name or id (or package.module:factory)
    use: str | None = None  # a team's own scorer: "package.module:factory"
    options: dict[str, Any] = Field(default_factory=dict)
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    filter: RunFilter = Field(default_factory=RunFilter)
    target: Target = "run"
    budget: BudgetLimits | None = None
    circuit_breaker: CircuitBreakerConfig | None = None
    name: str | None = None  # the scorer id written to the store; default: the scorer's own id
    # A score at or above ``threshold`` passes (at or below it with ``pass_when: below``): counted in
    # the tracescore_score_outcomes metric and the pass rate of dashboards and drift detection.
    threshold: float | None = None
    pass_when: Literal["above", "below"] = "above"
    when: RuleGate | None = None  # a cascade: run after another rule's result (checked with the rules)

    @model_validator(mode="after")
    def _one_scorer(self) -> ScorerRule:
        if (self.scorer is None) == (self.use is None):
            raise ValueError("give the rule's scorer as either 'scorer' (a name or id) or 'use', not both")
        if self.use is not None and ":" not in self.use:
            raise ValueError(f"use: {self.use!r} must look like 'package.module:factory'")
        return self

    @property
    def reference(self) -> str:
        """The scorer the rule builds: its name, id or module:factory."""
        reference = self.use or self.scorer
        assert reference is not None  # the validator asks for one
        return reference

    @property
    def label(self) -> str:
        """How errors and ``--rule`` name this rule: its name, else its scorer."""
        return self.name or self.reference
