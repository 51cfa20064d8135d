"""Property: whatever a span of any convention holds, ``build_runs`` never raises.

Spans are drawn from the real fixture spans of all six conventions, then bent: keys dropped, values
replaced by arbitrary JSON-ish data (raw, JSON-encoded, double-encoded, truncated), keys of other
conventions mixed in, names and parent links shuffled (cycles and dangling parents included), log
records attached. Every adapter sees shapes it claims, with values it does not expect.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fixture_files import OTLP_DIR, load_otlp_spans
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import AgentRun, LogRecord, Span, SpanEvent

SPAN_IDS = [f"{i:016x}" for i in range(1, 8)]
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


@cache
def fixture_spans() -> tuple[Span, ...]:
    names = sorted(p.name.removesuffix(".traces.json") for p in OTLP_DIR.glob("*.traces.json"))
    return tuple(span for name in names for span in load_otlp_spans(name))


@cache
def key_pool() -> tuple[str, ...]:
    return tuple(sorted({key for span in fixture_spans() for key in span.attributes}))


@cache
def value_pool() -> tuple[Any, ...]:
    """Attribute values of other spans: a key gets a value that is valid somewhere, just not here."""
    return tuple(v for span in fixture_spans() for v in span.attributes.values())[:300]


scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | st.binary(max_size=4)
)
json_ish = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["content", "text", "role", "type", "id", "parts", "args", "x"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=6,
)


def bent(value: Any) -> st.SearchStrategy[Any]:
    """The value as it was, or broken in the ways real exporters break values."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return st.one_of(
        st.just(value),
        st.just(value),
        st.just(text[: len(text) // 2]),  # cut by an attribute length limit
        st.just(json.dumps(text)),  # double-encoded
        json_ish,
        json_ish.map(lambda v: json.dumps(v, default=str)),
    )


@st.composite
def mutated_span(draw: st.DrawFn) -> Span:
    base = draw(st.sampled_from(fixture_spans()))
    attributes: dict[str, Any] = {}
    for key, value in base.attributes.items():
        if draw(st.integers(0, 9)) == 0:
            continue  # dropped
        attributes[key] = draw(bent(value))
    for key in draw(st.lists(st.sampled_from(key_pool()), max_size=3)):
        attributes[key] = draw(json_ish | st.sampled_from(value_pool()))
    events = [
        SpanEvent(
            name=e.name,
            time_unix_nano=e.time_unix_nano,
            attributes={k: draw(bent(v)) for k, v in e.attributes.items()},
        )
        for e in base.events
    ]
    return base.model_copy(
        update={
            "trace_id": TRACE_ID,
            "span_id": draw(st.sampled_from(SPAN_IDS)),
            "parent_span_id": draw(st.sampled_from(["", "ffffffffffffffff", *SPAN_IDS])),
            "name": draw(
                st.sampled_from([base.name, base.name, "", *sorted({s.name for s in fixture_spans()})])
            ),
            "attributes": attributes,
            "events": events,
            "start_time_unix_nano": draw(st.integers(0, 2**63)),
            "status_code": draw(st.sampled_from([0, 1, 2])),
        }
    )


log_records = st.builds(
    LogRecord,
    trace_id=st.just(TRACE_ID),
    span_id=st.sampled_from(["", *SPAN_IDS]),
    event_name=st.sampled_from(["gen_ai.user.message", "gen_ai.choice", "gen_ai.assistant.message", "x", ""]),
    body=json_ish,
    attributes=st.dictionaries(st.sampled_from(["gen_ai.system", "event.name", "x"]), json_ish, max_size=2),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.lists(mutated_span(), min_size=1, max_size=8), st.lists(log_records, max_size=3))
def test_build_runs_never_raises_on_bent_spans_of_any_convention(
    trace: list[Span], logs: list[LogRecord]
) -> None:
    runs = build_runs(trace, logs)
    assert all(isinstance(run, AgentRun) for run in runs)
    for run in runs:
        json.dumps(run.to_json_dict())
        assert run.trace_id == TRACE_ID
    assert len({r.span_id for r in runs}) == len(runs)
