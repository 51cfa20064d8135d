"""Cascades: ``when:`` checked when the rules are built, the gate's tests, and the executor running a
gated judge (litellm to the local OpenAI-compatible server) only on the units its heuristic gate lets
through, after the gate, exactly once, across a restart."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.support.llm_server import LLMServer, answering, error_reply
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink, until_done
from tracescore.ingest.replay.backfill import select_rules
from tracescore.schemas import AgentRun, ScoreSource, TraceRound
from tracescore.schemas.assembly_rounds import PriorOutcomes, UnitOutcome
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.schemas.rules import RuleGate
from tracescore.scoring.runtime.cascades import CascadeError, held_by
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.rule_check import rule_errors
from tracescore.scoring.runtime.rule_routing import build_rules, routing_order
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

# --- when: as configured --------------------------------------------------------------------------


def test_a_gate_takes_one_label_or_decision_or_a_list_and_asks_for_a_test() -> None:
    assert RuleGate.model_validate({"rule": "x", "label": "fail"}).label == ["fail"]
    assert RuleGate.model_validate({"rule": "x", "decision": ["failed", "budget_exceeded"]}).decision == [
        "failed",
        "budget_exceeded",
    ]
    with pytest.raises(ValidationError, match="give at least one of score_below"):
        RuleGate.model_validate({"rule": "x"})
    with pytest.raises(ValidationError, match=r"score_above \(0.8\) must be less than score_below \(0.5\)"):
        RuleGate.model_validate({"rule": "x", "score_below": 0.5, "score_above": 0.8})
    with pytest.raises(ValidationError, match="decision"):
        RuleGate.model_validate({"rule": "x", "decision": "lost"})


def _rules(*rules: dict[str, Any]) -> list[ScorerRule]:
    return [ScorerRule.model_validate(rule) for rule in rules]


@pytest.mark.parametrize(
    ("rules", "index", "reason"),
    [
        (
            [
                {"scorer": "textual-difference", "name": "tone"},
                {"scorer": "completeness", "when": {"rule": "tonne", "score_below": 0.5}},
            ],
            1,
            "no rule is named 'tonne'; did you mean 'tone'?",
        ),
        (
            [
                {"scorer": "textual-difference", "target": "llm_call"},
                {"scorer": "completeness", "when": {"rule": "textual-difference", "score_below": 0.5}},
            ],
            1,
            "rule 'textual-difference' scores llm_call units, this rule run units: a gate decides the "
            "same unit as the rule it gates",
        ),
        (
            [{"scorer": "completeness", "name": "a", "when": {"rule": "a", "score_below": 0.5}}],
            0,
            "the gates form a cycle: a -> a",
        ),
        (
            [
                {"scorer": "completeness", "name": "a", "when": {"rule": "c", "decision": "scored"}},
                {"scorer": "completeness", "name": "b", "when": {"rule": "a", "decision": "scored"}},
                {"scorer": "completeness", "name": "c", "when": {"rule": "b", "decision": "scored"}},
            ],
            0,
            "the gates form a cycle: a -> c -> b -> a",
        ),
    ],
)
def test_a_gate_that_cannot_hold_is_an_error_naming_the_rule_and_the_field(
    rules: list[dict[str, Any]], index: int, reason: str
) -> None:
    with pytest.raises(CascadeError) as caught:
        build_rules(_rules(*rules))
    assert caught.value.problems[0] == (index, reason)
    assert str(caught.value).startswith(f"scoring.rules[{index}] (")
    assert f"): when.rule: {reason}" in str(caught.value)


def test_the_config_check_reports_a_bad_gate_at_its_key() -> None:
    from tracescore.schemas.config import ServiceConfig

    data = {
        "scoring": {
            "rules": [
                {"scorer": "completeness", "when": {"rule": "tone", "score_below": 0.5}},
                {"scorer": "textual-difference", "name": "llm", "target": "llm_call"},
                {"scorer": "keyword-coverage", "when": {"rule": "llm", "decision": "scored"}},
            ]
        }
    }
    errors = rule_errors(data, ServiceConfig.model_validate(data))
    assert errors == [
        (("scoring", "rules", 0, "when", "rule"), "no rule is named 'tone'"),
        (
            ("scoring", "rules", 2, "when", "rule"),
            "rule 'llm' scores llm_call units, this rule run units: "
            "a gate decides the same unit as the rule it gates",
        ),
    ]


def test_a_chain_is_routed_gates_first() -> None:
    groups = build_rules(
        _rules(
            {"scorer": "completeness", "name": "c", "when": {"rule": "b", "score_below": 0.5}},
            {"scorer": "completeness", "name": "b", "when": {"rule": "a", "score_below": 0.5}},
            {"scorer": "textual-difference", "name": "a"},
            {"scorer": "content-similarity"},
        )
    )
    assert [g[0].scorer_id for g in routing_order(groups)] == ["a", "b", "c", "content-similarity"]
    assert [g[0].gate_id for g in groups] == ["b", "a", "", ""]


# --- the gate's tests -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "outcome", "held"),
    [
        ({"score_below": 0.5}, UnitOutcome("scored", 0.3), None),
        ({"score_below": 0.5}, UnitOutcome("scored", 0.82), "score 0.82 is not below 0.5"),
        ({"score_below": 0.5}, UnitOutcome("scored", 0.5), "score 0.5 is not below 0.5"),
        ({"score_above": 0.5}, UnitOutcome("scored", 0.3), "score 0.3 is not above 0.5"),
        ({"score_above": 0.2, "score_below": 0.6}, UnitOutcome("scored", 0.3), None),
        ({"score_below": 0.5}, UnitOutcome("sampled_out"), "it was sampled_out"),
        ({"label": "fail"}, UnitOutcome("scored", 0.1, "fail"), None),
        (
            {"label": ["fail", "unsure"]},
            UnitOutcome("scored", 0.9, "pass"),
            "label 'pass' is not fail or unsure",
        ),
        ({"label": "fail"}, UnitOutcome("scored", 0.1), "it gave no label (fail)"),
        ({"label": "fail"}, UnitOutcome("failed"), "it was failed"),
        ({"decision": "failed"}, UnitOutcome("failed"), None),
        ({"decision": "failed"}, UnitOutcome("scored", 1.0), "its decision scored is not failed"),
        ({"decision": ["sampled_out", "gated"]}, UnitOutcome("gated"), None),
        ({"score_below": 0.5}, None, "it does not score this unit"),
    ],
)
def test_the_gate_s_result_lets_the_rule_through_or_says_why_not(
    when: dict[str, Any], outcome: UnitOutcome | None, held: str | None
) -> None:
    gate = RuleGate.model_validate({"rule": "tone", **when})
    assert held_by(gate, outcome) == (None if held is None else f"held by rule tone: {held}")


# --- the executor: a heuristic gate before a judge --------------------------------------------------

VERDICTS = {"verdicts": [{"verdict": "no", "reason": "polite"}]}
SAME = "Paris is the capital of France."


def _run(i: int, answer: str) -> AgentRun:
    return agent_run(SAME, answer, trace_id=f"{i:032x}", span_id=f"{i:016x}")


def _cascade(server: LLMServer, **when: Any) -> ScoringConfig:
    judge = {"model": "openai/gpt-4o-mini", "api_base": server.api_base, "api_key": "k", "max_retries": 1}
    return ScoringConfig(
        rules=[
            # The judge comes first in the config: the gate is still routed before it.
            ScorerRule(scorer="toxicity", options={"judge": judge}, when=RuleGate(rule="echo", **when)),
            ScorerRule(scorer="textual-difference", name="echo"),
        ],
        retry_max_age_seconds=60,
    )


def _round(run: AgentRun) -> TraceRound:
    return TraceRound(trace_id=run.trace_id, since_unix_nano=1, through_unix_nano=2, reason="idle")


async def test_only_units_the_gate_lets_through_reach_the_judge(llm_server: LLMServer) -> None:
    llm_server.responder = answering(VERDICTS, "The score is 0 because the answer is polite.")
    # textual difference of the question and the answer: 1.0 for an echo, lower for a real answer.
    runs = [_run(1, SAME), _run(2, "Yes, Paris."), _run(3, SAME), _run(4, "It is Lyon, I think.")]
    sink, metrics = RecordingSink(), ScoringMetrics()
    executor = ScoringExecutor(_cascade(llm_server, score_below=0.8), sink, metrics, flush_interval=0.05)
    await executor.start()
    try:
        # 1 is held before the judge scored anything (priced when 2 is scored), 3 after 2 and 4 were.
        for batch in ([runs[0]], [runs[1]], [runs[3]], [runs[2]]):
            await executor.consume_runs(batch, _round(batch[0]))
            await executor.drain()
    finally:
        await executor.shutdown()
    decisions = {(d.trace_id[-1], d.scorer_id): (d.decision, d.detail) for d in sink.decisions}
    echo = {r.trace_id[-1]: r.score for r in sink.records if r.scorer_id == "echo"}
    assert echo["1"] == echo["3"] == 1.0 and echo["2"] < 0.8 and echo["4"] < 0.8
    assert decisions[("1", "toxicity")] == ("gated", "held by rule echo: score 1 is not below 0.8")
    assert decisions[("3", "toxicity")] == ("gated", "held by rule echo: score 1 is not below 0.8")
    assert decisions[("2", "toxicity")][0] == decisions[("4", "toxicity")][0] == "scored"
    # Two scored units, the toxicity judge's two calls each (verdicts, then the reason): no more.
    assert len(llm_server.chat_requests) == 4
    opinions = [p for p in llm_server.user_prompts() if "Opinions:" in p]  # the verdict calls
    assert len(opinions) == 2 and sum("Yes, Paris." in p or "Lyon" in p for p in opinions) == 2
    assert len(sink.done) == 4  # every round marked done, after both of its decisions
    sample = metrics.registry.get_sample_value
    assert sample("tracescore_scoring_decisions_total", {"scorer": "toxicity", "decision": "gated"}) == 2
    assert sample("tracescore_judge_units_avoided_total", {"scorer": "toxicity"}) == 2
    # Each gated unit avoided what a scored one cost on average: two calls; 1 at 2's cost, 3 at the
    # mean of 2's and 4's.
    assert sample("tracescore_judge_calls_avoided_total", {"scorer": "toxicity"}) == 2 * 2
    costs = {r.trace_id[-1]: r.cost_usd for r in sink.records if r.scorer_id == "toxicity"}
    assert costs["2"] > 0 and costs["4"] > 0
    avoided = sample("tracescore_judge_cost_avoided_usd_total", {"scorer": "toxicity"})
    assert avoided == pytest.approx(costs["2"] + (costs["2"] + costs["4"]) / 2)
    per_1000 = sample("tracescore_judge_cost_per_1000_scored_units_usd", {"scorer": "toxicity"})
    assert per_1000 == pytest.approx(1000 * (costs["2"] + costs["4"]) / 2)


async def test_a_gate_waiting_for_its_judge_holds_the_gated_unit_and_its_round(llm_server: LLMServer) -> None:
    # A judge gate (toxicity, down for its first attempt) before a heuristic.
    llm_server.script(error_reply(503), error_reply(503))
    llm_server.responder = answering(VERDICTS, "The score is 0 because the answer is polite.")
    config = _cascade_judge_gate(llm_server, max_retries=1)
    run = _run(1, "Yes, Paris.")
    sink = RecordingSink()
    executor = ScoringExecutor(config, sink, ScoringMetrics(), flush_interval=0.05)
    await executor.start()
    try:
        await executor.consume_runs([run], _round(run))
        await executor.drain()
        assert sink.decisions == [] and sink.done == []  # both wait: the round stays open
        assert executor.oldest_open() == 1
        await until_done(executor, sink)  # the gate's retry comes after a second or so of backoff
    finally:
        await executor.shutdown()
    assert [(d.scorer_id, d.decision) for d in sink.decisions] == [
        ("toxicity", "scored"),
        ("textual-difference", "scored"),
    ]
    assert sink.done == [_round(run)]


def _heuristics(*rules: dict[str, Any]) -> ScoringConfig:
    return ScoringConfig(rules=_rules(*rules), sampling_salt="s")


async def _decide(
    config: ScoringConfig, run: AgentRun, prior: PriorOutcomes | None = None, *, backfill: bool = False
) -> RecordingSink:
    """The decisions of ``run``: in a round resumed with ``prior`` (none: a new round), or, in a
    backfill, with ``prior`` as the earlier outcomes."""
    sink = RecordingSink()
    resumed = {"resumed": prior is not None, "prior": prior}
    round = None if backfill else _round(run).model_copy(update=resumed)
    source: ScoreSource = "backfill" if backfill else "live"
    executor = ScoringExecutor(config, sink, ScoringMetrics(), source=source, flush_interval=0.05)
    await executor.start()
    try:
        await executor.consume_runs([run], round, None, prior=prior if backfill else None)
        await executor.drain()
    finally:
        await executor.shutdown()
    assert sink.done == ([round] if round is not None else [])
    return sink


async def test_a_held_rule_holds_the_rules_it_gates_in_turn() -> None:
    config = _heuristics(
        {"scorer": "content-similarity", "name": "c", "when": {"rule": "b", "decision": "scored"}},
        {"scorer": "completeness", "name": "b", "when": {"rule": "a", "score_below": 0.5}},
        {"scorer": "textual-difference", "name": "a"},
    )
    sink = await _decide(config, _run(1, SAME))
    assert [(d.scorer_id, d.decision, d.detail) for d in sink.decisions] == [
        ("a", "scored", ""),
        ("b", "gated", "held by rule a: score 1 is not below 0.5"),
        ("c", "gated", "held by rule b: its decision gated is not scored"),
    ]


async def test_the_gated_rule_s_own_filter_and_sampling_come_before_its_gate() -> None:
    config = _heuristics(
        {"scorer": "textual-difference", "name": "a", "sample_rate": 0},
        {"scorer": "completeness", "name": "b", "sample_rate": 0, "when": {"rule": "a", "score_below": 2}},
        {"scorer": "content-similarity", "name": "c", "when": {"rule": "a", "score_below": 2}},
        {"scorer": "keyword-coverage", "name": "d", "when": {"rule": "a", "decision": "sampled_out"}},
    )
    sink = await _decide(config, _run(1, SAME))
    assert {d.scorer_id: (d.decision, d.detail) for d in sink.decisions} == {
        "a": ("sampled_out", ""),
        "b": ("sampled_out", ""),  # its own sampling: its gate never asked
        "c": ("gated", "held by rule a: it was sampled_out"),
        "d": ("scored", ""),
    }


async def test_after_a_restart_or_in_a_backfill_the_gate_s_stored_result_is_read_not_judged_again(
    llm_server: LLMServer,
) -> None:
    # No reply scripted: a call to the judge would fail the gate's rule, not score it.
    config = _cascade_judge_gate(llm_server)
    run = _run(1, "Yes, Paris.")
    gate = (run.span_id, "toxicity")
    decided = PriorOutcomes(decided=frozenset({gate}), outcomes={gate: UnitOutcome("scored", 0.0)})
    sink = await _decide(config, run, decided)
    assert [(d.scorer_id, d.decision) for d in sink.decisions] == [("textual-difference", "scored")]
    # A score row written without its decision (a kill between the two): its decision now, and the
    # gated rule held by the stored score.
    scored = PriorOutcomes(scored_undecided=frozenset({gate}), outcomes={gate: UnitOutcome("scored", 0.9)})
    sink = await _decide(config, run, scored)
    assert [(d.scorer_id, d.decision, d.detail[:40]) for d in sink.decisions] == [
        ("toxicity", "scored", "the score was written before a restart; "),
        ("textual-difference", "gated", "held by rule toxicity: score 0.9 is not "),
    ]
    # A backfill reads the gate's earlier score the same way.
    earlier = PriorOutcomes(earlier={gate: "scored"}, outcomes={gate: UnitOutcome("scored", 0.9)})
    sink = await _decide(config, run, earlier, backfill=True)
    assert [(d.scorer_id, d.decision, d.source) for d in sink.decisions] == [
        ("textual-difference", "gated", "backfill")
    ]
    assert llm_server.chat_requests == []


def _cascade_judge_gate(server: LLMServer, max_retries: int = 0) -> ScoringConfig:
    """A toxicity judge gating a heuristic; a judge that failed is tried again for a minute."""
    judge = {"model": "openai/gpt-4o-mini", "api_base": server.api_base, "api_key": "k"}
    return ScoringConfig(
        rules=[
            ScorerRule(scorer="toxicity", options={"judge": {**judge, "max_retries": max_retries}}),
            ScorerRule(scorer="textual-difference", when=RuleGate(rule="toxicity", score_below=0.5)),
        ],
        retry_max_age_seconds=60,
    )


def test_a_backfill_of_a_gated_rule_takes_its_gates() -> None:
    # `--rule big` backfills its gate too (and that one's gate: a chain).
    rules = _rules(
        {"scorer": "textual-difference", "name": "a"},
        {"scorer": "completeness", "name": "b", "when": {"rule": "a", "score_below": 0.5}},
        {"scorer": "content-similarity", "name": "big", "when": {"rule": "b", "score_below": 0.5}},
        {"scorer": "keyword-coverage"},
    )
    assert select_rules(rules, ["big"], ["a", "b", "big", "keyword-coverage"]) == [0, 1, 2]
