"""A session's runs joined into one conversation unit, in the order they started."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support.runs import agent_run
from tracescore.ingest.transform.conversation import conversation_unit
from tracescore.schemas import AgentRun, Usage

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def turn(trace_id: str, question: str, answer: str, minute: int, status: str = "ok") -> AgentRun:
    run = agent_run(question, answer, context=[f"doc {trace_id}"], system="Be brief.")
    return run.model_copy(
        update={
            "trace_id": trace_id,
            "span_id": f"root-{trace_id}",
            "start_time": T0 + timedelta(minutes=minute),
            "end_time": T0 + timedelta(minutes=minute, seconds=5),
            "status": status,
            "usage": Usage(input_tokens=10, output_tokens=2),
        }
    )


def test_the_unit_holds_every_turn_in_order_and_is_the_last_runs_elsewhere() -> None:
    runs = [turn("t3", "And tomorrow?", "Sunny.", 2), turn("t1", "Weather?", "Rainy.", 0, "error"),
            turn("t2", "Umbrella?", "Yes.", 1)]  # fmt: skip
    unit = conversation_unit("s-1", runs)

    assert [t.trace_id for t in unit.turns] == ["t1", "t2", "t3"]
    assert [t.input[0].content for t in unit.turns] == ["Weather?", "Umbrella?", "And tomorrow?"]
    assert [t.output[0].content for t in unit.turns] == ["Rainy.", "Yes.", "Sunny."]
    assert (unit.trace_id, unit.span_id, unit.session_id) == ("t3", "root-t3", "s-1")
    assert [m.content for m in unit.input.input_messages] == ["And tomorrow?"]
    assert [m.content for m in unit.output] == ["Sunny."]
    assert [m.content for m in unit.input.remembered_messages] == ["Weather?", "Rainy.", "Umbrella?", "Yes."]
    assert [m.content for m in unit.input.system_messages] == ["Be brief."]
    assert (unit.start_time, unit.end_time) == (T0, T0 + timedelta(minutes=2, seconds=5))
    assert unit.status == "error"  # one turn failed
    assert unit.context == ["doc t1", "doc t2", "doc t3"]
    assert unit.usage == Usage(input_tokens=30, output_tokens=6)
    assert unit.to_json_dict()["session_id"] == "s-1" and len(unit.to_json_dict()["turns"]) == 3


def test_a_plain_runs_json_shape_is_unchanged() -> None:
    shape = agent_run("q", "a").to_json_dict()
    assert "session_id" not in shape and "turns" not in shape
