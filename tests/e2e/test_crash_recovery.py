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

from tests.support.conversations import SentTurn, Turn, conversation, session_rows
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


SESSION_SCORERS = ("conversation-turns", "repeated-requests")


def _session_config(path: Path, idle: str) -> Path:
    """Both default run rules and two session rules; sessions complete after ``idle``, five a pass."""
    rules = [{"scorer": s} for s in SCORERS] + [{"scorer": s, "target": "session"} for s in SESSION_SCORERS]
    session = {"idle": idle, "check_interval": "0.2s", "batch": 5}
    path.write_text(yaml.safe_dump({"scoring": {"rules": rules}, "session": session}))
    return path


def _session_decided(base: str) -> float:
    return _metric(base, 'tracescore_scoring_decisions_total{decision="scored",scorer="conversation-turns"}')


def test_sigkill_with_sessions_open_and_completing_loses_and_doubles_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    start = time.time_ns()
    conversations = {
        f"crash-{i}": conversation(
            f"crash-{i}",
            "openinference" if i % 2 else "vercel",
            [Turn(f"question {i}", "answer one"), Turn(f"question {i}", "answer two"), Turn("thanks", "bye")],
            start + i * 10_000_000,
        )
        for i in range(24)
    }
    turns = [turn for sent in conversations.values() for turn in sent]
    open_sessions = ("--config", str(_session_config(tmp_path / "open.yaml", "1h")))
    completing = ("--config", str(_session_config(tmp_path / "completing.yaml", "1s")))

    # First life: every turn decided as a run (its session row written), every session still open.
    proc, http_port = start_serve(store, *open_sessions, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        assert [_post(base, turn.request) for turn in turns] == [200] * len(turns)
        _wait_until(lambda: _decided(base) >= len(SCORERS) * len(turns), 60, "every turn's run scores")
        assert _session_decided(base) == 0
    finally:
        _kill(proc)

    # Second life: sessions complete, five a pass; killed as the first session scores are decided.
    proc, http_port = start_serve(store, *completing, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        _wait_until(lambda: _session_decided(base) > 0, 60, "the first session scores")
    finally:
        _kill(proc)

    # Third life: the sessions left are completed, none twice.
    proc, http_port = start_serve(store, *completing, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        _wait_until(
            lambda: _metric(base, "tracescore_sessions_scored_total") > 0, 60, "sessions left to score"
        )
        _wait_until(lambda: _sessions_shown(base, conversations) == len(conversations), 60, "every session")
    finally:
        assert stop(proc) == 0

    left = session_rows(store, SESSION_SCORERS)
    last_turns = {sid: (sent[-1].trace_id, sent[-1].root_span_id) for sid, sent in conversations.items()}
    expected_scores = {(sid, "conversation-turns"): (*last, 3.0, 1) for sid, last in last_turns.items()}
    assert {k: v for k, v in left.scores.items() if k[1] == "conversation-turns"} == expected_scores
    assert {k: v[3] for k, v in left.scores.items()} == {
        (s, n): 1 for s in conversations for n in SESSION_SCORERS
    }
    assert left.decisions == {(s, n): 1 for s in conversations for n in SESSION_SCORERS}
    assert left.by_scorer == dict.fromkeys(SESSION_SCORERS, len(conversations))
    per_trace, doubled_decisions, doubled_scores = decision_outcome(store)
    assert doubled_decisions == [] and doubled_scores == []
    last = {trace_id for trace_id, _ in last_turns.values()}
    assert per_trace == {
        turn.trace_id: len(SCORERS) + (len(SESSION_SCORERS) if turn.trace_id in last else 0) for turn in turns
    }


def _sessions_shown(base: str, conversations: dict[str, list[SentTurn]]) -> int:
    """How many of the sessions the running service shows all session scores of (over its HTTP API)."""
    return sum(
        len(api_rows(f"{base}/api/scores?session={session_id}")) == len(SESSION_SCORERS)
        for session_id in conversations
    )
