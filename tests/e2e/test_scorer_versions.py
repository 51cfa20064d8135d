"""A scorer edited between two runs of ``tracescore serve``: its scores carry a new version, and
``tracescore drift`` reports the change as a finding of its own, never as drift.

The rule checks that the answer mentions a city; the edit changes the city (its ``expected``
option), so the same traffic scores 1 before and 0 after. Spans go from the OpenTelemetry SDK over
OTLP/gRPC into a real ``tracescore serve``; drift runs as its own command over the store.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import clickhouse_connect
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.serve import api_rows, free_port, start_serve, stop, tracescore, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario

PARIS = SCENARIOS[0]  # its answer: "The weather in Paris is currently rainy with a temperature of 57°F."
RUNS = 6  # per version


def _config(path: Path, store: Path, city: str) -> Path:
    rule = {"name": "mentions-city", "scorer": "check-includes", "options": {"expected": city}}
    config = {
        "store": str(store),
        "scoring": {"rules": [rule]},
        "assembly": {"idle_seconds": 0.2},
        "drift": {"min_baseline_n": 5, "min_window_n": 3},
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _serve_and_score(config: Path, store: Path, log: Path) -> list[dict[str, Any]]:
    """Start serve with ``config``, send ``RUNS`` runs with the OTel SDK, wait for their scores, stop."""
    grpc_port = free_port()
    proc, http_port = start_serve(store, "--config", str(config), grpc_port=grpc_port, stderr_file=log)
    try:
        base = wait_healthy(proc, http_port)
        provider = TracerProvider(resource=Resource.create({"service.name": "versions"}))
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True))
        )
        traces = [emit_scenario(provider.get_tracer("test"), PARIS, time.time_ns()) for _ in range(RUNS)]
        provider.shutdown()
        deadline = time.monotonic() + 60
        rows: list[dict[str, Any]] = []
        while len(rows) < RUNS:
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
            rows = [row for trace in traces for row in api_rows(f"{base}/api/scores?trace_id={trace}")]
    finally:
        assert stop(proc) == 0, log.read_text()[-2000:]
    return rows


def test_an_edited_rule_is_a_version_change_and_not_drift(tmp_path: Path) -> None:
    store, log = tmp_path / "data", tmp_path / "serve.log"
    before = _serve_and_score(_config(tmp_path / "paris.yaml", store, "Paris"), store, log)
    edited = _config(tmp_path / "lyon.yaml", store, "Lyon")  # the rule's options edited
    after = _serve_and_score(edited, store, log)

    [old_version] = {row["scorer_version"] for row in before}
    [new_version] = {row["scorer_version"] for row in after}
    assert re.fullmatch(r"1\+[0-9a-f]{8}", old_version) and re.fullmatch(r"1\+[0-9a-f]{8}", new_version)
    assert old_version != new_version
    assert [row["score"] for row in before] == [1.0] * RUNS
    assert [row["score"] for row in after] == [0.0] * RUNS

    done = tracescore("drift", "--config", str(edited), "--json")
    assert done.returncode == 0, done.stderr
    findings = {finding["kind"]: finding for finding in json.loads(done.stdout)}
    assert set(findings) == {"drift", "version_change"}
    change, drift = findings["version_change"], findings["drift"]
    assert (change["scorer_id"], change["service_name"], change["agent_name"]) == (
        "mentions-city",
        "versions",
        "weather_agent",
    )
    assert (change["previous_version"], change["version"]) == (old_version, new_version)
    assert (change["baseline_n"], change["baseline_mean"]) == (RUNS, 1.0)  # the old version's scores
    assert (change["window_n"], change["window_mean"]) == (RUNS, 0.0)  # the new version's
    assert change["mann_whitney_p_value"] < 0.01 and change["drifted"] is False
    # When the new version's first score was written (the store keeps it to the millisecond).
    changed_at = datetime.fromisoformat(change["version_changed_at"])
    first_new = min(datetime.fromisoformat(row["created_at"]) for row in after)
    assert abs(changed_at - first_new) < timedelta(milliseconds=1)
    # Drift compares the new version with itself: no baseline of it yet, so no verdict, and no alarm.
    assert (drift["version"], drift["state"], drift["drifted"]) == (new_version, "insufficient", False)
    assert (drift["baseline_n"], drift["window_n"]) == (0, RUNS)

    # The findings are recorded, each of its kind; the table says what changed.
    client = clickhouse_connect.get_client(dsn=f"chdb://{store}")
    try:
        kinds = client.query(
            "SELECT Kind, State, PreviousVersion, ScorerVersion FROM score_drift ORDER BY Kind"
        )
        assert kinds.result_rows == [
            ("drift", "insufficient", "", new_version),
            ("version_change", "version_changed", old_version, new_version),
        ]
    finally:
        client.close()
    table = tracescore("drift", "--config", str(edited), "--no-record")
    assert table.returncode == 0, table.stderr
    assert "mentions-city changed version at " in table.stdout
    assert f"({old_version} → {new_version}); the new version scores 1.000 lower than the old" in table.stdout
    assert f"no drift verdict yet: version {new_version} has 0 baseline scores" in table.stdout
