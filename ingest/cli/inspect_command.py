"""``tracescore inspect``: the AgentRuns an OTLP/JSON export request (and its log records) produce.

stdout is only the JSON list of runs (``[]`` when none). On stderr, one line per trace that gives no
run, or per run without message text, says why (``ingest.transform.diagnose``). A file that is not
OTLP/JSON (a bare list of spans, protobuf, compressed) is refused in one line, exit status 2.

The OpenTelemetry Collector's ``file`` exporter writes one export request per line (JSON Lines), the
requests of every pipeline it serves in the same file: each line is read, log records included.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracescore.ingest.cli.json_documents import NotJsonError, json_documents
from tracescore.schemas import LogRecord, Span

SIGNAL_KEYS = {"traces": "resourceSpans", "logs": "resourceLogs", "metrics": "resourceMetrics"}
_NOUNS = {"traces": "spans", "logs": "log records", "metrics": "metrics"}
_SPAN_KEYS = frozenset({"traceId", "trace_id", "spanId", "span_id", "context"})
_COMPRESSION_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}


class NotOtlpJson(ValueError):
    """The file is not an OTLP/JSON export request of the signal asked for; the message says what it is."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("inspect", help="print the AgentRuns an OTLP/JSON export request produces")
    parser.add_argument(
        "otlp_json",
        help="file holding an OTLP/JSON ExportTraceServiceRequest (or one per line, as the Collector's "
        "file exporter writes them)",
    )
    parser.add_argument(
        "--logs",
        metavar="OTLP_LOGS_JSON",
        help="file holding an OTLP/JSON ExportLogsServiceRequest whose records belong to those spans",
    )
    parser.set_defaults(func=cmd_inspect)


