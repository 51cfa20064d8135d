"""Cascades: a rule that runs on a unit only after another rule's result on it (``when:``).

A gated rule names its gate by the gate's label (its ``name``, else its scorer). When the rules are
built, each gate is resolved to the scorer id it stores (``resolve_gates``): it must exist, name one
scorer id, score the same kind of unit, and the gates must not form a cycle (a chain a -> b -> c is
fine); the executor then routes gates before the rules they gate (``gate_order``).

At run time a unit is routed through the gated rule's filter, sampling and size checks first (each
decided without waiting), then it waits for its gate's outcome on the same unit (``GateBoard``): if
``held_by`` finds the gate's result failing a test of ``when``, the decision is ``gated`` with the
gate and the reason in its detail; otherwise the scorer runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.rules import RuleGate
from tracescore.schemas.suggest import did_you_mean

W = TypeVar("W")


class CascadeError(ValueError):
    """Rules whose ``when`` cannot hold: ``problems`` are (the rule's place in ``scoring.rules``, what
    is wrong with its ``when.rule``), each rule once."""

    def __init__(self, problems: Sequence[tuple[int, str, str]]) -> None:
        super().__init__(
            "; ".join(f"scoring.rules[{i}] ({label}): when.rule: {why}" for i, label, why in problems)
        )
        self.problems = [(index, reason) for index, _, reason in problems]


@dataclass(frozen=True, slots=True)
class CascadeNode:
    """What resolving gates reads of one rule: how the config names it, the scorer id it stores,
    the kind of unit it scores, its ``when``."""

    label: str
    scorer_id: str
    unit_kind: str
    when: RuleGate | None


def resolve_gates(nodes: Sequence[CascadeNode]) -> list[str]:
    """The scorer id of each rule's gate ("" for a rule without ``when``), in the rules' order.
    Raises ``CascadeError`` naming every rule whose gate is missing, ambiguous or scores other units;
    when there is none, every rule that closes a cycle."""
    by_label: dict[str, set[str]] = {}
    kinds: dict[str, str] = {}
    for node in nodes:
        by_label.setdefault(node.label, set()).add(node.scorer_id)
        kinds[node.scorer_id] = node.unit_kind
    gates: list[str] = []
    problems: list[tuple[int, str, str]] = []
    for index, node in enumerate(nodes):
        gate, problem = _gate_of(node, by_label, kinds) if node.when is not None else ("", None)
        gates.append(gate)
        if problem is not None:
            problems.append((index, node.label, problem))
    problems = problems or _cycles(nodes, gates)
    if problems:
        raise CascadeError(problems)
    return gates


def _gate_of(
    node: CascadeNode, by_label: Mapping[str, set[str]], kinds: Mapping[str, str]
) -> tuple[str, str | None]:
    """The scorer id of the gate ``node`` names, or why it has none."""
    assert node.when is not None
    named = by_label.get(node.when.rule, set())
    if not named:
        return "", f"no rule is named {node.when.rule!r}{did_you_mean(node.when.rule, by_label)}"
    if len(named) > 1:
        return "", f"{node.when.rule!r} names rules storing as {', '.join(sorted(named))}; name them apart"
    (gate,) = named
    if kinds[gate] != node.unit_kind:
        why = (
            f"rule {node.when.rule!r} scores {kinds[gate]} units, this rule {node.unit_kind} units: "
            "a gate decides the same unit as the rule it gates"
        )
        return "", why
    return gate, None


def _cycles(nodes: Sequence[CascadeNode], gates: Sequence[str]) -> list[tuple[int, str, str]]:
    """Each rule whose gates lead back to its own scorer id, with the loop."""
    waits_for: dict[str, set[str]] = {}
    for node, gate in zip(nodes, gates, strict=True):
        if gate:
            waits_for.setdefault(node.scorer_id, set()).add(gate)
    labels = {node.scorer_id: node.label for node in nodes}
    problems: list[tuple[int, str, str]] = []
    for index, (node, gate) in enumerate(zip(nodes, gates, strict=True)):
        path = _path(gate, node.scorer_id, waits_for) if gate else None
        if path is not None:
            loop = " -> ".join(labels[scorer_id] for scorer_id in (node.scorer_id, *path))
            problems.append((index, node.label, f"the gates form a cycle: {loop}"))
    return problems


def _path(start: str, goal: str, waits_for: Mapping[str, set[str]]) -> list[str] | None:
    """The scorer ids from ``start`` to ``goal`` following gates (depth first), or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        current, path = stack.pop()
        if current == goal:
            return path
        if current in seen:
            continue
        seen.add(current)
        stack.extend((gate, [*path, gate]) for gate in sorted(waits_for.get(current, ())))
    return None


