"""The session id of a run, read from the attributes real frameworks write (the convention fixtures)."""

from __future__ import annotations

import pytest

from tests.support.fixture_files import load_otlp_spans
from tracescore.ingest.transform import build_runs
from tracescore.ingest.transform.session_ids import SESSION_ID_KEYS, attribute_session_id
from tracescore.schemas import Span


@pytest.mark.parametrize(
    ("fixture", "session_id"),
    [
        ("openinference__main", "session-1234"),  # session.id on every span
        ("vercel_ai_sdk__main", "session-1234"),  # ai.telemetry.metadata.sessionId
        ("pydantic_ai_logfire__main", "01a20292-de13-705a-bef6-41152003646d"),  # gen_ai.conversation.id
        # Both session.id and gen_ai.conversation.id (the OpenInference span processor): the same value.
        (
            "openinference__pydantic-ai-openinferencespanprocessor-openinference-keys-me",
            "01a20292-e413-7081-bed9-bf6cb3667b42",
        ),
        ("mastra__main", None),  # no memory thread in this run
        ("otel_genai_semconv__main", None),
    ],
)
def test_the_session_id_of_each_frameworks_run_is_read_from_its_spans(
    fixture: str, session_id: str | None
) -> None:
    runs = build_runs(load_otlp_spans(fixture))
    assert runs
    assert {run.session_id for run in runs} == {session_id}


def test_the_first_key_in_precedence_order_wins() -> None:
    every = {key: f"from {key}" for key in SESSION_ID_KEYS}
    assert attribute_session_id(every) == "from session.id"
    for index, key in enumerate(SESSION_ID_KEYS):
        later = {k: f"from {k}" for k in SESSION_ID_KEYS[index:]}
        assert attribute_session_id(later) == f"from {key}"
    assert attribute_session_id({"session.id": "  ", "mastra.metadata.threadId": "thread-9"}) == "thread-9"
    assert attribute_session_id({"user.id": "u-1"}) is None


def test_a_root_without_one_takes_the_first_of_its_other_spans() -> None:
    spans = load_otlp_spans("vercel_ai_sdk__main")
    root = next(span for span in spans if span.name == "ai.generateText")
    stripped = {k: v for k, v in root.attributes.items() if k != "ai.telemetry.metadata.sessionId"}
    rebuilt = [
        span.model_copy(update={"attributes": stripped}) if span.span_id == root.span_id else span
        for span in spans
    ]
    assert [run.session_id for run in build_runs(rebuilt)] == ["session-1234"]
    none_left = [_without_sessions(span) for span in spans]
    assert [run.session_id for run in build_runs(none_left)] == [None]


def _without_sessions(span: Span) -> Span:
    attributes = {k: v for k, v in span.attributes.items() if k not in SESSION_ID_KEYS}
    return span.model_copy(update={"attributes": attributes})
