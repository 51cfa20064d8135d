"""``tracescore inspect`` as users meet it in their first hour: runs from their own files on stdout,
why a trace gives no run (or no text) on stderr, one line for a file that is not OTLP/JSON, and the
recipe of docs/agent-runs.md for capturing such a file from a Python app, run for real.

stdout must stay pure JSON; every stderr line is quoted in full.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.transform.adapters.test_semantic_kernel import (
    check_semantic_kernel_runs,
    semantic_kernel_request,
)
from tests.support.fixture_files import OTLP_DIR
from tests.support.serve import ENV, PROJECT_ROOT, tracescore
from tracescore.ingest.cli import main
from tracescore.ingest.decode.otlp_json import parse_trace_request

MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
CHUNKS = OTLP_DIR / "mastra__model-chunk-spans-from-the-same-1-x-run-streamed-reasoning-t.traces.json"
LEGACY = "otel_genai_semconv__legacy-event-based-semconv-v1-28-v1-36-content-in-logrecords"
LEGACY_TRACES, LEGACY_LOGS = OTLP_DIR / f"{LEGACY}.traces.json", OTLP_DIR / f"{LEGACY}.logs.json"


def test_a_semantic_kernel_trace_gives_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "sk.json"
    path.write_text(json.dumps(semantic_kernel_request()))
    done = tracescore("inspect", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    check_semantic_kernel_runs(json.loads(done.stdout))


def test_a_trace_without_a_run_says_why_on_stderr_and_stdout_stays_json() -> None:
    done = tracescore("inspect", str(CHUNKS))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    assert done.stderr.splitlines() == [
        "trace ee6143b5d5ff162c082194f5d33d6f4c: no run — 4 spans, none is an agent or model call "
        "(span names: model_chunk Weather Agent; conventions seen: mastra (4 other)); parent spans "
        "452bd40add83df55, 555914cb5f7973dc are not among these spans (the agent or model call above may "
        "be in another export: inspect the whole trace)"
    ]


def test_runs_without_text_name_the_content_switch_until_the_log_records_are_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", str(LEGACY_TRACES)]) == 0
    out, err = capsys.readouterr()
    assert [r["content_missing"] for r in json.loads(out)] == [True, True]
    hint = (
        "has no message text — content capture off? set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
        "=true; or the content is in log records, which were not given (tracescore inspect --logs)"
    )
    assert err.splitlines() == [
        f"trace 4d6fdb451bb0e300a3ebbf2b434e9fa0: run 591a967493a73908 {hint}",
        f"trace c2e67b0aab4586984e72753e4b2a2f83: run 80ab5126c616b43a {hint}",
    ]
    assert main(["inspect", str(LEGACY_TRACES), "--logs", str(LEGACY_LOGS)]) == 0
    out, err = capsys.readouterr()
    assert [r["content_missing"] for r in json.loads(out)] == [False, False]
    assert err == ""


def test_a_collector_file_exporter_file_one_request_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The file exporter with format: json serving the traces, logs and metrics pipelines.
    lines = [
        json.dumps(json.loads(LEGACY_TRACES.read_text())),
        json.dumps(json.loads(LEGACY_LOGS.read_text())),
        json.dumps({"resourceMetrics": []}),
    ]
    path = tmp_path / "collector.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert main(["inspect", str(path)]) == 0
    out, err = capsys.readouterr()
    runs = json.loads(out)
    assert [(r["span_id"], r["content_missing"]) for r in runs] == [
        ("591a967493a73908", False),
        ("80ab5126c616b43a", False),
    ]
    assert [m["content"] for m in runs[0]["input"]["input_messages"]] == ["What's the weather in Paris?"]
    assert err == ""


def _spans_of(document: Any) -> Any:
    return document["resourceSpans"][0]["scopeSpans"][0]["spans"]


EXPECTED = (
    'expected {"resourceSpans": [...]}, as an OTLP exporter sends it (see "Capturing OTLP/JSON from your '
    'app" in docs/agent-runs.md)'
)


def _bad_files(tmp_path: Path) -> list[tuple[Path, str]]:
    main_request = json.loads(MAIN.read_text())
    protobuf = parse_trace_request(MAIN.read_bytes()).request.SerializeToString()
    files: dict[str, bytes] = {
        "spans.json": json.dumps(_spans_of(main_request)).encode(),
        "resource_spans.json": json.dumps(main_request["resourceSpans"]).encode(),
        "reference.json": json.dumps({"convention": "x", "spans": _spans_of(main_request)}).encode(),
        "span.json": json.dumps(_spans_of(main_request)[0]).encode(),
        "traces.pb": protobuf,
        "traces.framed": len(protobuf).to_bytes(4, "big") + protobuf,
        "traces.json.gz": gzip.compress(MAIN.read_bytes()),
        "notes.txt": b"hello\n",
        "empty.json": b"",
        "logs.json": LEGACY_LOGS.read_bytes(),
        "malformed.json": b'{"resourceSpans": 5}',
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    cases = [
        ("spans.json", f"a JSON array of 4 spans, not an OTLP/JSON export request: {EXPECTED}"),
        (
            "resource_spans.json",
            f"a JSON array of resource spans, not an OTLP/JSON export request: {EXPECTED}",
        ),
        (
            "reference.json",
            'a JSON object with a list of 4 spans under "spans", not an OTLP/JSON export request: '
            + EXPECTED,
        ),
        ("span.json", f"a single span, not an OTLP/JSON export request: {EXPECTED}"),
        (
            "traces.pb",
            "a protobuf ExportTraceServiceRequest, not OTLP/JSON: export JSON instead (the Collector's file "
            "exporter with format: json)",
        ),
        (
            "traces.framed",
            "a protobuf ExportTraceServiceRequest, not OTLP/JSON: export JSON instead (the Collector's file "
            "exporter with format: json)",
        ),
        ("traces.json.gz", "gzip-compressed data, not OTLP/JSON: decompress it first"),
        ("notes.txt", "not JSON (Expecting value: line 1 column 1 (char 0))"),
        ("empty.json", "the file is empty"),
        (
            "logs.json",
            "holds log records (resourceLogs), not spans: give it with --logs, beside the file of spans",
        ),
        ("malformed.json", "resourceSpans must be an array, got int"),  # the decoder's own words
    ]
    return [(tmp_path / name, message) for name, message in cases]


def test_a_file_that_is_not_otlp_json_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path, message in _bad_files(tmp_path):
        assert main(["inspect", str(path)]) == 2, path.name
        out, err = capsys.readouterr()
        assert out == ""
        assert err.splitlines() == [f"tracescore: error: {path}: {message}"], path.name
    # A spans file given as the log records.
    assert main(["inspect", str(MAIN), "--logs", str(MAIN)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"tracescore: error: {MAIN}: holds spans (resourceSpans), not log records\n")


def test_a_protobuf_file_is_refused_by_the_command_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "traces.pb"
    path.write_bytes(parse_trace_request(MAIN.read_bytes()).request.SerializeToString())
    done = tracescore("inspect", str(path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"tracescore: error: {path}: a protobuf ExportTraceServiceRequest, not OTLP/JSON: export JSON "
        "instead (the Collector's file exporter with format: json)\n"
    )


def _docs_snippet() -> str:
    page = (Path(PROJECT_ROOT) / "docs" / "agent-runs.md").read_text(encoding="utf-8")
    section = page.split("\n## Capturing OTLP/JSON from your app\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "no Python snippet in the section"
    return match.group(1)


def test_the_documented_python_exporter_writes_a_file_inspect_reads(tmp_path: Path) -> None:
    script = tmp_path / "otlp_json_file.py"
    script.write_text(_docs_snippet(), encoding="utf-8")
    # The snippet as a user runs it: its own process, the real OTel SDK, in the user's directory.
    ran = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    lines = (tmp_path / "spans.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    span = _spans_of(json.loads(lines[0]))[0]
    assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"]) and re.fullmatch(r"[0-9a-f]{16}", span["spanId"])

    done = tracescore("inspect", "spans.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    (run,) = json.loads(done.stdout)
    assert (run["trace_id"], run["span_id"], run["model"]) == (span["traceId"], span["spanId"], "gpt-4o")
    assert [(m["role"], m["content"]) for m in run["input"]["input_messages"]] == [("user", "Hi")]
    assert [(m["role"], m["content"]) for m in run["output"]] == [("assistant", "Hello!")]


def test_an_empty_export_request_gives_no_runs_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty-request.json"
    path.write_text('{"resourceSpans": []}')
    assert main(["inspect", str(path)]) == 0
    assert capsys.readouterr() == ("[]\n", f"{path}: the export request holds no spans\n")
