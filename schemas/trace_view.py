"""What the router reads of a trace besides its agent runs: the spans, which run each span belongs
to, and one scoring unit per model call (``target: llm_call``).

The transform builds it (``ingest.transform``); the router (``scoring.runtime.rule_routing``) reads it for
span
filters, ``trace_has``, the ``llm_call`` and ``span`` targets and the loop guard. Without one (the
Python API, ``run_evals``) only run-level filters apply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from tracescore.schemas.agent_run import AgentRun
from tracescore.schemas.spans import Span


@dataclass(frozen=True)
class TraceView:
    spans: Mapping[str, Span]  # by span id
    # The root span id of the run each member span belongs to (a run's root maps to itself).
    run_of: Mapping[str, str] = field(default_factory=dict)
    # One unit per model-call span, built only when a rule targets model calls or spans.
    llm_calls: tuple[AgentRun, ...] = ()
    # For units without message content (``content_missing``), by span id: what turns content capture
    # on in the instrumentation that wrote them (its switch, named for decisions and ``runs``).
    content_hints: Mapping[str, str] = field(default_factory=dict)

    def content_hint(self, unit: AgentRun) -> str | None:
        """The capture switch of a unit without content (a span unit has its run's); None if unknown."""
        hint = self.content_hints.get(unit.span_id)
        if hint is None and unit.parent_span_id is not None:
            hint = self.content_hints.get(unit.parent_span_id)
        return hint

    def ancestors(self, span_id: str) -> Iterator[Span]:
        """The span's ancestors present in the trace, nearest first (a parent cycle ends the walk)."""
        seen = {span_id}
        span = self.spans.get(span_id)
        while span is not None and span.parent_span_id and span.parent_span_id not in seen:
            seen.add(span.parent_span_id)
            span = self.spans.get(span.parent_span_id)
            if span is not None:
                yield span
