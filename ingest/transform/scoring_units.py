"""The scoring units of a trace: its agent runs, one unit per model call, and the ``TraceView`` the
router reads (spans by id, which run each span belongs to).

A model-call unit is an ``AgentRun`` of that one call: its span id, its prompt split into new input,
history and system prompt as for a run, its answer (tool calls joined with their results) as output,
its own model and usage, the agent name and service of its run, and the run's root span id as
``parent_span_id``. Scores of ``target: llm_call`` rules land on the model-call spans.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.ingest.transform.adapters import ADAPTERS, ConventionAdapter, LlmCall
from tracescore.ingest.transform.diagnose import SERVICE_LOGS, capture_switch
from tracescore.ingest.transform.run_output import run_output
from tracescore.ingest.transform.runs import build_indexed_runs, run_input, utc
from tracescore.ingest.transform.trace_index import Node, TraceIndex
from tracescore.schemas import AgentRun, LogRecord, Span
from tracescore.schemas.spans import STATUS_ERROR
from tracescore.schemas.trace_view import TraceView


def build_units(
    spans: Sequence[Span],
    logs: Sequence[LogRecord] = (),
    *,
    llm_calls: bool = False,
    adapters: tuple[ConventionAdapter, ...] = ADAPTERS,
) -> tuple[list[AgentRun], TraceView]:
    """The trace's runs (as ``build_runs``) and its view; with ``llm_calls``, a unit per model call."""
    indexed, index = build_indexed_runs(spans, logs, adapters)
    runs = [run for run, _ in indexed]
    run_of = {node.span.span_id: run.span_id for run, members in indexed for node in members}
    units: list[AgentRun] = []
    if llm_calls and index is not None:
        by_root = {run.span_id: run for run in runs}
        for node in sorted(index.nodes.values(), key=lambda n: (n.span.start_time_unix_nano, n.span.span_id)):
            call = index.calls.get(node.span.span_id)
            if call is not None:
                units.append(_call_unit(node, call, index, by_root.get(run_of.get(node.span.span_id, ""))))
    hints = {
        unit.span_id: _capture_hint(spans, unit.span_id, logs, adapters)
        for unit in (*runs, *units)
        if unit.content_missing
    }
    view = TraceView(
        spans={span.span_id: span for span in spans},
        run_of=run_of,
        llm_calls=tuple(units),
        content_hints=hints,
    )
    return runs, view


def _capture_hint(
    spans: Sequence[Span], span_id: str, logs: Sequence[LogRecord], adapters: tuple[ConventionAdapter, ...]
) -> str:
    switch, in_logs = capture_switch(spans, span_id, adapters)
    return f"{switch}; or the content is in log records, {SERVICE_LOGS}" if in_logs and not logs else switch


def _call_unit(node: Node, call: LlmCall, index: TraceIndex, run: AgentRun | None) -> AgentRun:
    span = node.span
    the_input = run_input(None, call)
    output = run_output(None, [(span.start_time_unix_nano, call)], [], index)
    texts = [m.content for m in (*the_input.input_messages, *the_input.remembered_messages, *output)]
    return AgentRun(
        trace_id=span.trace_id,
        span_id=span.span_id,
        agent_name=run.agent_name if run is not None else None,
        service_name=span.service_name or (run.service_name if run is not None else None),
        model=call.model,
        status="error" if span.status_code == STATUS_ERROR else "ok",
        start_time=utc(span.start_time_unix_nano),
        end_time=utc(span.end_time_unix_nano),
        input=the_input,
        output=output,
        usage=call.usage,
        content_missing=not any(t.strip() for t in texts),
        parent_span_id=run.span_id if run is not None and run.span_id != span.span_id else None,
    )
