"""Why the spans of a trace give no AgentRun, or a run without text: one line a user can act on.

``tracescore inspect`` prints these. They follow what the transform looks for (``runs``): each span
is read by the first convention adapter that claims it, which gives it a role; a run starts at every
agent span, at every model call with no agent above it, and at a trace's top retrievals when it has
nothing else. So a trace gives no run when no span is claimed, or when the claimed ones are only
tools and other steps (often because the spans above them are in another export); and a run has no
text when its instrumentation did not record the content.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tracescore.ingest.transform.adapters import ADAPTERS, ConventionAdapter, SpanRole
from tracescore.ingest.transform.adapters.genai_semconv import PROVIDER_KEYS
from tracescore.ingest.transform.correlate import attach_logs
from tracescore.ingest.transform.trace_index import Node, index_trace
from tracescore.schemas import LogRecord, Span

_RUN_ROLES = (SpanRole.AGENT, SpanRole.LLM, SpanRole.RETRIEVER)
_SHOWN = 5  # span names, parent ids: how many a line lists before "…"
# Key prefixes of the conventions the adapters read; a trace with none of them is not instrumented
# for LLM calls at all (HTTP or database spans only).
_GENAI_PREFIXES = ("gen_ai.", "llm.", "ai.", "openinference.", "traceloop.", "mastra.", "pydantic_ai.")

# What turns content capture on, by the adapter that read the run's spans (each instrumentation's own
# switch; docs/debugging-scores.md lists them with their defaults).
_CAPTURE = {
    "genai_semconv": "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true",
    "openllmetry_traceloop": "TRACELOOP_TRACE_CONTENT must not be false",
    "openinference": "OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS must not be true",
    "vercel_ai_sdk": "experimental_telemetry recordInputs / recordOutputs must not be false",
    "pydantic_ai_logfire": "instrument with include_content=True",
    "mastra": "tracingOptions hideInput / hideOutput must not be true, and SensitiveDataFilter must not "
    "redact the message fields",
}
_SEMANTIC_KERNEL = "set SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true"
# Conventions whose instrumentations may write the content as log records instead of on the spans.
_CONTENT_IN_LOGS = frozenset({"genai_semconv", "openllmetry_traceloop"})


def explain_no_run(
    spans: Sequence[Span], logs: Sequence[LogRecord] = (), adapters: tuple[ConventionAdapter, ...] = ADAPTERS
) -> str:
    """Why ``build_runs`` gives no run for these spans of one trace; never raises.

    >>> explain_no_run([])
    'no spans'
    """
    if not spans:
        return "no spans"
    try:
        index = index_trace(attach_logs(spans, logs), adapters)
    except Exception:
        return (
            f"{_count(len(spans), 'span')}, which the transform could not read (see the error logged above)"
        )
    nodes = list(index.nodes.values())
    roots = [n for n in nodes if n.role in _RUN_ROLES]
    if roots:
        # Spans a run starts at exist: building it failed, and build_runs logged why.
        names = ", ".join(_shown(sorted({n.span.name for n in roots})))
        return f"the run of {names} could not be built (see the error logged above)"
    conventions = sorted({n.adapter.name for n in nodes if n.adapter is not None})
    roles = Counter(n.role.value for n in nodes if n.adapter is not None)
    seen = ", ".join(conventions) or "none"
    if roles:
        seen += f" ({', '.join(f'{count} {role}' for role, count in sorted(roles.items()))})"
    names = ", ".join(_shown(sorted({n.span.name or "(unnamed)" for n in nodes})))
    line = (
        f"{_count(len(nodes), 'span')}, none is an agent or model call "
        f"(span names: {names}; conventions seen: {seen})"
    )
    return line + "".join(f"; {hint}" for hint in _hints(nodes, index.nodes))


def _hints(nodes: list[Node], by_id: dict[str, Node]) -> list[str]:
    hints = []
    missing = sorted({p for n in nodes if (p := n.span.parent_span_id) and p not in by_id})
    if missing and any(n.adapter is not None for n in nodes):
        hints.append(
            f"parent span{'s' if len(missing) > 1 else ''} {', '.join(_shown(missing))} "
            f"{'are' if len(missing) > 1 else 'is'} not among these spans (the agent or model call above "
            "may be in another export: inspect the whole trace)"
        )
    for node in nodes:
        attrs = node.span.attributes
        named = next((f"{k}={v}" for k in PROVIDER_KEYS if isinstance(v := attrs.get(k), str)), None)
        if named is not None and node.adapter is None:
            hints.append(
                f"span {node.span.name!r} names a model provider ({named}) "
                "but has no operation name, messages, model or usage to read it as a model call by "
                "(content capture off? set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
            )
            break
    unclaimed = all(n.adapter is None for n in nodes)
    if unclaimed and not any(key.startswith(_GENAI_PREFIXES) for n in nodes for key in n.span.attributes):
        hints.append("no span has GenAI attributes: is the app's LLM client or agent framework instrumented?")
    return hints


# Where log records come from, for the hint on content that may be in them: the command's flag, or
# what the service receives.
INSPECT_LOGS = "which were not given (tracescore inspect --logs)"
SERVICE_LOGS = "which tracescore did not receive (export the app's logs to it too: OTLP /v1/logs)"


def explain_missing_content(
    spans: Sequence[Span],
    span_id: str,
    logs: Sequence[LogRecord] = (),
    adapters: tuple[ConventionAdapter, ...] = ADAPTERS,
    *,
    logs_missing: str = INSPECT_LOGS,
) -> str:
    """What to change so the run rooted at ``span_id`` records its messages (its ``content_missing``).

    The hint follows the instrumentation that wrote the run's root span; never raises.
    """
    hint, in_logs = capture_switch(spans, span_id, adapters)
    text = f"content capture off? {hint}"
    if not logs and in_logs:
        text += f"; or the content is in log records, {logs_missing}"
    return text


def capture_switch(
    spans: Sequence[Span], span_id: str, adapters: tuple[ConventionAdapter, ...] = ADAPTERS
) -> tuple[str, bool]:
    """The switch that turns content capture on for the instrumentation that wrote span ``span_id``,
    and whether that instrumentation may write the content as log records instead; never raises."""
    span = next((s for s in spans if s.span_id == span_id), None)
    adapter = None
    if span is not None:
        adapter = next((a for a in adapters if _claims(a, span)), None)
    scope = span.scope_name if span is not None else ""
    if scope.startswith(("Microsoft.SemanticKernel", "semantic_kernel")):
        hint = _SEMANTIC_KERNEL
    else:
        hint = _CAPTURE.get(adapter.name if adapter else "", _CAPTURE["genai_semconv"])
    return hint, adapter is None or adapter.name in _CONTENT_IN_LOGS


def _claims(adapter: ConventionAdapter, span: Span) -> bool:
    try:
        return adapter.claims(span)
    except Exception:
        return False


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _shown(items: list[str]) -> list[str]:
    return items if len(items) <= _SHOWN else [*items[:_SHOWN], f"… ({len(items) - _SHOWN} more)"]
