"""Rule filters evaluated: tests on attribute values, on spans, and on a unit with its trace.

The models are ``schemas.rules`` (validated when the config loads); these are the pure functions that
apply them. ``equals``/``in`` compare numbers as numbers and anything else as text, so a YAML ``5``
matches the attribute ``"5"`` and ``5.0``; ``regex`` searches the text of the value (JSON for lists
and maps); ``gt``/``lt`` never match a value that is not a number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from tracescore.schemas import AgentRun, Span
from tracescore.schemas.rules import RunFilter, SpanMatch, ValueMatch
from tracescore.schemas.spans import SPAN_KIND_NAMES, STATUS_ERROR
from tracescore.schemas.trace_view import TraceView

_MISSING = object()


def attribute_number(value: Any) -> float | None:
    """An attribute's value as a number: an int, a double, or a number written as a string; None for
    anything else (a bool, text, NaN or infinity)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _same(value: Any, expected: Any) -> bool:
    number, wanted = attribute_number(value), attribute_number(expected)
    if number is not None and wanted is not None:
        return number == wanted
    return _text(value) == _text(expected)


def value_matches(test: ValueMatch, value: Any = _MISSING) -> bool:
    """Whether an attribute value (``_MISSING`` when the key is absent) passes ``test``."""
    present = value is not _MISSING and value is not None
    if test.exists is not None:
        return present == test.exists
    if not present:
        return False
    if test.equals is not None:
        return _same(value, test.equals)
    if test.in_ is not None:
        return any(_same(value, expected) for expected in test.in_)
    if test.regex is not None:
        return re.search(test.regex, _text(value)) is not None
    number = attribute_number(value)
    if number is None:
        return False
    return (test.gt is None or number > test.gt) and (test.lt is None or number < test.lt)


def _attributes_match(tests: Mapping[str, ValueMatch], attributes: Mapping[str, Any]) -> bool:
    return all(value_matches(test, attributes.get(key, _MISSING)) for key, test in tests.items())


def span_operation(span: Span) -> str:
    """The span's operation: ``gen_ai.operation.name``, else the OpenInference span kind, lowercased."""
    for key in ("gen_ai.operation.name", "openinference.span.kind"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value.lower()
    return ""


def span_matches(test: SpanMatch, span: Span) -> bool:
    """Whether ``span`` passes every test given in ``test``."""
    if test.name is not None and not value_matches(test.name, span.name):
        return False
    if test.span_kind is not None and SPAN_KIND_NAMES.get(span.kind, "").lower() not in test.span_kind:
        return False
    if test.operation is not None and span_operation(span) not in test.operation:
        return False
    if test.status is not None:
        status = "error" if span.status_code == STATUS_ERROR else "ok"
        if status not in test.status:
            return False
    if test.min_duration_ms is not None and span.duration_ns < test.min_duration_ms * 1e6:
        return False
    return _attributes_match(test.attributes, span.attributes) and _attributes_match(
        test.resource_attributes, span.resource_attributes
    )


# A filter's span tests, made once per filter (filters live as long as their rules).
_span_parts: dict[int, tuple[RunFilter, SpanMatch | None]] = {}


def _span_part(test: RunFilter) -> SpanMatch | None:
    """The span tests of a run filter (None when it has none)."""
    known = _span_parts.get(id(test))
    if known is not None and known[0] is test:
        return known[1]
    fields = test.model_fields_set & set(SpanMatch.model_fields) - {"status"}
    part = SpanMatch(**{name: getattr(test, name) for name in fields}) if fields else None
    _span_parts[id(test)] = (test, part)
    return part


def unit_matches(test: RunFilter, unit: AgentRun, trace: TraceView | None) -> tuple[bool, str]:
    """Whether a unit passes a rule's filter, and when not, which test failed (for the decision)."""
    if test.agent_name is not None and unit.agent_name not in test.agent_name:
        return False, f"agent {unit.agent_name!r} is not in filter.agent_name"
    if test.service_name is not None and unit.service_name not in test.service_name:
        return False, f"service {unit.service_name!r} is not in filter.service_name"
    if test.status is not None and unit.status not in test.status:
        return False, f"status {unit.status!r} is not in filter.status"
    span_test = _span_part(test)
    if span_test is not None:
        span = trace.spans.get(unit.span_id) if trace is not None else None
        if span is None:
            return False, "the unit's span is not at hand for the filter's span tests"
        if not span_matches(span_test, span):
            return False, f"span {span.name!r} does not pass the filter's span tests"
    for index, wanted in enumerate(test.trace_has):
        spans = trace.spans.values() if trace is not None else ()
        if not any(span_matches(wanted, span) for span in spans):
            return False, f"the trace has no span passing filter.trace_has[{index}]"
    return True, ""
