"""Route: which configured rule scores which unit of a trace, and the decision when none does.

A rule's ``target`` says what it scores: every agent run (``run``), every model call (``llm_call``),
or every span passing its ``span`` tests, or a whole conversation (``session``: the service gives those
rules to an executor of their own, fed the conversation units of completed sessions). For each unit
and each scorer id: the rule whose filter matches (none -> ``filtered``), then deterministic sampling
(out -> ``sampled_out``), then the content the scorer needs (absent -> ``skipped_empty``), then the
size of its text (over ``max_run_chars`` -> ``skipped_too_large``); a unit that passes them all goes
to the executor, which for a rule with ``when`` first waits for its gate's result on the unit
(``scoring.runtime.cascades``: held -> ``gated``). Gating comes last, so a filtered or sampled-out unit
never waits for, nor costs, anything more. Several rules may store under one scorer id (one scorer with
other options per agent) when their filters are disjoint; a unit then gets the decision of the rule
that matches it.

Loop guard: a unit that is one of tracescore's own judge calls (its span or an ancestor carries
``tracescore.judge``, or its system prompt opens with the judges' preamble) is never scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tracescore.schemas import AgentRun, DecisionKind
from tracescore.schemas.config import JudgeConfig
from tracescore.schemas.rules import (
    BudgetLimits,
    CircuitBreakerConfig,
    RuleGate,
    RunFilter,
    ScorerRule,
    SpanTarget,
    Target,
)
from tracescore.schemas.spans import STATUS_ERROR
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.judge.call_guard import JUDGE_SPAN_ATTRIBUTE
from tracescore.scoring.judge.data_fences import PREAMBLE_SIGNATURE
from tracescore.scoring.prebuilt.registry import ScorerFactory, build_scorer
from tracescore.scoring.runtime.cascades import CascadeNode, gate_order, resolve_gates
from tracescore.scoring.runtime.empty_runs import empty_run_reason
from tracescore.scoring.runtime.rule_filters import span_matches, unit_matches
from tracescore.scoring.runtime.sampling import is_sampled
from tracescore.scoring.runtime.scorer_version import scorer_version


@dataclass(frozen=True, slots=True)
class Rule:
    """One configured rule, its scorer built."""

    scorer_id: str  # the id written to the store: the rule's name, else the scorer's own id
    scorer: Scorer
    sample_rate: float
    filter: RunFilter
    target: Target = "run"
    budget: BudgetLimits | None = None
    circuit_breaker: CircuitBreakerConfig | None = None
    threshold: float | None = None
    pass_when: str = "above"
    label: str = ""  # how the config names the rule: its name, else its scorer (for log lines)
    when: RuleGate | None = None  # a cascade: the gate whose result on the unit this rule waits for
    gate_id: str = ""  # the scorer id that gate stores ("" without ``when``)
    # The scorer's version stored with its scores, derived once when the rules are built
    # (``scoring.runtime.scorer_version``).
    version: str = ""

    @property
    def described(self) -> str:
        """``rule <label> (scorer <id>)``: the rule as the config names it and the scorer it runs."""
        return f"rule {self.label or self.scorer_id} (scorer {self.scorer.id})"

    def passes(self, score: float) -> bool | None:
        """Whether ``score`` passes the rule's threshold; None without one."""
        if self.threshold is None:
            return None
        return score >= self.threshold if self.pass_when == "above" else score <= self.threshold

    def matches(self, run: AgentRun, trace: TraceView | None = None) -> bool:
        return unit_matches(self.filter, run, trace)[0]

    def targets(self, unit: AgentRun, trace: TraceView | None) -> bool:
        """Whether ``unit`` is one this rule's target names (runs are always checked by kind)."""
        if not isinstance(self.target, SpanTarget):
            return True
        span = trace.spans.get(unit.span_id) if trace is not None else None
        return span is not None and span_matches(self.target.span, span)


# Rules that store under one scorer id, in config order; their filters are disjoint.
RuleGroup = tuple[Rule, ...]


