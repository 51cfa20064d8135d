"""A cascade in a real ``tracescore serve``: a small judge model gates a big one, across a SIGKILL.

Agent runs written by the real OTel SDK reach the service over OTLP/gRPC. The small model's toxicity
judge scores every run; the big model's only runs the small one found toxic. While the big model is
down (503: its runs wait, pending) the service is killed; restarted on the same store with the big
model back, the small model's stored results are read, not judged again, the runs it held keep their
``gated`` decisions, and the others get the big model's score: one decision per run and rule.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.llm_server import LLMServer, Reply, answering, error_reply
from tests.support.otlp import send_scenario
from tests.support.serve import api_rows, decision_outcome, free_port, start_serve, stop, wait_healthy
from tracescore.ingest.cli.demo_traces import LlmStep, Scenario

RUDE = "Figure it out yourself, idiot."
ANSWERS = ("Your order ships on Monday.", RUDE, "Happy to help: the refund is on its way.", RUDE)
HELD = "held by rule tox-small: score 0 is not above 0.5"


def _config(path: Path, api_base: str) -> Path:
    def judge(model: str) -> dict[str, Any]:
        return {"model": f"openai/{model}", "api_base": api_base, "api_key": "k", "max_retries": 0}

    rules = [
        {
            "name": "tox-big",
            "scorer": "toxicity",
            "options": {"judge": judge("big")},
            "when": {"rule": "tox-small", "score_above": 0.5},
        },
        {"name": "tox-small", "scorer": "toxicity", "options": {"judge": judge("small")}},
    ]
    path.write_text(json.dumps({"scoring": {"rules": rules}}))
    return path


def _verdict(body: dict[str, Any]) -> Reply:
    """The toxicity judge's answer: toxic when the run's answer is the rude one."""
    toxic = RUDE in json.dumps(body["messages"])
    verdicts = {"verdicts": [{"verdict": "yes" if toxic else "no", "reason": "tone"}]}
    return answering(verdicts, "The score is what the verdicts say.")(body)


def _requests(server: LLMServer, model: str) -> int:
    return sum(1 for r in server.chat_requests if r.body.get("model") == model)


def _metric(base: str, sample: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(sample + " "):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def _wait_until(condition: Callable[[], bool], what: str, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _decisions(base: str, trace_id: str) -> dict[str, tuple[str, str]]:
    rows = api_rows(f"{base}/api/decisions?trace_id={trace_id}")
    return {row["scorer_id"]: (row["decision"], row["detail"]) for row in rows}


def _send(grpc_port: int) -> list[str]:
    return [
        send_scenario(
            grpc_port,
            "support-svc",
            Scenario("support", "Be kind.", "Where is my order?", (LlmStep(text=a),)),
        )
        for a in ANSWERS
    ]


async def test_a_small_judge_gates_a_big_one_and_a_kill_mid_cascade_judges_nothing_twice(
    tmp_path: Path,
) -> None:
    server = LLMServer()
    big_down = True
    server.responder = lambda body: (
        error_reply(503) if big_down and body["model"] == "big" else _verdict(body)
    )
    await server.start()
    store, config = tmp_path / "data", _config(tmp_path / "tracescore.json", server.api_base)
    flags = ("--config", str(config), "--idle", "0.2")
    grpc_port = free_port()
    proc, http_port = start_serve(store, *flags, grpc_port=grpc_port, stderr_file=tmp_path / "serve.log")
    try:
        base = await asyncio.to_thread(wait_healthy, proc, http_port)
        traces = await asyncio.to_thread(_send, grpc_port)
        polite, rude = [traces[0], traces[2]], [traces[1], traces[3]]

        def first_life_settled() -> bool:  # the gate decided all; the big model asked for the rude ones
            held = all(_decisions(base, t).get("tox-big") == ("gated", HELD) for t in polite)
            gates = all("tox-small" in _decisions(base, t) for t in rude)
            return held and gates and _requests(server, "big") >= 2

        await asyncio.to_thread(_wait_until, first_life_settled, "the gate's decisions")
        for trace_id in rude:  # waiting for the big model: no decision yet
            assert await asyncio.to_thread(_decisions, base, trace_id) == {"tox-small": ("scored", "")}
        avoided = await asyncio.to_thread(
            _metric, base, 'tracescore_judge_units_avoided_total{scorer="tox-big"}'
        )
        assert avoided == 2
        small_calls = _requests(server, "small")
        assert small_calls == 4 * 2  # four runs, the toxicity judge's two calls each
    finally:
        proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.wait, 30)
        if proc.stdout:
            proc.stdout.close()

    big_down, asked_before = False, len(server.chat_requests)
    proc, http_port = start_serve(store, *flags, grpc_port=free_port(), stderr_file=tmp_path / "serve.log")
    try:
        base = await asyncio.to_thread(wait_healthy, proc, http_port)

        def rude_judged() -> bool:
            return all(_decisions(base, t).get("tox-big", ("",))[0] == "scored" for t in rude)

        await asyncio.to_thread(_wait_until, rude_judged, "the big model's scores")
        for trace_id in polite:
            assert await asyncio.to_thread(_decisions, base, trace_id) == {
                "tox-small": ("scored", ""),
                "tox-big": ("gated", HELD),
            }
    finally:
        assert await asyncio.to_thread(stop, proc) == 0
        await server.close()
    # After the restart only the big model was asked, for the two runs the small one let through.
    assert _requests(server, "small") == small_calls
    after = server.chat_requests[asked_before:]
    assert len(after) == 2 * 2 and all(r.body["model"] == "big" for r in after)
    assert sum(RUDE in json.dumps(r.body["messages"]) for r in after) == 2  # the verdict calls
    per_trace, doubled_decisions, doubled_scores = await asyncio.to_thread(decision_outcome, store)
    assert per_trace == {trace_id: 2 for trace_id in traces}
    assert doubled_decisions == [] and doubled_scores == []
