"""Why a trace gives no run, or a run without text (``ingest.transform.diagnose``), on the real
convention fixtures and on spans built by hand. Each expected line is written out in full: it is what
``tracescore inspect`` shows the user.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingest.transform.test_runs_fuzz_conventions import log_records, mutated_span
from tests.support.fixture_files import all_otlp_fixture_names, load_otlp_spans, make_span
from tracescore.ingest.transform import build_runs
from tracescore.ingest.transform.diagnose import explain_missing_content, explain_no_run
from tracescore.ingest.transform.scoring_units import build_units
from tracescore.schemas import LogRecord, Span

CHUNKS = "mastra__model-chunk-spans-from-the-same-1-x-run-streamed-reasoning-t"
LEGACY = "otel_genai_semconv__legacy-event-based-semconv-v1-28-v1-36-content-in-logrecords"


def test_the_one_fixture_file_without_runs_is_the_mastra_chunks_whose_model_spans_are_elsewhere() -> None:
    # Every trace of every fixture file, taken alone as `tracescore inspect FILE` takes it.
    without_runs = []
    for name in all_otlp_fixture_names():
        spans = load_otlp_spans(name)
        for trace_id in sorted({s.trace_id for s in spans}):
            if not build_runs([s for s in spans if s.trace_id == trace_id]):
                without_runs.append((name, trace_id))
    assert without_runs == [(CHUNKS, "ee6143b5d5ff162c082194f5d33d6f4c")]
    # Its four model_chunk spans hang under the two chat spans of mastra__main.
    assert explain_no_run(load_otlp_spans(CHUNKS)) == (
        "4 spans, none is an agent or model call (span names: model_chunk Weather Agent; "
        "conventions seen: mastra (4 other)); parent spans 452bd40add83df55, 555914cb5f7973dc are not "
        "among these spans (the agent or model call above may be in another export: inspect the whole trace)"
    )


def test_a_tool_span_exported_without_its_agent() -> None:
    tool = [s for s in load_otlp_spans("otel_genai_semconv__main") if s.name == "execute_tool get_weather"]
    assert build_runs(tool) == []
    assert explain_no_run(tool) == (
        "1 span, none is an agent or model call (span names: execute_tool get_weather; "
        "conventions seen: genai_semconv (1 tool)); parent span 594f8d102c7c4a19 is not among these spans "
        "(the agent or model call above may be in another export: inspect the whole trace)"
    )


def test_spans_of_no_genai_instrumentation() -> None:
    spans = [
        make_span("a000000000000001", name="GET /chat", attributes={"http.request.method": "GET"}),
        make_span(
            "a000000000000002", "a000000000000001", name="SELECT", attributes={"db.system": "postgresql"}
        ),
    ]
    assert build_runs(spans) == []
    assert explain_no_run(spans) == (
        "2 spans, none is an agent or model call (span names: GET /chat, SELECT; conventions seen: none); "
        "no span has GenAI attributes: is the app's LLM client or agent framework instrumented?"
    )


def test_a_provider_span_with_nothing_to_read_it_by() -> None:
    # An instrumentation with content capture off and no operation name, model or usage on the span.
    spans = [make_span("a000000000000001", name="openai.request", attributes={"gen_ai.system": "openai"})]
    assert build_runs(spans) == []
    assert explain_no_run(spans) == (
        "1 span, none is an agent or model call (span names: openai.request; conventions seen: none); "
        "span 'openai.request' names a model provider (gen_ai.system=openai) but has no operation name, "
        "messages, model or usage to read it as a model call by (content capture off? set "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
    )


def test_many_span_names_are_cut_short() -> None:
    spans = [
        make_span(f"a00000000000000{i}", name=f"step {i}", attributes={"http.route": "/"})
        for i in range(1, 8)
    ]
    assert explain_no_run(spans).startswith(
        "7 spans, none is an agent or model call "
        "(span names: step 1, step 2, step 3, step 4, step 5, … (2 more); "
    )
    assert explain_no_run([]) == "no spans"


def test_runs_of_the_log_record_fixture_without_its_log_records_lack_content() -> None:
    spans = load_otlp_spans(LEGACY)
    runs = [
        r
        for t in sorted({s.trace_id for s in spans})
        for r in build_runs([s for s in spans if s.trace_id == t])
    ]
    assert [(r.span_id, r.content_missing) for r in runs] == [
        ("591a967493a73908", True),
        ("80ab5126c616b43a", True),
    ]
    assert explain_missing_content(spans, "591a967493a73908") == (
        "content capture off? set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; or the content "
        "is in log records, which were not given (tracescore inspect --logs)"
    )


def test_content_hints_name_each_instrumentations_switch() -> None:
    openinference = make_span("b000000000000001", attributes={"openinference.span.kind": "LLM"})
    assert explain_missing_content([openinference], "b000000000000001") == (
        "content capture off? OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS must not be true"
    )
    mastra = make_span("b000000000000003", attributes={"mastra.span.type": "agent_run"})
    assert explain_missing_content([mastra], "b000000000000003") == (
        "content capture off? tracingOptions hideInput / hideOutput must not be true, and "
        "SensitiveDataFilter must not redact the message fields"
    )
    sk = make_span("b000000000000002", name="chat.completions gpt-4o", attributes={"gen_ai.system": "openai"})
    sk = sk.model_copy(update={"scope_name": "Microsoft.SemanticKernel.Diagnostics"})
    assert explain_missing_content([sk], "b000000000000002") == (
        "content capture off? set SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true; "
        "or the content is in log records, which were not given (tracescore inspect --logs)"
    )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.lists(mutated_span(), min_size=1, max_size=8), st.lists(log_records, max_size=3))
def test_the_explanations_never_raise_on_bent_spans(trace: list[Span], logs: list[LogRecord]) -> None:
    assert explain_no_run(trace, logs)
    assert explain_missing_content(trace, trace[0].span_id, logs).startswith("content capture off? ")


def test_the_units_of_a_trace_without_content_carry_the_switch_for_the_service_to_name() -> None:
    """The service's wording: the log records it did not receive, not ``inspect --logs``."""
    spans = load_otlp_spans(LEGACY)
    trace_id = next(s.trace_id for s in spans if s.span_id == "591a967493a73908")
    runs, view = build_units([s for s in spans if s.trace_id == trace_id], llm_calls=True)
    missing = [unit for unit in (*runs, *view.llm_calls) if unit.content_missing]
    assert missing and {view.content_hint(unit) for unit in missing} == {
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; or the content is in log records, "
        "which tracescore did not receive (export the app's logs to it too: OTLP /v1/logs)"
    }
    with_content = build_units(load_otlp_spans("otel_genai_semconv__main"), llm_calls=True)[1]
    assert with_content.content_hints == {}
