"""Human labels and judge agreement through a real ``tracescore serve``: labels by ``POST
/api/annotations`` (bad input refused whole, a person's new label replacing the old one, the root span
found) and from the OpenTelemetry SDK (a ``gen_ai.evaluation.result`` log event and span attributes
with an annotator; machine evaluations left alone), then ``tracescore agreement --json`` over the
stored scores and labels, its gauges, its webhook alert, and ``tracescore annotate``.

Eight agent runs (the demo's scenarios, twice) are scored by the ``length`` rule (answer words / 24,
labelled ``short`` under half).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
import yaml
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from scipy import stats

from tests.support.serve import ENV, free_port, start_serve, stop, tracescore, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario

TOKEN = "labels-test-token"
RUNS = 8
RULES = [
    {
        "use": "tests.scoring.custom_scorers:create_answer_length_scorer",
        "name": "length",
        "options": {"target_words": 24},
    }
]


class WebhookInbox(BaseHTTPRequestHandler):
    """A local webhook: keeps every JSON body posted to it."""

    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        WebhookInbox.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@dataclass
class Served:
    base: str
    grpc_port: int
    traces: list[str]
    roots: dict[str, str] = field(default_factory=dict)  # trace -> the span its scores are on
    scores: dict[str, tuple[float, str]] = field(default_factory=dict)  # trace -> (score, label)

    def call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        """The status and JSON body of a request with the token, whatever the status."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path + query,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read())

    def labels(self, trace_id: str, name: str | None = None) -> list[dict[str, Any]]:
        status, body = self.call("GET", "/api/annotations", params={"trace_id": trace_id, "name": name or ""})
        assert status == 200, body
        rows: list[dict[str, Any]] = body
        return rows

    def metrics(self) -> str:
        request = urllib.request.Request(self.base + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            text: str = resp.read().decode()
            return text

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return tracescore(*args, "--url", self.base, env={**ENV, "TRACESCORE_AUTH_TOKEN": TOKEN})


def _exporter_headers() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


def _send_runs(grpc_port: int) -> list[str]:
    provider = TracerProvider(resource=Resource.create({"service.name": "labels-shop"}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True, headers=_exporter_headers())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("labels-tests")
    start = time.time_ns()
    traces = [
        emit_scenario(tracer, SCENARIOS[i % len(SCENARIOS)], start + i * 1_000_000) for i in range(RUNS)
    ]
    provider.shutdown()
    return traces


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    WebhookInbox.received.clear()
    hooks = ThreadingHTTPServer(("127.0.0.1", 0), WebhookInbox)
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    tmp = tmp_path_factory.mktemp("labels")
    config = {
        "scoring": {"rules": RULES},
        "receiver": {"auth_token": TOKEN},
        "agreement": {"enabled": False, "min_pairs": 4, "min_kappa": 0.9, "window": "1h"},
        "drift": {
            "enabled": False,
            "webhooks": [{"url": f"http://127.0.0.1:{hooks.server_port}/ops", "name": "ops"}],
        },
    }
    (tmp / "tracescore.yaml").write_text(yaml.safe_dump(config))
    grpc_port = free_port()
    proc, http_port = start_serve(
        tmp / "data", "--config", str(tmp / "tracescore.yaml"), "--idle", "0.2", grpc_port=grpc_port
    )
    try:
        served = Served(wait_healthy(proc, http_port), grpc_port, _send_runs(grpc_port))
        deadline = time.monotonic() + 60
        while len(served.scores) < RUNS:
            assert time.monotonic() < deadline, f"not scored: {served.scores}"
            for trace_id in served.traces:
                status, rows = served.call("GET", "/api/scores", params={"trace_id": trace_id})
                if status == 200 and rows:
                    served.roots[trace_id] = rows[0]["span_id"]
                    served.scores[trace_id] = (rows[0]["score"], rows[0]["label"])
            time.sleep(0.2)
        yield served
    finally:
        stop(proc)
        hooks.shutdown()


def test_a_wrong_item_refuses_the_whole_request_naming_it(served: Served) -> None:
    trace_id = served.traces[0]
    good = {"trace_id": trace_id, "name": "helpfulness", "value": 0.5, "annotator": "ann"}
    wrong = {"trace_id": "xyz", "name": "helpfulness", "value": "high", "annotator": "ann"}

    status, body = served.call(
        "POST", "/api/annotations", [good, wrong, {**good, "label": "", "value": None}]
    )

    assert status == 400 and body["stored"] == 0
    assert [(e["index"], e["field"]) for e in body["errors"]] == [(1, "value"), (1, "trace_id"), (2, "value")]
    assert (
        body["error"]
        == "[1].value: Input should be a valid number, unable to parse string as a number (and 2 more)"
    )
    assert body["errors"][1]["error"] == "[1].trace_id: Value error, must be 32 hex characters"
    assert "give a value, a label, or both" in body["errors"][2]["error"]
    assert served.labels(trace_id) == []  # the good item was not stored either
    status, body = served.call("POST", "/api/annotations", {**good, "spam": 1})
    assert (status, body["errors"][0]["error"]) == (400, "spam: Extra inputs are not permitted")
    unknown = "0" * 31 + "1"
    status, body = served.call("POST", "/api/annotations", {**good, "trace_id": unknown})
    assert (
        status == 400
        and body["error"] == f"span_id: trace {unknown} has no root span stored (yet): give span_id"
    )


def test_a_label_is_stored_on_the_root_span_and_a_new_one_replaces_it(served: Served) -> None:
    trace_id = served.traces[1]
    first = {
        "trace_id": trace_id,
        "name": "helpfulness",
        "label": "Bad",
        "annotator": "ann",
        "comment": "vague",
    }

    status, body = served.call("POST", "/api/annotations", first)

    assert status == 200 and body["stored"] == 1
    (stored,) = served.labels(trace_id)
    assert stored == body["annotations"][0]
    assert (stored["span_id"], stored["label"], stored["value"], stored["source"]) == (
        served.roots[trace_id],
        "Bad",
        None,
        "api",
    )
    # The same person again: replaced; another person: beside it.
    again = {**first, "span_id": served.roots[trace_id], "label": "good", "value": 0.8, "comment": ""}
    other = {**first, "annotator": "bob", "value": 0.1}
    assert served.call("POST", "/api/annotations", [again, other])[0] == 200
    rows = {row["annotator"]: row for row in served.labels(trace_id)}
    assert set(rows) == {"ann", "bob"}
    assert (rows["ann"]["label"], rows["ann"]["value"], rows["ann"]["id"]) == ("good", 0.8, stored["id"])


def test_labels_from_the_otel_sdk_are_stored_and_machine_evaluations_are_not(served: Served) -> None:
    trace_id = served.traces[2]
    root = SpanContext(
        int(trace_id, 16), int(served.roots[trace_id], 16), True, TraceFlags(TraceFlags.SAMPLED)
    )
    logs = LoggerProvider(resource=Resource.create({"service.name": "review-tool"}))
    exporter = OTLPLogExporter(
        endpoint=f"127.0.0.1:{served.grpc_port}", insecure=True, headers=_exporter_headers()
    )
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = logs.get_logger("review-tool")
    result: dict[str, Any] = {"gen_ai.evaluation.name": "helpfulness", "gen_ai.evaluation.score.value": 0.9}
    with trace.use_span(NonRecordingSpan(root)):
        logger.emit(
            event_name="gen_ai.evaluation.result",
            attributes={**result, "gen_ai.evaluation.explanation": "clear", "tracescore.annotator": "dave"},
        )
        logger.emit(
            event_name="gen_ai.evaluation.result", attributes={**result, "gen_ai.evaluation.name": "bot"}
        )
        says_nothing = {"gen_ai.evaluation.name": "helpfulness", "tracescore.annotator": "dave"}
        logger.emit(event_name="gen_ai.evaluation.result", attributes=says_nothing)
    logs.shutdown()
    spans = TracerProvider(resource=Resource.create({"service.name": "review-tool"}))
    span_exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{served.grpc_port}", insecure=True, headers=_exporter_headers()
    )
    spans.add_span_processor(SimpleSpanProcessor(span_exporter))
    feedback: dict[str, Any] = {"gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.label": "rude"}
    with spans.get_tracer("review-tool").start_as_current_span("user feedback", attributes=feedback) as span:
        span.set_attribute("tracescore.annotator", "erin")
        span.add_event(
            "gen_ai.evaluation.result",
            {"gen_ai.evaluation.name": "judge", "gen_ai.evaluation.score.value": 1},
        )
        feedback_trace = format(span.get_span_context().trace_id, "032x")
        feedback_span = format(span.get_span_context().span_id, "016x")
    spans.shutdown()

    labelled = [
        (r["span_id"], r["name"], r["value"], r["annotator"], r["comment"], r["source"])
        for r in served.labels(trace_id)
    ]
    assert labelled == [(served.roots[trace_id], "helpfulness", 0.9, "dave", "clear", "otlp")]
    (from_span,) = served.labels(feedback_trace)
    assert (
        from_span["span_id"],
        from_span["name"],
        from_span["label"],
        from_span["value"],
        from_span["annotator"],
    ) == (feedback_span, "tone", "rude", None, "erin")
    metrics = served.metrics()
    assert 'tracescore_annotations_stored_total{source="otlp"} 2.0' in metrics
    assert "tracescore_annotations_refused_total 1.0" in metrics


def test_annotate_picks_unlabelled_runs_and_prints_them_with_the_command_to_label(served: Served) -> None:
    lowest = sorted(served.traces, key=lambda t: served.scores[t][0])
    labelled = {"trace_id": lowest[0], "name": "length", "label": "short", "annotator": "ann"}
    assert served.call("POST", "/api/annotations", labelled)[0] == 200

    shown = served.command(
        "annotate", "--scorer", "length", "--pick", "lowest", "--limit", "2", "--annotator", "ann"
    )

    assert shown.returncode == 0, shown.stderr
    picked = re.findall(r"^=== \d/2: trace (\w+) span (\w+): length ([\d.]+)", shown.stdout, re.MULTILINE)
    assert [(t, s) for t, s, _ in picked] == [(t, served.roots[t]) for t, _, _ in picked]
    for t, _, printed in picked:
        assert pytest.approx(served.scores[t][0], abs=1e-3) == float(printed)
    assert lowest[0] not in shown.stdout  # labelled already
    assert sorted(served.scores[t][0] for t, _, _ in picked) == [served.scores[t][0] for t in lowest[1:3]]
    assert shown.stdout.count("as its scorers received it (AgentRun JSON):") == 2
    # The printed command, run as it is, sends a label of the unit.
    commands = [line.strip() for line in shown.stdout.splitlines() if line.strip().startswith("curl ")]
    assert len(commands) == 2 and commands[0].startswith(f"curl -sS -X POST {served.base}/api/annotations")
    env = {**ENV, "TRACESCORE_AUTH_TOKEN": TOKEN}
    sent = subprocess.run(["bash", "-c", commands[0]], capture_output=True, text=True, env=env, timeout=30)
    assert json.loads(sent.stdout)["stored"] == 1, sent
    (sent_label,) = served.labels(picked[0][0], "length")
    assert (sent_label["span_id"], sent_label["annotator"], sent_label["value"]) == (picked[0][1], "ann", 1.0)


def expected_kappa(first: list[str], second: list[str]) -> float:
    """Cohen's kappa by its definition: (observed - chance agreement) / (1 - chance agreement)."""
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    chance = sum((first.count(c) / n) * (second.count(c) / n) for c in set(first) | set(second))
    return (observed - chance) / (1 - chance)


def test_agreement_is_measured_from_stored_scores_and_labels_and_alerts(served: Served) -> None:
    # ann labels every run: her labels of the two runs the test above labelled replace those.
    flipped = {"short": "long enough", "long enough": "short"}
    labels: list[dict[str, Any]] = []
    values: list[float] = []
    for index, trace_id in enumerate(served.traces):
        score, label = served.scores[trace_id]
        human_label = label if index < 6 else flipped[label]
        human_value = min(1.0, max(0.0, score + (0.1 if index % 2 else -0.05)))
        labels.append(
            {
                "trace_id": trace_id,
                "name": "length",
                "annotator": "ann",
                "label": human_label.upper(),
                "value": human_value,
            }
        )
        values.append(human_value)
    assert served.call("POST", "/api/annotations", labels)[0] == 200

    done = served.command("agreement", "--json", "--notify")

    assert done.returncode == 0, done.stderr
    (found,) = json.loads(done.stdout)
    scores = [served.scores[t][0] for t in served.traces]
    scorer_labels = [served.scores[t][1] for t in served.traces]
    human_labels = [row["label"].lower() for row in labels]
    assert (found["scorer_id"], found["label_pairs"], found["score_pairs"], found["annotators"]) == (
        "length",
        8,
        8,
        1,
    )
    assert found["kappa"] == pytest.approx(expected_kappa(scorer_labels, human_labels))
    assert found["spearman"] == pytest.approx(stats.spearmanr(scores, values).statistic)
    assert found["mae"] == pytest.approx(float(np.mean(np.abs(np.subtract(scores, values)))))
    assert found["kappa_low"] < found["kappa"] < found["kappa_high"]
    assert found["state"] == "below" and found["reasons"][0].startswith("kappa ")
    (alert,) = WebhookInbox.received
    assert (alert["kind"], alert["about"], alert["scorers"][0]["scorer_id"]) == (
        "alert",
        "agreement",
        "length",
    )
    metrics = served.metrics()
    assert f'tracescore_judge_agreement{{measure="kappa",scorer="length"}} {found["kappa"]}' in metrics
    assert 'tracescore_judge_agreement_state{scorer="length",state="below"} 1.0' in metrics
    table = served.command("agreement")
    assert table.returncode == 0 and "length" in table.stdout and "below" in table.stdout
    assert math.isfinite(found["kappa"])
    # The report page shows the same measures, each with its interval, under its agreement heading.
    request = urllib.request.Request(served.base + "/report", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as resp:
        page = resp.read().decode()
    section = page.split('id="agreement"', 1)[1]
    kappa = f"{found['kappa']:.2f} [{found['kappa_low']:.2f}, {found['kappa_high']:.2f}]"
    mae = f"{found['mae']:.2f} [{found['mae_low']:.2f}, {found['mae_high']:.2f}]"
    assert "<td>length</td>" in section and f"<td>{kappa}</td>" in section and f"<td>{mae}</td>" in section
