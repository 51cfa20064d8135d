"""make_part, make_message and build_runs assemble Parts, Messages, RunInputs and AgentRuns without
pydantic validation: the instances must be the ones validation builds (fields, extras, fields set, JSON)."""

from __future__ import annotations

from pydantic import BaseModel

from tests.support.fixture_files import OTLP_DIR
from tracescore.ingest.decode import decode_traces
from tracescore.ingest.transform.adapters.base import make_message, make_part
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import AgentRun, Message, Part, RunInput


def _state(model: BaseModel) -> tuple[object, ...]:
    return (
        type(model),
        model.__dict__,
        model.__pydantic_extra__,
        model.__pydantic_fields_set__,
        model.__pydantic_private__,
        model.model_dump_json(),
    )


def test_a_part_is_the_one_validation_builds() -> None:
    data = {"type": "tool_call", "tool_call_id": "c1", "args": {"city": "Paris", "days": [1, 2]}, "__x": b"y"}
    validated = Part.model_validate(
        {"type": "tool_call", "tool_call_id": "c1", "args": data["args"], "__x": "y"}
    )
    assert _state(make_part(data)) == _state(validated)


def test_a_part_without_a_type_is_unknown() -> None:
    assert _state(make_part({"text": "hi"})) == _state(Part.model_validate({"type": "unknown", "text": "hi"}))


def test_a_message_is_the_one_validation_builds() -> None:
    parts = [make_part({"type": "reasoning", "text": "think"}), make_part({"type": "text", "text": "hello"})]
    built = make_message("m1", "assistant", parts)
    validated = Message(id="m1", role="assistant", content="hello", parts=parts, reasoning="think")
    assert _state(built) == _state(validated)
    assert built == validated
    parts.append(make_part({"type": "text", "text": "later"}))
    assert len(built.parts) == 2, "the message keeps its own list of parts"


def test_a_tool_message_reads_its_results_as_content() -> None:
    parts = [make_part({"type": "tool_result", "tool_call_id": "c1", "result": 57})]
    built = make_message("t1", "tool", parts)
    assert _state(built) == _state(Message(id="t1", role="tool", content="57", parts=parts, reasoning=None))


def test_built_runs_are_the_ones_validation_builds() -> None:
    for path in sorted(OTLP_DIR.glob("*.traces.json")):
        spans = decode_traces("otlp_json", path.read_bytes()).spans
        for trace_id in {span.trace_id for span in spans}:
            for run in build_runs([span for span in spans if span.trace_id == trace_id]):
                given = {name: getattr(run, name) for name in run.model_fields_set}
                validated = AgentRun(**given)
                assert _state(run) == _state(validated), path.name
                the_input = run.input
                given_input = {name: getattr(the_input, name) for name in the_input.model_fields_set}
                assert _state(the_input) == _state(RunInput(**given_input)), path.name
