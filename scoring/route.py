"""Route: which configured rule scores a run, and the decision when none does.

For every run and every scorer id: the rule whose filter matches (none -> ``filtered``), then
deterministic sampling (out -> ``sampled_out``), then the content the scorer needs (absent ->
``skipped_empty``), then the size of its text (over ``max_run_chars`` -> ``skipped_too_large``); a
run that passes them all goes to the executor. Several rules may store under
one scorer id (one scorer with other options per agent) when their filters are disjoint; a run then
gets the decision of the rule that matches it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from schemas import AgentRun, DecisionKind
from schemas.config import JudgeConfig, RunFilter, ScorerRule
from scoring.registry import ScorerFactory, build_scorer
from scoring.sampling import is_sampled
from scoring.scorer import Scorer


@dataclass(frozen=True, slots=True)
class Rule:
    """One configured rule, its scorer built."""

    scorer_id: str  # the id written to the store: the rule's name, else the scorer's own id
    scorer: Scorer
    sample_rate: float
    filter: RunFilter

    def matches(self, run: AgentRun) -> bool:
        wanted = self.filter
        return (
            (wanted.agent_name is None or run.agent_name in wanted.agent_name)
            and (wanted.service_name is None or run.service_name in wanted.service_name)
            and (wanted.status is None or run.status in wanted.status)
        )


# Rules that store under one scorer id, in config order; their filters are disjoint.
RuleGroup = tuple[Rule, ...]


@dataclass(frozen=True, slots=True)
class Routed:
    """Where a run goes for one scorer id: to ``rule``'s scorer, or nowhere with a decision."""

    rule: Rule
    decision: DecisionKind | None = None  # None: score it
    detail: str = ""


def _disjoint(a: RunFilter, b: RunFilter) -> bool:
    """True when no run can match both filters: some field lists values the other excludes."""
    pairs = ((a.agent_name, b.agent_name), (a.service_name, b.service_name), (a.status, b.status))
    return any(x is not None and y is not None and not set(x) & set(y) for x, y in pairs)


def build_rules(
    rules: Sequence[ScorerRule],
    registry: Mapping[str, ScorerFactory] | None = None,
    judge: JudgeConfig | None = None,
) -> tuple[RuleGroup, ...]:
    """The rules with their scorers built, grouped by the scorer id they store (in order of first
    appearance). Raises ValueError naming the rule when one cannot be built."""
    default_judge = judge.model_dump(exclude_none=True) if judge is not None else None
    built: list[Rule] = []
    for index, rule in enumerate(rules):
        try:
            scorer = build_scorer(rule.scorer, rule.options, registry=registry, default_judge=default_judge)
        except ValueError as exc:
            raise ValueError(f"scoring rule {index} ({rule.scorer!r}): {exc}") from exc
        scorer_id = rule.name or scorer.id
        # Two rules may share a stored id only for runs they can never both match (one scorer,
        # other options per agent); otherwise one rule's score would overwrite the other's.
        for other_index, other in enumerate(built):
            if other.scorer_id == scorer_id and not _disjoint(other.filter, rule.filter):
                raise ValueError(
                    f"scoring rules {other_index} and {index} both store scores as {scorer_id!r} "
                    "for the same runs; give one of them a distinct name"
                )
        built.append(Rule(scorer_id, scorer, rule.sample_rate, rule.filter))
    groups: dict[str, list[Rule]] = {}
    for built_rule in built:
        groups.setdefault(built_rule.scorer_id, []).append(built_rule)
    return tuple(tuple(group) for group in groups.values())


def missing_detail(missing: Sequence[str], content_missing: bool) -> str:
    """Why a run was skipped: the text it lacks, and whether its content was not captured."""
    texts = [need for need in missing if need != "ground_truth"]
    parts = [f"no {' or '.join(texts)} text"] if texts else []
    if "ground_truth" in missing:
        parts.append("no ground truth")
    capture = " (content capture off or redacted)" if content_missing and texts else ""
    return f"run has {' and '.join(parts)}{capture}"


def route(run: AgentRun, group: RuleGroup, sampling_salt: str, max_run_chars: int | None = None) -> Routed:
    """Where ``run`` goes for the scorer id of ``group``."""
    # Rules sharing a scorer id have disjoint filters: at most one matches.
    rule = next((rule for rule in group if rule.matches(run)), None)
    if rule is None:
        return Routed(group[0], "filtered")
    if not is_sampled(f"{run.run_id}:{rule.scorer_id}", rule.sample_rate, sampling_salt):
        return Routed(rule, "sampled_out")
    if missing := rule.scorer.missing_needs(run):
        return Routed(rule, "skipped_empty", missing_detail(missing, run.content_missing))
    if max_run_chars is not None and (chars := run.text_chars()) > max_run_chars:
        detail = f"the run holds {chars} characters of text, over scoring.max_run_chars ({max_run_chars})"
        return Routed(rule, "skipped_too_large", detail)
    return Routed(rule)
