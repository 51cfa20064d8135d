"""The decoder's shortcut constructor builds the very instances ``model_construct`` builds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from tests.support.fixture_files import OTLP_DIR
from tracescore.ingest.decode import decode_traces
from tracescore.ingest.decode.trusted import trusted_constructor
from tracescore.schemas.spans import Span

SEMCONV_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"


def _state(model: BaseModel) -> tuple[Any, ...]:
    return (
        type(model),
        list(model.__dict__.items()),
        model.model_fields_set,
        model.__pydantic_extra__,
        model.__pydantic_private__,
        model.model_dump_json(),
    )


def test_decoded_spans_are_what_model_construct_builds() -> None:
    spans = decode_traces("otlp_json", SEMCONV_MAIN.read_bytes()).spans

    assert spans
    for span in spans:
        rebuilt = Span.model_construct(**span.__dict__)
        assert _state(span) == _state(rebuilt)
        assert span == rebuilt and hash(span.span_id) == hash(rebuilt.span_id)
        copied = span.model_copy(update={"name": "renamed"})  # the fields set is a set of its own
        assert copied.name == "renamed" and span.name != "renamed"


def test_a_call_without_every_field_gets_the_defaults() -> None:
    construct = trusted_constructor(Span)

    span = construct(trace_id="a" * 32, span_id="b" * 16)

    assert _state(span) == _state(Span.model_construct(trace_id="a" * 32, span_id="b" * 16))
    assert span.attributes == {} and span.model_fields_set == {"trace_id", "span_id"}


def test_models_the_shortcut_does_not_fit_use_model_construct() -> None:
    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        a: int = 0

    class Hooked(BaseModel):
        a: int = 0

        def model_post_init(self, context: Any) -> None:
            pass

    assert trusted_constructor(Open) == Open.model_construct
    assert trusted_constructor(Hooked) == Hooked.model_construct
    assert trusted_constructor(Open)(a=1, b=2).model_extra == {"b": 2}
