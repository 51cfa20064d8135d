"""Rule filters: every kind of test on spans, attributes, units and traces, and how bad rules are told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.runs import agent_run
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas import Span
from tracescore.schemas.config import ConfigError
from tracescore.schemas.rules import RunFilter, ScorerRule, SpanMatch, ValueMatch
from tracescore.schemas.spans import STATUS_ERROR, STATUS_OK
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.runtime.rule_filters import span_matches, unit_matches, value_matches

MS = 1_000_000


def span(
    span_id: str = "1" * 16,
    name: str = "chat gpt-4o",
    kind: int = 3,
    parent: str = "",
    duration_ms: float = 100,
    status: int = STATUS_OK,
    resource: dict[str, Any] | None = None,
    **attributes: Any,
) -> Span:
    return Span(
        trace_id="a" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=kind,
        start_time_unix_nano=1_000 * MS,
        end_time_unix_nano=1_000 * MS + int(duration_ms * MS),
        status_code=status,
        attributes={key.replace("__", "."): value for key, value in attributes.items()},
        resource_attributes=resource or {"service.name": "svc"},
    )


def test_a_bare_value_means_equals_and_a_list_means_in() -> None:
    assert ValueMatch.model_validate("gold").equals == "gold"
    assert ValueMatch.model_validate(["a", "b"]).in_ == ["a", "b"]


@pytest.mark.parametrize(
    ("test", "value", "expected"),
    [
        ({"equals": "gold"}, "gold", True),
        ({"equals": "gold"}, "silver", False),
        ({"equals": 5}, "5", True),  # numbers compare as numbers, whatever their type
        ({"equals": 5}, 5.0, True),
        ({"equals": True}, True, True),
        ({"equals": True}, "true", True),
        ({"in": ["gpt-4o", "gpt-4o-mini"]}, "gpt-4o-mini", True),
        ({"in": ["gpt-4o", "gpt-4o-mini"]}, "claude", False),
        ({"regex": "^gpt-4"}, "gpt-4o", True),
        ({"regex": "^gpt-4"}, "o3-gpt-4", False),
        ({"regex": "tool"}, ["search", "tool_a"], True),  # lists are searched as JSON
        ({"exists": True}, "anything", True),
        ({"gt": 100}, 150, True),
        ({"gt": 100}, "150", True),
        ({"gt": 100}, 100, False),
        ({"lt": 0.5}, 0.2, True),
        ({"gt": 1, "lt": 3}, 2, True),
        ({"gt": 1, "lt": 3}, 3, False),
        ({"gt": 1}, "many", False),  # not a number: never matches a numeric test
        ({"gt": 1}, True, False),
    ],
)
def test_value_tests(test: dict[str, Any], value: Any, expected: bool) -> None:
    assert value_matches(ValueMatch.model_validate(test), value) is expected


def test_a_missing_key_matches_only_exists_false() -> None:
    attributes = {"present": 1}
    for test, expected in (({"exists": False}, True), ({"exists": True}, False), ({"equals": 1}, False)):
        assert value_matches(ValueMatch.model_validate(test), attributes.get("absent")) is expected
    assert value_matches(ValueMatch.model_validate({"exists": False})) is True


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ({"name": "chat gpt-4o"}, True),
        ({"name": ["chat gpt-4o", "chat o3"]}, True),
        ({"name": {"regex": "^execute_tool"}}, False),
        ({"span_kind": ["client"]}, True),
        ({"span_kind": ["INTERNAL"]}, False),
        ({"operation": ["chat"]}, True),
        ({"operation": ["invoke_agent"]}, False),
        ({"status": ["ok"]}, True),
        ({"status": ["error"]}, False),
        ({"min_duration_ms": 100}, True),
        ({"min_duration_ms": 100.5}, False),
        ({"attributes": {"gen_ai.request.model": {"in": ["gpt-4o"]}}}, True),
        ({"attributes": {"gen_ai.usage.input_tokens": {"gt": 1000}}}, False),
        ({"attributes": {"user.tier": "gold", "gen_ai.request.model": "gpt-4o"}}, True),
        ({"attributes": {"user.tier": "gold", "gen_ai.request.model": "o3"}}, False),
        ({"resource_attributes": {"deployment.environment": "production"}}, True),
        ({"resource_attributes": {"deployment.environment": {"regex": "^stag"}}}, False),
        ({"name": {"regex": "^chat"}, "span_kind": ["client"], "min_duration_ms": 50}, True),
    ],
)
def test_span_tests(test: dict[str, Any], expected: bool) -> None:
    chat = span(
        gen_ai__operation__name="chat",
        gen_ai__request__model="gpt-4o",
        gen_ai__usage__input_tokens=812,
        user__tier="gold",
        resource={"service.name": "svc", "deployment.environment": "production"},
    )
    assert span_matches(SpanMatch.model_validate(test), chat) is expected


def test_operation_reads_the_openinference_span_kind_too() -> None:
    llm = span(openinference__span__kind="LLM")
    assert span_matches(SpanMatch(operation=["llm"]), llm)
    assert not span_matches(SpanMatch(operation=["agent"]), llm)


def test_status_error_and_span_kinds() -> None:
    failed = span(status=STATUS_ERROR, kind=1)
    assert span_matches(SpanMatch.model_validate({"status": ["error"], "span_kind": ["internal"]}), failed)


def test_a_unit_filter_reads_the_unit_its_span_and_its_trace() -> None:
    root = span("1" * 16, "invoke_agent support", kind=1, duration_ms=900, gen_ai__agent__name="support")
    chat = span("2" * 16, "chat gpt-4o", parent=root.span_id, gen_ai__request__model="gpt-4o")
    tool = span("3" * 16, "execute_tool refund", parent=root.span_id, status=STATUS_ERROR)
    trace = TraceView(spans={s.span_id: s for s in (root, chat, tool)})
    run = agent_run("q", "a", agent_name="support", service_name="svc", span_id=root.span_id)

    def check(**test: Any) -> tuple[bool, str]:
        return unit_matches(RunFilter.model_validate(test), run, trace)

    assert check(agent_name=["support"]) == (True, "")
    assert check(agent_name=["billing"]) == (False, "agent 'support' is not in filter.agent_name")
    assert check(service_name=["other"])[0] is False
    assert check(status=["error"])[0] is False  # the run's own status, not a child's
    assert check(min_duration_ms=500)[0] is True
    assert check(name={"regex": "^chat"})[0] is False  # span tests read the unit's own span
    assert check(trace_has={"name": {"regex": "^execute_tool"}, "status": ["error"]}) == (True, "")
    assert check(
        trace_has=[{"name": "execute_tool refund"}, {"attributes": {"gen_ai.request.model": "gpt-4o"}}]
    )[0]
    ok, why = check(trace_has=[{"name": "execute_tool refund"}, {"attributes": {"x": {"exists": True}}}])
    assert (ok, why) == (False, "the trace has no span passing filter.trace_has[1]")
    # Without the trace's spans (the Python API), span tests cannot pass.
    assert unit_matches(RunFilter(min_duration_ms=1), run, None)[0] is False
    assert unit_matches(RunFilter(agent_name=["support"]), run, None)[0] is True


def test_ancestors_walk_up_and_stop_at_a_cycle() -> None:
    a = span("a" * 16, parent="c" * 16)
    b = span("b" * 16, parent="a" * 16)
    c = span("c" * 16, parent="b" * 16)
    trace = TraceView(spans={s.span_id: s for s in (a, b, c)})
    assert [s.span_id for s in trace.ancestors("b" * 16)] == ["a" * 16, "c" * 16]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {"scorer": "x", "filter": {"attributes": {"k": {"regex": "(unclosed"}}}},
            r"regex '\(unclosed' does not compile",
        ),
        ({"scorer": "x", "filter": {"attributes": {"k": {"equals": 1, "regex": "a"}}}}, "exactly one of"),
        ({"scorer": "x", "filter": {"span_kind": ["sideways"]}}, "unknown span kinds"),
        ({"scorer": "x", "use": "m:f"}, "either 'scorer'"),
        ({"use": "no_colon"}, "must look like 'package.module:factory'"),
        ({"scorer": "x", "target": "trace"}, "target"),
        ({"scorer": "x", "budget": {"max_usd_per_day": -1}}, "greater than or equal to 0"),
        ({"scorer": "x", "circuit_breaker": {"failures": 0}}, "greater than or equal to 1"),
        ({"scorer": "x", "filter": {"min_duration": 5}}, "Extra inputs"),
    ],
)
def test_bad_rules_are_refused(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScorerRule.model_validate(rule)


def test_a_config_error_names_the_file_the_rule_and_the_field(tmp_path: Path) -> None:
    file = tmp_path / "rules.yaml"
    file.write_text(
        "scoring:\n"
        "  rules:\n"
        "    - scorer: textual-difference\n"
        "    - scorer: toxicity\n"
        "      name: toxicity-gold\n"
        "      filter: {attributes: {user.tier: {regex: '[gold'}}}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(file, environ={})
    message = str(caught.value)
    assert message.startswith("invalid configuration (1 error):\n")
    assert (
        f"{file}:6: scoring.rules[1] (toxicity-gold): filter.attributes.user.tier: regex '[gold' does not "
        "compile" in message
    )


def test_span_targets_and_budgets_load_from_yaml(tmp_path: Path) -> None:
    file = tmp_path / "rules.yaml"
    file.write_text(
        "scoring:\n"
        "  budget: {max_usd_per_day: 20}\n"
        "  rules:\n"
        "    - use: my_team.scorers:create_length_scorer\n"
        "      target: {span: {name: {regex: '^execute_tool'}}}\n"
        "    - scorer: toxicity\n"
        "      target: llm_call\n"
        "      budget: {max_calls_per_hour: 100, max_usd_per_hour: 0.5}\n"
        "      circuit_breaker: {failures: 3, cooldown_seconds: 10}\n"
    )
    scoring = load_config(file, environ={}).scoring
    first, second = scoring.rules
    assert first.reference == "my_team.scorers:create_length_scorer"
    assert not isinstance(first.target, str) and first.target.span.name == ValueMatch(regex="^execute_tool")
    assert second.target == "llm_call"
    assert second.budget is not None and (
        second.budget.max_calls_per_hour,
        second.budget.max_usd_per_hour,
    ) == (
        100,
        0.5,
    )
    assert second.circuit_breaker is not None and second.circuit_breaker.failures == 3
    assert scoring.budget is not None and scoring.budget.max_usd_per_day == 20
