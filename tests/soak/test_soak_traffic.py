"""The soak's traffic: fresh copies of SDK-written agent runs are whole runs under new ids (every span
of a run under its new trace id, each child under its parent's new span id), a request of several runs
is one request holding them all, and every malformed body is one no decoder reads."""

from __future__ import annotations

import json

import pytest
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.soak.agent_traces import JSON, PROTOBUF, TraceFactory, malformed_bodies


@pytest.fixture(scope="module")
def factory() -> TraceFactory:
    return TraceFactory(shapes=8)


def spans(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest.FromString(body)
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def test_a_fresh_copy_is_the_same_run_under_new_ids() -> None:
    one_shape = TraceFactory(shapes=1)
    first_id, first = one_shape.trace()
    copy_id, copy = one_shape.trace()
    original, copied = spans(first), spans(copy)
    assert first_id != copy_id and len(first) == len(copy)
    assert [s.name for s in original] == [s.name for s in copied]
    assert [s.attributes for s in original] == [s.attributes for s in copied]
    assert {s.trace_id.hex() for s in copied} == {copy_id}
    ids = {s.span_id for s in copied}
    assert len(ids) == len(copied) and not ids & {s.span_id for s in original}
    # The tree is kept: each parent is a span of the copy, in the same place (the root has none).
    index = {s.span_id: n for n, s in enumerate(copied)}
    original_index = {s.span_id: n for n, s in enumerate(original)}
    assert [index.get(s.parent_span_id) for s in copied] == [
        original_index.get(s.parent_span_id) for s in original
    ]
    assert sum(1 for s in copied if not s.parent_span_id) == 1


def test_a_request_of_several_runs_holds_every_one(factory: TraceFactory) -> None:
    body = factory.request(3)
    assert len(set(body.trace_ids)) == 3 and body.content_type == PROTOBUF
    request = ExportTraceServiceRequest.FromString(body.data)
    assert len(request.resource_spans) == 3
    assert {s.trace_id.hex() for s in spans(body.data)} == set(body.trace_ids)


def test_the_big_request_fills_its_size_and_no_more(factory: TraceFactory) -> None:
    body = factory.big_request(size=200_000)
    assert 190_000 < len(body.data) <= 200_000
    assert len(ExportTraceServiceRequest.FromString(body.data).resource_spans) == len(body.trace_ids)


@pytest.mark.parametrize("seed", range(5))
def test_every_malformed_body_is_unreadable(factory: TraceFactory, seed: int) -> None:
    bodies = malformed_bodies(factory, 30, seed)
    assert {body.content_type for body in bodies} == {PROTOBUF, JSON}
    for body in bodies:
        if body.content_type == JSON:
            with pytest.raises(json.JSONDecodeError):
                json.loads(body.data)
        else:
            with pytest.raises(DecodeError):
                ExportTraceServiceRequest.FromString(body.data)
    assert sum(1 for body in bodies if body.trace_ids) == 20  # the truncated ones name their traces