def gate_order(scorer_ids: Sequence[str], waits_for: Mapping[str, set[str]]) -> list[str]:
    """``scorer_ids`` with every gate before the rules it gates, otherwise in their given order."""
    placed: list[str] = []
    done: set[str] = set()

    def place(scorer_id: str) -> None:
        if scorer_id in done:
            return
        done.add(scorer_id)  # the gates are acyclic (``resolve_gates``)
        for gate in sorted(waits_for.get(scorer_id, ()), key=scorer_ids.index):
            place(gate)
        placed.append(scorer_id)

    for scorer_id in scorer_ids:
        place(scorer_id)
    return placed


def held_by(when: RuleGate, outcome: UnitOutcome | None) -> str | None:
    """Why the gate's ``outcome`` holds the unit (the ``gated`` decision's detail), or None when every
    test of ``when`` holds and the gated rule runs. A gate that never decided the unit (None: the unit
    is not one it scores) holds it."""
    why = "it does not score this unit" if outcome is None else _why_held(when, outcome)
    return None if why is None else f"held by rule {when.rule}: {why}"


def _why_held(when: RuleGate, outcome: UnitOutcome) -> str | None:
    if when.decision is not None and outcome.decision not in when.decision:
        return f"its decision {outcome.decision} is not {' or '.join(when.decision)}"
    if when.score_below is None and when.score_above is None and when.label is None:
        return None
    if outcome.decision != "scored" or outcome.score is None:
        return f"it was {outcome.decision}"
    if when.score_below is not None and not outcome.score < when.score_below:
        return f"score {outcome.score:g} is not below {when.score_below:g}"
    if when.score_above is not None and not outcome.score > when.score_above:
        return f"score {outcome.score:g} is not above {when.score_above:g}"
    if when.label is not None and outcome.label not in when.label:
        wanted = " or ".join(when.label)
        return f"label {outcome.label!r} is not {wanted}" if outcome.label else f"it gave no label ({wanted})"
    return None


class GateBoard(Generic[W]):
    """The gate outcomes of one trace's units as the executor learns them, and the gated work
    (``W``) waiting for them, by (unit span id, gate scorer id). Only the outcomes of ``gates`` (the
    scorer ids some rule waits for) are kept."""

    def __init__(self, gates: frozenset[str]) -> None:
        self._gates = gates
        self._outcomes: dict[tuple[str, str], UnitOutcome] = {}
        self._expected: set[tuple[str, str]] = set()
        self._waiting: dict[tuple[str, str], list[W]] = {}

    def expect(self, span_id: str, scorer_id: str) -> None:
        """The rule of ``scorer_id`` will decide the unit later (it is queued, or waits itself)."""
        self._expected.add((span_id, scorer_id))

    def outcome(self, span_id: str, gate_id: str) -> UnitOutcome | None:
        return self._outcomes.get((span_id, gate_id))

    def will_decide(self, span_id: str, gate_id: str) -> bool:
        """Whether the gate's outcome on the unit is still to come (routed, not yet decided)."""
        key = (span_id, gate_id)
        return key in self._expected and key not in self._outcomes

    def wait(self, span_id: str, gate_id: str, waiter: W) -> None:
        self._waiting.setdefault((span_id, gate_id), []).append(waiter)

    def settle(self, span_id: str, scorer_id: str, outcome: UnitOutcome) -> list[W]:
        """Record what the rule of ``scorer_id`` came to on the unit; returns the work that waited."""
        if scorer_id not in self._gates:
            return []
        key = (span_id, scorer_id)
        self._outcomes[key] = outcome
        return self._waiting.pop(key, [])
