"""Property: ``build_runs`` never raises, whatever the attributes and however the spans are linked."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracescore.ingest.transform.adapters.genai_semconv import convert_messages
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import AgentRun, Span
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue

# Repeats weight the draw towards the operations that build runs.
OPERATIONS = [
    "invoke_agent",
    "invoke_agent",
    "chat",
    "chat",
    "chat",
    "text_completion",
    "execute_tool",
    "execute_tool",
    "retrieval",
    "embeddings",
]
PART_TYPES = [
    "text",
    "text",
    "reasoning",
    "thinking",
    "tool_call",
    "tool_call",
    "tool_call",
    "tool_call_response",
    "tool_call_response",
    "blob",
    "uri",
    None,
    3,
    ["text"],
]
ROLES = [
    "user",
    "user",
    "assistant",
    "assistant",
    "system",
    "tool",
    "tool",
    "developer",
    "model",
    "",
    None,
    7,
    ["user"],
]
SPAN_IDS = [f"{i:016x}" for i in range(1, 7)]  # a small pool: duplicates and shared parents happen

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | st.binary(max_size=8)
)
# Small alphabets keep generation cheap (it dominates the run time) while still mixing every type.
dict_keys = st.sampled_from(["content", "text", "id", "type", "role", "parts", "x", ""])
json_ish = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(dict_keys, inner, max_size=3),
    max_leaves=6,
)
call_ids = st.sampled_from(["call_1", "call_1", "call_1", "call_2", "", None, 5])
texts = st.sampled_from(["hi", "", "Paris", "57°F"]) | json_ish
parts = st.fixed_dictionaries(
    {"type": st.sampled_from(PART_TYPES)},
    optional={
        "content": texts,
        "id": call_ids,
        "name": st.sampled_from(["get_weather", ""]) | json_ish,
        "arguments": json_ish | json_ish.map(lambda v: json.dumps(v, default=str)),
        "response": texts,
        "result": texts,
    },
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES)},
    optional={"parts": st.lists(parts, max_size=3) | json_ish, "content": texts},
)
message_lists = st.lists(message, min_size=1, max_size=3) | st.lists(message | json_ish, max_size=3)


def encodings(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """Values as SDKs send them (JSON text), raw, double-encoded, or cut by an attribute length limit."""
    as_json = values.map(lambda v: json.dumps(v, default=str))
    return st.one_of(
        as_json,
        as_json,
        values,
        as_json.map(json.dumps),
        as_json.map(lambda text: text[: len(text) // 2]),
        json_ish,
    )


# Each key the adapter reads gets values shaped for it most of the time, anything some of the time.
attributes = st.fixed_dictionaries(
    {"gen_ai.operation.name": st.one_of(*[st.sampled_from(OPERATIONS)] * 5, json_ish)},
    optional={
        "gen_ai.agent.name": texts,
        "gen_ai.request.model": texts,
        "gen_ai.response.model": texts,
        "gen_ai.input.messages": encodings(message_lists),
        "gen_ai.output.messages": encodings(message_lists),
        "gen_ai.system_instructions": encodings(st.lists(parts, max_size=2)),
        "gen_ai.usage.input_tokens": st.integers() | json_ish,
        "gen_ai.usage.output_tokens": st.integers() | json_ish,
        "gen_ai.usage.prompt_tokens": json_ish,
        "gen_ai.tool.name": texts,
        "gen_ai.tool.call.id": st.one_of(call_ids, call_ids, call_ids, json_ish),
        "gen_ai.tool.call.arguments": encodings(json_ish),
        "gen_ai.tool.call.result": encodings(texts),
        "gen_ai.retrieval.documents": encodings(st.lists(parts, max_size=2)),
        "error.type": json_ish,
        "x": json_ish,
    },
)
spans = st.builds(
    Span,
    trace_id=st.just("0af7651916cd43dd8448eb211c80319c"),
    span_id=st.sampled_from(SPAN_IDS),
    parent_span_id=st.sampled_from(["", "ffffffffffffffff", *SPAN_IDS]),
    start_time_unix_nano=st.integers(min_value=-(2**63), max_value=2**64),
    end_time_unix_nano=st.integers(min_value=-(2**63), max_value=2**64),
    attributes=attributes,
    status_code=st.sampled_from([0, 1, STATUS_ERROR, 99]),
    status_message=st.text(max_size=10),
    resource_attributes=st.dictionaries(st.just("service.name"), json_ish, max_size=1),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(spans, max_size=7))
def test_build_runs_never_raises_and_every_agent_span_is_in_one_serialisable_run(trace: list[Span]) -> None:
    runs = build_runs(trace)

    assert isinstance(runs, list)
    assert all(isinstance(run, AgentRun) for run in runs)
    for run in runs:
        # Runs go to the store and to `tracescore inspect` as JSON.
        json.dumps(run.to_json_dict())
    first_copy: dict[str, Span] = {}
    for span in trace:
        first_copy.setdefault(span.span_id, span)
    agent_ids = {
        sid for sid, s in first_copy.items() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"
    }
    run_ids = [r.span_id for r in runs]
    assert len(run_ids) == len(set(run_ids))
    assert set(run_ids) <= set(first_copy)
    for agent_id in agent_ids - set(run_ids):
        # Not a run of its own: an agent span wrapped by an outer agent span, whose run it joined.
        ancestors, parent = set(), first_copy[agent_id].parent_span_id
        while parent in first_copy and parent not in ancestors:
            ancestors.add(parent)
            parent = first_copy[parent].parent_span_id
        assert ancestors & set(run_ids) & agent_ids, f"agent span {agent_id} belongs to no run"


@settings(max_examples=300, deadline=None)
@given(encodings(message_lists) | message_lists, st.sampled_from(["user", "assistant"]))
def test_message_conversion_never_raises_and_serialises(value: AttributeValue, default_role: Role) -> None:
    converted = convert_messages(value, "00000000000000aa", "in", default_role)
    assert [m.id for m in converted] == [f"00000000000000aa-in-{i}" for i in range(len(converted))]
    for message in converted:
        json.dumps(message.model_dump(mode="json"))
