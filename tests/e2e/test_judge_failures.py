"""A judge that refuses its key, as ``tracescore serve`` users see it: in the log, not only in the store.

A real ``tracescore serve`` process asks a local OpenAI-compatible server that answers every call with
401. The key comes from ``--judge-api-key`` (the server sees it as ``Authorization: Bearer ...``). Each
run is tried once (a 401 is permanent: no retries, no waiting), gets a ``failed`` decision and no
score, and the log has one WARNING line naming the rule, the scorer, the trace, the span and what to
set; repeats of the same failure are summed up in one line. A heuristic scorer that fails gets its
line too.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.fixture_files import OTLP_DIR
from tests.support.llm_server import LLMServer, error_reply
from tests.support.otlp import agent_trace_requests
from tests.support.serve import ENV, api_rows, decision_outcome, start_serve, stop, wait_healthy

GENAI_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
TRACE, SPAN = "5dbdf98695bd5785f3d3e61006ad2dba", "594f8d102c7c4a19"
KEY = "sk-test-refused-0123456789"


def _post(base: str, body: bytes, content_type: str) -> None:
    request = urllib.request.Request(f"{base}/v1/traces", data=body, headers={"Content-Type": content_type})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _decisions(base: str, trace_id: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while True:
        rows = api_rows(f"{base}/api/decisions?trace_id={trace_id}")
        if len(rows) >= count:
            return rows
        assert time.monotonic() < deadline, f"trace {trace_id}: {len(rows)} of {count} decisions"
        time.sleep(0.2)


def _warnings(log: str) -> list[str]:
    return [
        line.split(" WARNING tracescore.scoring.runtime.executor: ", 1)[1]
        for line in log.splitlines()
        if " WARNING " in line
    ]


async def test_a_refused_judge_key_is_one_warning_line_per_failure_and_never_a_score(tmp_path: Path) -> None:
    server = LLMServer()
    server.responder = lambda body: error_reply(401, content=f"Incorrect API key provided: {KEY}.")
    await server.start()
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        "scoring:\n"
        "  rules:\n"
        "    - {name: polite, scorer: toxicity}\n"
        "    - {scorer: 'tests.scoring.custom_scorers:create_overconfident_scorer'}\n"
    )
    env = {key: value for key, value in ENV.items() if key != "OPENAI_API_KEY"}
    log_file = tmp_path / "serve.log"
    proc, http_port = start_serve(
        tmp_path / "data",
        *("--config", str(config), "--idle", "0.2"),
        *("--judge-model", "openai/gpt-4o-mini", "--judge-api-base", server.api_base),
        *("--judge-api-key", KEY),
        stderr_file=log_file,
        env=env,
    )
    try:
        base = await asyncio.to_thread(wait_healthy, proc, http_port)
        await asyncio.to_thread(_post, base, GENAI_MAIN.read_bytes(), "application/json")
        decisions = await asyncio.to_thread(_decisions, base, TRACE, 2)
        # Decided after one request: the 401 was neither retried nor left waiting for the judge.
        assert len(server.chat_requests) == 1
        assert {(d["scorer_id"], d["decision"]) for d in decisions} == {
            ("polite", "failed"),
            ("overconfident", "failed"),
        }
        polite = next(d for d in decisions if d["scorer_id"] == "polite")
        assert (
            "401 authentication failed — set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY" in polite["detail"]
        )
        # More runs failing the same way: counted, not one line each.
        more = agent_trace_requests(3)
        for _, body in more:
            await asyncio.to_thread(_post, base, body, "application/x-protobuf")
        for trace_id, _ in more:
            await asyncio.to_thread(_decisions, base, trace_id, 1)
        assert await asyncio.to_thread(stop, proc) == 0  # scores what it holds, then logs the summaries
    finally:
        if proc.poll() is None:
            proc.kill()
            await asyncio.to_thread(stop, proc)
        await server.close()
    requests = server.chat_requests
    assert {request.authorization for request in requests} == {f"Bearer {KEY}"}
    runs = len(requests)  # one request per run judged: none retried
    assert runs >= 4
    log = log_file.read_text()
    assert KEY not in log
    summaries = _summaries(log)
    full = [line for line in _warnings(log) if line not in summaries]
    assert sorted(full) == [  # the two rules run concurrently: either may log first
        f"rule polite (scorer toxicity) failed on trace {TRACE} span {SPAN}: step 'analyze': "
        "judge 'openai/gpt-4o-mini' failed: 401 authentication failed — set TRACESCORE_JUDGE_API_KEY or "
        "OPENAI_API_KEY (AuthenticationError: OpenAIException - Incorrect API key provided: [REDACTED].)",
        "rule tests.scoring.custom_scorers:create_overconfident_scorer (scorer overconfident) failed on "
        f"trace {TRACE} span {SPAN}: step 'generate_score': returned 1.7, outside its scale [0, 1]",
    ]
    # One summary per rule, at shutdown (the minute was not over), with the count and the latest reason.
    assert len(summaries) == 2
    polite_summary = next(line for line in summaries if line.startswith("rule polite"))
    assert polite_summary.startswith(
        f"rule polite (scorer toxicity): {runs - 1} more failure(s) of the same kind in the last "
    )
    assert polite_summary.endswith(
        "401 authentication failed — set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY "
        "(AuthenticationError: OpenAIException - Incorrect API key provided: [REDACTED].)"
    )
    # In the store: a failed decision per run and scorer, and no score at all.
    per_trace, doubled_decisions, doubled_scores = await asyncio.to_thread(
        decision_outcome, tmp_path / "data"
    )
    assert per_trace[TRACE] == 2 and not doubled_decisions and not doubled_scores
    assert sum(per_trace.values()) == 2 * runs  # every run judged once, and its decision written
    assert await _score_rows(tmp_path / "data") == 0


def _summaries(log: str) -> list[str]:
    return [line for line in _warnings(log) if "more failure(s) of the same kind" in line]


async def _score_rows(store_dir: Path) -> int:
    from tracescore.ingest.store.clickhouse import Store

    store = Store(str(store_dir))
    await store.start()
    try:
        (row,) = await store.query("SELECT count() AS n FROM scores")
    finally:
        await store.shutdown()
    return int(row["n"])
