"""``GET /api/scores`` and ``GET /api/decisions`` of a real ``tracescore serve`` on its embedded store:
each filter, newest first, the 404 that says why a trace has no rows, and the 400 that names the
parameter. The traces are those of ``tests.support.scored_service``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta, timezone

import pytest

from tests.support.scored_service import ScoredService, scored_service

UNKNOWN = "0123456789abcdef0123456789abcdef"
TIME_HINT = "give an RFC 3339 time (2026-11-20T00:00:00Z) or an age (30m, 1h, 7d)"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoredService]:
    with scored_service(tmp_path_factory.mktemp("results-api")) as running:
        yield running


def _keys(rows: list[dict[str, object]]) -> list[tuple[object, object]]:
    return sorted((row["trace_id"], row["scorer_id"]) for row in rows)


def test_a_trace_with_scores_answers_the_list_of_its_rows(service: ScoredService) -> None:
    shop = service.traces["shop"]
    answer = service.get("/api/scores", {"trace_id": shop.upper()})  # any case
    assert answer.status == 200
    assert _keys(answer.body) == [(shop, "similarity"), (shop, "textual-difference")]
    row = next(r for r in answer.body if r["scorer_id"] == "textual-difference")
    # The fields the HTTP API page and the architecture promise, as before the filters came.
    for field in (
        "span_id",
        "score",
        "label",
        "reason",
        "step_results",
        "sample_rate",
        "source",
        "created_at",
    ):
        assert field in row
    assert (row["service_name"], row["agent_name"], row["source"]) == ("shop-api", "weather_agent", "live")
    assert 0 <= row["score"] <= 1


def test_without_a_trace_id_the_newest_scores_of_every_trace_are_listed(service: ScoredService) -> None:
    shop, travel = service.traces["shop"], service.traces["travel"]
    answer = service.get("/api/scores")
    assert answer.status == 200
    assert _keys(answer.body) == sorted(
        [(shop, "similarity"), (shop, "textual-difference")]
        + [(travel, "similarity"), (travel, "textual-difference")]
    )
    written = [row["created_at"] for row in answer.body]
    assert written == sorted(written, reverse=True)
    newest = service.get("/api/scores", {"limit": "1"})
    assert [row["trace_id"] for row in newest.body] == [travel]  # scored after shop


def test_scorer_service_and_agent_filters(service: ScoredService) -> None:
    shop, travel = service.traces["shop"], service.traces["travel"]
    by_rule_name = service.get("/api/scores", {"scorer": "similarity"})
    assert _keys(by_rule_name.body) == sorted([(shop, "similarity"), (travel, "similarity")])
    by_scorer_id = service.get("/api/scores", {"scorer": "textual-difference"})
    assert _keys(by_scorer_id.body) == sorted([(shop, "textual-difference"), (travel, "textual-difference")])
    by_service = service.get("/api/scores", {"service": "travel-api"})
    assert {row["trace_id"] for row in by_service.body} == {travel} and len(by_service.body) == 2
    by_agent = service.get("/api/scores", {"agent": "weather_agent"})
    assert {row["trace_id"] for row in by_agent.body} == {shop} and len(by_agent.body) == 2
    combined = service.get("/api/scores", {"agent": "travel_agent", "scorer": "similarity"})
    assert _keys(combined.body) == [(travel, "similarity")]
    nobody = service.get("/api/scores", {"service": "no-such-service"})
    assert (nobody.status, nobody.body) == (200, [])


def test_since_and_until_take_times_and_ages(service: ScoredService) -> None:
    shop, travel = service.traces["shop"], service.traces["travel"]
    between = service.between
    since = service.get("/api/scores", {"since": between.isoformat()})
    assert {row["trace_id"] for row in since.body} == {travel} and len(since.body) == 2
    until = service.get("/api/scores", {"until": between.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
    assert {row["trace_id"] for row in until.body} == {shop} and len(until.body) == 2
    # The same moment in another offset.
    offset = between.astimezone(timezone(timedelta(hours=2))).isoformat()
    assert service.get("/api/scores", {"since": offset}).body == since.body
    recent = service.get("/api/scores", {"since": "1h"})
    assert {row["trace_id"] for row in recent.body} == {shop, travel}
    assert service.get("/api/scores", {"until": "1h"}).body == []
    assert service.get("/api/scores", {"since": "7d", "until": "1h"}).body == []


def test_decisions_filter_by_kind_and_carry_service_and_agent(service: ScoredService) -> None:
    shop, travel, lab = service.traces["shop"], service.traces["travel"], service.traces["lab"]
    failed = service.get("/api/decisions", {"decision": "failed"})
    assert failed.status == 200
    assert [(r["trace_id"], r["scorer_id"], r["decision"]) for r in failed.body] == [
        (lab, "overconfident", "failed")
    ]
    assert "returned 1.7, outside its scale [0, 1]" in failed.body[0]["detail"]
    assert (failed.body[0]["service_name"], failed.body[0]["agent_name"]) == ("lab", "weather_agent")
    sampled_out = service.get("/api/decisions", {"decision": "sampled_out"})
    assert _keys(sampled_out.body) == sorted(
        [(shop, "never-sampled"), (travel, "never-sampled"), (lab, "never-sampled")]
    )
    of_lab = service.get("/api/decisions", {"service": "lab"})
    assert sorted((r["scorer_id"], r["decision"]) for r in of_lab.body) == [
        ("never-sampled", "sampled_out"),
        ("overconfident", "failed"),
        ("similarity", "filtered"),
        ("textual-difference", "filtered"),
    ]
    scored_here = service.get("/api/decisions", {"trace_id": shop, "decision": "scored"})
    assert _keys(scored_here.body) == [(shop, "similarity"), (shop, "textual-difference")]


def test_a_trace_whose_rows_the_filters_leave_out_answers_an_empty_list(service: ScoredService) -> None:
    answer = service.get("/api/scores", {"trace_id": service.traces["shop"], "scorer": "overconfident"})
    assert (answer.status, answer.body) == (200, [])


@pytest.mark.parametrize("path", ["/api/scores", "/api/decisions"])
def test_a_trace_never_received_answers_404_not_received(service: ScoredService, path: str) -> None:
    answer = service.get(path, {"trace_id": UNKNOWN})
    assert answer.status == 404
    assert answer.body == {
        "trace_id": UNKNOWN,
        "status": "not_received",
        "message": "not received: no span of this trace is in the store",
        "spans": 0,
        "decisions": {},
    }


@pytest.mark.parametrize("path", ["/api/scores", "/api/decisions"])
def test_a_trace_received_and_waiting_answers_404_pending(service: ScoredService, path: str) -> None:
    waiting = service.traces["waiting"]
    answer = service.get(path, {"trace_id": waiting})
    assert answer.status == 404
    assert answer.body == {
        "trace_id": waiting,
        "status": "pending",
        "message": "received, not yet scored: 1 span(s) are stored; a trace is scored once its root span "
        "has ended and it has been quiet for assembly.idle_seconds, or after assembly.max_wait_seconds",
        "spans": 1,
        "decisions": {},
    }


def test_a_trace_decided_without_a_score_answers_404_with_its_decisions(service: ScoredService) -> None:
    lab = service.traces["lab"]
    answer = service.get("/api/scores", {"trace_id": lab})
    assert answer.status == 404
    assert answer.body == {
        "trace_id": lab,
        "status": "not_scored",
        "message": "received, not scored: no scorer gave this trace a score; its decisions: failed 1, "
        "filtered 2, sampled_out 1 (the decisions say why)",
        "spans": service.spans["lab"],
        "decisions": {"failed": 1, "filtered": 2, "sampled_out": 1},
        "see": f"/api/decisions?trace_id={lab}",
    }
    decisions = service.get(answer.body["see"])
    assert decisions.status == 200 and len(decisions.body) == 4


def test_a_trace_without_agent_runs_answers_404_nothing_to_score(service: ScoredService) -> None:
    plain = service.traces["plain"]
    deadline = time.monotonic() + 30
    while (answer := service.get("/api/scores", {"trace_id": plain})).body["status"] == "pending":
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)
    assert answer.status == 404
    assert answer.body == {
        "trace_id": plain,
        "status": "nothing_to_score",
        "message": "received, nothing to score: 1 span(s) were assembled, but no scoring rule applies to "
        "any run in it (no agent run or model call a rule targets)",
        "spans": 1,
        "decisions": {},
    }


@pytest.mark.parametrize(
    ("path", "params", "parameter", "error"),
    [
        ("/api/scores", {"trace_id": "abc"}, "trace_id", "trace_id: must be 32 hex characters"),
        ("/api/scores", {"since": "yesterday"}, "since", f"since: 'yesterday' is not a time: {TIME_HINT}"),
        ("/api/decisions", {"until": "soon"}, "until", f"until: 'soon' is not a time: {TIME_HINT}"),
        ("/api/scores", {"since": "1h", "until": "2h"}, "until", "until: must be after since"),
        ("/api/scores", {"limit": "0"}, "limit", "limit: must be a whole number from 1 to 10000"),
        ("/api/scores", {"limit": "10001"}, "limit", "limit: must be a whole number from 1 to 10000"),
        ("/api/decisions", {"limit": "ten"}, "limit", "limit: must be a whole number from 1 to 10000"),
        (
            "/api/scores",
            {"scorer_id": "similarity"},
            "scorer_id",
            "scorer_id: unknown parameter; the filters are trace_id, scorer, service, agent, session, since, "
            "until, limit",
        ),
        (
            "/api/scores",
            {"decision": "failed"},
            "decision",
            "decision: only decisions have one: ask /api/decisions",
        ),
        (
            "/api/decisions",
            {"decision": "lost"},
            "decision",
            "decision: must be one of scored, sampled_out, filtered, skipped_empty, skipped_too_large, "
            "gated, budget_exceeded, failed",
        ),
        ("/api/scores", [("scorer", "a"), ("scorer", "b")], "scorer", "scorer: give it once"),
    ],
)
def test_a_wrong_parameter_answers_400_naming_it(
    service: ScoredService,
    path: str,
    params: dict[str, str] | list[tuple[str, str]],
    parameter: str,
    error: str,
) -> None:
    answer = service.get(path, params)
    assert (answer.status, answer.body) == (400, {"error": error, "parameter": parameter})


def test_an_empty_value_is_a_filter_not_given(service: ScoredService) -> None:
    everything = service.get("/api/scores")
    assert service.get("/api/scores", {"scorer": "", "since": " "}).body == everything.body
