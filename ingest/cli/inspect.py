"""``tracescore inspect``: the AgentRuns an OTLP/JSON export request (and its log records) produce."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from schemas import LogRecord, Span


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("inspect", help="print the AgentRuns an OTLP/JSON export request produces")
    parser.add_argument("otlp_json", help="file holding an OTLP/JSON ExportTraceServiceRequest")
    parser.add_argument(
        "--logs",
        metavar="OTLP_LOGS_JSON",
        help="file holding an OTLP/JSON ExportLogsServiceRequest whose records belong to those spans",
    )
    parser.set_defaults(func=cmd_inspect)


def cmd_inspect(args: argparse.Namespace) -> int:
    from ingest.decode import decode_logs, decode_traces
    from ingest.transform import build_runs

    batch = decode_traces("otlp_json", Path(args.otlp_json).read_bytes())
    logs = decode_logs("otlp_json", Path(args.logs).read_bytes()) if args.logs else None
    for error in [*batch.errors, *(logs.errors if logs else [])]:
        print(f"warning: {error}", file=sys.stderr)
    by_trace: dict[str, list[Span]] = {}
    for span in batch.spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    # Each trace gets the log records of the same trace, as the assembler hands them to the transform.
    logs_by_trace: dict[str, list[LogRecord]] = {}
    for record in logs.logs if logs else []:
        logs_by_trace.setdefault(record.trace_id, []).append(record)
    runs = [
        run.to_json_dict()
        for trace_id, spans in by_trace.items()
        for run in build_runs(spans, logs_by_trace.get(trace_id, []))
    ]
    json.dump(runs, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