def cmd_inspect(args: argparse.Namespace) -> int:
    from tracescore.ingest.transform import build_runs, explain_missing_content, explain_no_run

    spans, logs = read_export(Path(args.otlp_json), "traces")
    if args.logs:
        logs.extend(read_export(Path(args.logs), "logs")[1])
    if not spans:
        print(f"{args.otlp_json}: the export request holds no spans", file=sys.stderr)
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    # Each trace gets the log records of the same trace, as the assembler hands them to the transform.
    logs_by_trace: dict[str, list[LogRecord]] = {}
    for record in logs:
        logs_by_trace.setdefault(record.trace_id, []).append(record)
    runs = []
    for trace_id, trace_spans in by_trace.items():
        trace_logs = logs_by_trace.get(trace_id, [])
        trace_runs = build_runs(trace_spans, trace_logs)
        if not trace_runs:
            print(f"trace {trace_id}: no run — {explain_no_run(trace_spans, trace_logs)}", file=sys.stderr)
        for run in trace_runs:
            if run.content_missing:
                hint = explain_missing_content(trace_spans, run.span_id, trace_logs)
                print(f"trace {trace_id}: run {run.span_id} has no message text — {hint}", file=sys.stderr)
            runs.append(run.to_json_dict())
    json.dump(runs, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def read_export(path: Path, signal: str) -> tuple[list[Span], list[LogRecord]]:
    """The spans and log records of an OTLP/JSON file: one export request, or one per line.

    ``signal`` (``traces`` or ``logs``) is what the file must hold: NotOtlpJson says what it holds
    instead. A traces file may hold log records too (a Collector file exporter serving both
    pipelines); metrics are skipped. Items the decoder rejects are reported on stderr, the rest kept.
    """
    from tracescore.ingest.decode import DecodeError, decode

    payload = path.read_bytes()
    documents = _documents(path, payload)
    spans: list[Span] = []
    logs: list[LogRecord] = []
    kinds = []
    for line, document in documents:
        where = f"{path}" if len(documents) == 1 else f"{path}, line {line}"
        kind = _signal_of(document, where, signal)
        kinds.append(kind)
        if kind == "metrics" or (kind == "traces" and signal == "logs"):
            continue
        raw = payload if len(documents) == 1 else json.dumps(document).encode()
        try:
            batch = decode(kind, "otlp_json", raw)
        except DecodeError as exc:
            raise NotOtlpJson(f"{where}: {exc}") from None
        for error in batch.errors:
            print(f"warning: {where}: {error}", file=sys.stderr)
        spans.extend(batch.spans)
        logs.extend(batch.logs)
    if signal not in kinds:
        held = " and ".join(f"{_NOUNS[k]} ({SIGNAL_KEYS[k]})" for k in dict.fromkeys(kinds))
        hint = ": give it with --logs, beside the file of spans" if kinds == ["logs"] * len(kinds) else ""
        raise NotOtlpJson(f"{path}: holds {held}, not {_NOUNS[signal]}{hint}")
    return spans, logs


def _documents(path: Path, payload: bytes) -> list[tuple[int, Any]]:
    """The JSON documents of the file with their line numbers: the whole file, or one per line."""
    if not payload.strip():
        raise NotOtlpJson(f"{path}: the file is empty")
    try:
        return json_documents(payload)[0]
    except NotJsonError as exc:
        raise NotOtlpJson(f"{path}: {_not_json(payload, exc.whole_error)}") from None


def _not_json(payload: bytes, error: ValueError) -> str:
    for magic, name in _COMPRESSION_MAGIC.items():
        if payload.startswith(magic):
            return f"{name}-compressed data, not OTLP/JSON: decompress it first"
    if (request := _protobuf_request(payload)) is not None:
        return (
            f"a protobuf {request}, not OTLP/JSON: export JSON instead "
            "(the Collector's file exporter with format: json)"
        )
    return f"not JSON ({error})"


def _protobuf_request(payload: bytes) -> str | None:
    """The request type if the bytes are an OTLP protobuf export request holding items (bare, or
    framed by a 4-byte length as the Collector's file exporter writes them with format: proto)."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    framed = payload[4 : 4 + int.from_bytes(payload[:4], "big")] if len(payload) > 4 else b""
    for candidate in (payload, framed):
        for request_type in (ExportTraceServiceRequest, ExportLogsServiceRequest):
            try:
                request = request_type.FromString(candidate)
            except (DecodeError, ValueError):
                continue
            if isinstance(request, ExportTraceServiceRequest):
                ids = [s.trace_id for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
            else:
                ids = [
                    x.trace_id for r in request.resource_logs for sl in r.scope_logs for x in sl.log_records
                ]
            if ids and all(len(i) in (0, 16) for i in ids):
                return request_type.DESCRIPTOR.name
    return None


def _signal_of(document: Any, where: object, signal: str) -> str:
    """Which signal's export request the document is; NotOtlpJson, naming what it is, when none."""
    if isinstance(document, Mapping):
        if not document:
            return signal  # an empty export request
        if kinds := otlp_signals(document):
            return kinds[0]
        if isinstance(document.get("spans"), list):
            what = f'a JSON object with a list of {len(document["spans"])} spans under "spans"'
        elif _SPAN_KEYS & set(document):
            what = "a single span"
        else:
            keys = ", ".join(sorted(str(k) for k in document)[:5]) or "none"
            what = f"a JSON object without {SIGNAL_KEYS[signal]} (keys: {keys})"
    elif isinstance(document, list):
        items = [d for d in document if isinstance(d, Mapping)]
        if items and all("scopeSpans" in d or "scope_spans" in d for d in items):
            what = "a JSON array of resource spans"
        elif items and all(_SPAN_KEYS & set(d) for d in items):
            what = f"a JSON array of {len(document)} spans"
        else:
            what = "a JSON array"
    else:
        what = f"a JSON {type(document).__name__}"
    raise NotOtlpJson(f"{where}: {what}, not an OTLP/JSON export request: {_expected(signal)}")


def otlp_signals(document: Mapping[str, Any]) -> list[str]:
    """The signals (traces, logs, metrics) the object holds as an OTLP/JSON export request does: under
    ``resourceSpans`` and the like (or their snake_case names)."""
    return [kind for kind, key in SIGNAL_KEYS.items() if key in document or _snake(key) in document]


def _expected(signal: str) -> str:
    key = SIGNAL_KEYS[signal]
    if signal == "logs":
        return f'expected {{"{key}": [...]}}, as an OTLP exporter sends it'
    return (
        f'expected {{"{key}": [...]}}, as an OTLP exporter sends it '
        '(see "Capturing OTLP/JSON from your app" in docs/agent-runs.md)'
    )


def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
