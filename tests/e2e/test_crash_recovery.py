"""SIGKILL a real ``tracescore serve`` mid-stream, restart it on the same store: every acknowledged
trace ends with exactly one decision per scorer and one score row per (span, scorer).

The traces are multi-step agent runs written by the real OTel SDK; they reach the service over
OTLP/HTTP (acknowledged with 200) or over Kafka (the real Tansu broker; a record is acknowledged when
its offset is committed). The service is killed while spans are stored but not scored, and while
scores are being written; what it left is read from the embedded store (chDB) after it stopped.
"""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import yaml
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from tests.support.otlp import agent_trace_requests
from tests.support.serve import (
    api_rows,
    decision_outcome,
    ledger_spans_missing_from_otel_traces,
    start_serve,
    stop,
    wait_healthy,
)

SCORERS = ("content-similarity", "textual-difference")  # the default rules
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _post(base: str, body: bytes) -> int:
    request = urllib.request.Request(f"{base}/v1/traces", data=body, headers=PROTOBUF)
    with urllib.request.urlopen(request, timeout=30) as resp:
        return int(resp.status)


def _metric(base: str, name: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stdout:
        proc.stdout.close()


def _wait_until(condition: Callable[[], bool], limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _decided(base: str) -> float:
    return sum(
        _metric(base, f'tracescore_scoring_decisions_total{{decision="scored",scorer="{s}"}}')
        for s in SCORERS
    )


def test_sigkill_after_otlp_http_200s_loses_no_acknowledged_trace(tmp_path: Path) -> None:
    store = tmp_path / "store"
    requests = agent_trace_requests(120)
    # A long idle: every acknowledged trace is still held unscored when the process dies.
    proc, http_port = start_serve(store, "--idle", "30")
    try:
        base = wait_healthy(proc, http_port)
        assert [_post(base, body) for _, body in requests] == [200] * len(requests)
        assert _decided(base) == 0
    finally:
        _kill(proc)

    proc, http_port = start_serve(store, "--idle", "0.3")  # recovery adopts them from the store
    try:
        base = wait_healthy(proc, http_port)
        _wait_until(lambda: _decided(base) >= 2 * len(requests), 120, "the recovered traces' scores")
        assert _metric(base, "tracescore_traces_recovered_total") == len(requests)
    finally:
        assert stop(proc) == 0

    per_trace, doubled_decisions, doubled_scores = decision_outcome(store)
    assert per_trace == {trace_id: len(SCORERS) for trace_id, _ in requests}
    assert doubled_decisions == [] and doubled_scores == []


def test_sigkill_twice_while_kafka_streams_in_loses_and_doubles_nothing(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    store, topic = tmp_path / "store", "otlp_spans"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.create_topics([NewTopic(topic, 4, 1)])
    admin.close()
    requests = agent_trace_requests(2_000)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=5)
    for trace_id, body in requests:
        producer.send(topic, body, key=trace_id.encode())  # keyed by trace id, as the collector does
    producer.flush()
    producer.close()
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        yaml.safe_dump({"kafka": {"bootstrap": kafka_bootstrap, "topic": topic, "session_timeout_ms": 6000}})
    )
    flags = ("--config", str(config))

    # First life: killed while spans are stored but their traces not yet scored (a long idle).
    proc, http_port = start_serve(store, *flags, "--idle", "30")
    try:
        base = wait_healthy(proc, http_port)
        _wait_until(lambda: _metric(base, "tracescore_spans_stored_total") >= 1_000, 120, "spans stored")
    finally:
        _kill(proc)

    # Second life: what the first stored is recovered; killed while scores are being written.
    proc, http_port = start_serve(store, *flags, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        assert _metric(base, "tracescore_traces_recovered_total") > 0
        _wait_until(lambda: _decided(base) >= 400, 180, "the first scores")
    finally:
        _kill(proc)

    # Third life: everything acknowledged ends scored once.
    proc, http_port = start_serve(store, *flags, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)

        def all_decided() -> bool:
            return len(_outcome_while_running(base, [t for t, _ in requests])) == 0

        _wait_until(all_decided, 300, "every trace's decisions")
    finally:
        assert stop(proc) == 0

    per_trace, doubled_decisions, doubled_scores = decision_outcome(store)
    assert per_trace == {trace_id: len(SCORERS) for trace_id, _ in requests}
    assert doubled_decisions == [] and doubled_scores == []
    # Killed inside group commits: nothing to score that Grafana's trace view does not show.
    assert ledger_spans_missing_from_otel_traces(store) == []


def _outcome_while_running(base: str, trace_ids: list[str]) -> list[str]:
    """The traces whose decisions the running service does not show yet (over its HTTP API)."""
    missing = []
    for trace_id in trace_ids:
        if len(api_rows(f"{base}/api/scores?trace_id={trace_id}")) < len(SCORERS):
            missing.append(trace_id)
            if len(missing) > 5:
                break
    return missing