@dataclass(frozen=True, slots=True)
class Routed:
    """Where a unit goes for one scorer id: to ``rule``'s scorer, or nowhere with a decision."""

    rule: Rule
    decision: DecisionKind | None = None  # None: score it
    detail: str = ""


def _disjoint(a: RunFilter, b: RunFilter) -> bool:
    """True when no unit can match both filters: some field lists values the other excludes."""
    pairs = ((a.agent_name, b.agent_name), (a.service_name, b.service_name), (a.status, b.status))
    return any(x is not None and y is not None and not set(x) & set(y) for x, y in pairs)


def _kind(target: Target) -> str:
    return "span" if isinstance(target, SpanTarget) else target


def build_rules(
    rules: Sequence[ScorerRule],
    registry: Mapping[str, ScorerFactory] | None = None,
    judge: JudgeConfig | None = None,
) -> tuple[RuleGroup, ...]:
    """The rules with their scorers built, grouped by the scorer id they store (in order of first
    appearance). Raises ValueError naming the rule when one cannot be built, ``CascadeError`` (one)
    when its ``when`` names no gate it can wait for (``scoring.runtime.cascades``)."""
    default_judge = judge.judge_settings() if judge is not None else None
    built: list[Rule] = []
    for index, rule in enumerate(rules):
        where = f"scoring.rules[{index}] ({rule.label})"
        try:
            scorer = build_scorer(
                rule.reference, rule.options, registry=registry, default_judge=default_judge
            )
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        scorer_id = rule.name or scorer.id
        for other_index, other in enumerate(built):
            if other.scorer_id != scorer_id:
                continue
            # Two rules may share a stored id only for units they can never both match (one scorer,
            # other options per agent); otherwise one rule's score would overwrite the other's.
            if _kind(other.target) != _kind(rule.target):
                raise ValueError(
                    f"scoring rules {other_index} and {index} both store scores as {scorer_id!r} "
                    "but target different units; give one of them a distinct name"
                )
            if not _disjoint(other.filter, rule.filter):
                raise ValueError(
                    f"scoring rules {other_index} and {index} both store scores as {scorer_id!r} "
                    "for the same runs; give one of them a distinct name"
                )
        built.append(
            Rule(
                scorer_id,
                scorer,
                rule.sample_rate,
                rule.filter,
                rule.target,
                rule.budget,
                rule.circuit_breaker,
                rule.threshold,
                rule.pass_when,
                rule.label,
                rule.when,
                version=scorer_version(rule, scorer, registry),
            )
        )
    nodes = [CascadeNode(rule.label, rule.scorer_id, _kind(rule.target), rule.when) for rule in built]
    gated = zip(built, resolve_gates(nodes), strict=True)
    built = [replace(rule, gate_id=gate_id) if gate_id else rule for rule, gate_id in gated]
    groups: dict[str, list[Rule]] = {}
    for built_rule in built:
        groups.setdefault(built_rule.scorer_id, []).append(built_rule)
    return tuple(tuple(group) for group in groups.values())


def routing_order(groups: Sequence[RuleGroup]) -> tuple[RuleGroup, ...]:
    """``groups`` with every cascade's gate before the rules it gates, else in config order."""
    by_id = {group[0].scorer_id: group for group in groups}
    waits_for = {
        scorer_id: {rule.gate_id for rule in group if rule.gate_id} for scorer_id, group in by_id.items()
    }
    return tuple(by_id[scorer_id] for scorer_id in gate_order(list(by_id), waits_for))


def gate_ids(groups: Sequence[RuleGroup]) -> frozenset[str]:
    """The scorer ids some rule waits for (the gates of cascades)."""
    return frozenset(rule.gate_id for group in groups for rule in group if rule.gate_id)


