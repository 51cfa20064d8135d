"""The test data of ``tests/fixtures`` (see its README): paths, and the convention fixtures as spans.

The OTLP/JSON export requests are decoded with the production decoder, so the tests read exactly
what the receivers would hand the assembler.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracescore.ingest.decode import decode_traces
from tracescore.schemas import Span

FIXTURES_DIR = Path(__file__).resolve().parents[1] / "fixtures"
OTLP_DIR = FIXTURES_DIR / "conventions" / "otlp"
# Spans recorded here from frameworks' own instrumentation (recorded/record/ has the scripts and versions).
RECORDED_DIR = FIXTURES_DIR / "recorded"
PARITY_DIR = FIXTURES_DIR / "mastra_parity"  # the published Mastra code scorers' scores
REFERENCES_DIR = FIXTURES_DIR / "references"  # more reference results, with the scripts that made them

# The Mastra parity cases by id, and the score each published code scorer gives each case.
PARITY_CASES: dict[str, dict[str, Any]] = {
    case["id"]: case for case in json.loads((PARITY_DIR / "cases.json").read_text(encoding="utf-8"))
}
PARITY_SCORES: dict[str, dict[str, Any]] = {
    entry["id"]: entry["scores"]
    for entry in json.loads((PARITY_DIR / "reference.json").read_text(encoding="utf-8"))
}


def otlp_fixture_path(name: str) -> Path:
    """``name`` is the file stem before ``.traces.json``, e.g. ``otel_genai_semconv__main``."""
    return OTLP_DIR / f"{name}.traces.json"


def load_otlp_spans(name: str, directory: Path = OTLP_DIR) -> list[Span]:
    """Every span of one OTLP/JSON fixture; fails loudly if the decoder rejected any."""
    batch = decode_traces("otlp_json", (directory / f"{name}.traces.json").read_bytes())
    if batch.rejected_items or batch.errors:
        raise AssertionError(f"fixture {name}: decoder rejected spans: {batch.error_message}")
    return batch.spans


def load_recorded_spans(name: str) -> list[Span]:
    """Every span of one fixture in ``recorded/``, e.g. ``llama_index__function-agent``."""
    return load_otlp_spans(name, RECORDED_DIR)


def all_otlp_fixture_names() -> list[str]:
    return sorted(p.name.removesuffix(".traces.json") for p in OTLP_DIR.glob("*.traces.json"))


TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SERVICE = "test-service"


def make_span(
    span_id: str,
    parent: str = "",
    attributes: dict[str, Any] | None = None,
    *,
    start: int = 1_000,
    end: int | None = None,
    status_code: int = 0,
    status_message: str = "",
    trace_id: str = TRACE_ID,
    name: str = "",
) -> Span:
    """A hand-built finished span; times are small nanosecond counts unless given."""
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_unix_nano=start,
        end_time_unix_nano=start + 10 if end is None else end,
        attributes=attributes or {},
        status_code=status_code,
        status_message=status_message,
        resource_attributes={"service.name": SERVICE},
    )