def thresholds(groups: Sequence[RuleGroup]) -> dict[str, tuple[float, str]]:
    """Each stored scorer id's pass threshold and direction, from the first of its rules with one."""
    found: dict[str, tuple[float, str]] = {}
    for group in groups:
        for rule in group:
            if rule.threshold is not None:
                found.setdefault(rule.scorer_id, (rule.threshold, rule.pass_when))
    return found


def rule_versions(groups: Sequence[RuleGroup]) -> dict[str, str]:
    """Each rule's derived version by how the config names the rule (rules named alike: their
    versions, in order, joined by `` / ``)."""
    found: dict[str, list[str]] = {}
    for group in groups:
        for rule in group:
            versions = found.setdefault(rule.label or rule.scorer_id, [])
            if rule.version not in versions:
                versions.append(rule.version)
    return {label: " / ".join(versions) for label, versions in found.items()}


def is_session_rule(rule: ScorerRule) -> bool:
    """Whether ``rule`` scores whole conversations (``target: session``)."""
    return rule.target == "session"


def is_own_judge_call(unit: AgentRun, trace: TraceView | None) -> bool:
    """The loop guard: ``unit`` is a call of tracescore's own judge (see the module docstring)."""
    if any(PREAMBLE_SIGNATURE in m.content for m in unit.input.system_messages):
        return True
    if trace is None:
        return False
    span = trace.spans.get(unit.span_id)
    if span is None:
        return False
    return any(
        s.attributes.get(JUDGE_SPAN_ATTRIBUTE) in (True, "true")
        for s in (span, *trace.ancestors(span.span_id))
    )


def units_for(
    target: Target, group: RuleGroup, runs: Sequence[AgentRun], trace: TraceView | None
) -> list[AgentRun]:
    """The units a rule group scores: the runs (a conversation's session unit for ``session`` rules),
    the model calls, or the spans its targets name."""
    if target == "run":
        return list(runs)
    if target == "session":
        return [run for run in runs if run.turns]  # conversation units only, never a single run
    if trace is None:
        return []
    if target == "llm_call":
        return list(trace.llm_calls)
    by_span = {run.span_id: run for run in runs}
    calls = {unit.span_id: unit for unit in trace.llm_calls}
    units: list[AgentRun] = []
    for span in trace.spans.values():
        if not any(isinstance(r.target, SpanTarget) and span_matches(r.target.span, span) for r in group):
            continue
        unit = by_span.get(span.span_id) or calls.get(span.span_id)
        if unit is None:
            run = by_span.get(trace.run_of.get(span.span_id, ""))
            if run is None:
                continue  # a span outside every run has no content to score
            status = "error" if span.status_code == STATUS_ERROR else "ok"
            unit = run.model_copy(
                update={"span_id": span.span_id, "parent_span_id": run.span_id, "status": status}
            )
        units.append(unit)
    return units


def route(
    run: AgentRun,
    group: RuleGroup,
    sampling_salt: str,
    max_run_chars: int | None = None,
    trace: TraceView | None = None,
) -> Routed:
    """Where the unit ``run`` goes for the scorer id of ``group``."""
    # Rules sharing a scorer id have disjoint filters: at most one matches.
    why_not = ""
    rule = None
    for candidate in group:
        if not candidate.targets(run, trace):
            continue
        matched, why = unit_matches(candidate.filter, run, trace)
        if matched:
            rule = candidate
            break
        why_not = why_not or why
    if rule is None:
        return Routed(group[0], "filtered", why_not)
    if not is_sampled(f"{run.run_id}:{rule.scorer_id}", rule.sample_rate, sampling_salt):
        return Routed(rule, "sampled_out")
    hint = trace.content_hint if trace is not None else None
    if reason := empty_run_reason(rule.scorer, run, hint):
        return Routed(rule, "skipped_empty", reason)
    if max_run_chars is not None and (chars := run.text_chars()) > max_run_chars:
        detail = f"the run holds {chars} characters of text, over scoring.max_run_chars ({max_run_chars})"
        return Routed(rule, "skipped_too_large", detail)
    return Routed(rule)
