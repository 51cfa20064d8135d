"""A judge that is down holds only the sessions waiting for it: the service (in this process) goes on
handing complete sessions to their rules, and marks each once its judge answers."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.conversations import SentTurn, Turn, conversation
from tests.support.llm_server import JUDGE_MODEL, LLMServer, error_reply, json_reply
from tests.support.serve import api_rows
from tests.support.service import running_service, service_config

RULES = [
    {"scorer": "conversation-turns", "target": "session"},
    {"scorer": "multi-turn-judge", "target": "session", "options": {"criterion": "The user is helped."}},
]


def _send(base: str, turns: list[SentTurn]) -> None:
    for turn in turns:
        headers = {"Content-Type": "application/x-protobuf"}
        request = urllib.request.Request(f"{base}/v1/traces", data=turn.request, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert resp.status == 200


async def _until(found: Callable[[], Any], what: str, limit_s: float = 30) -> Any:
    deadline = time.monotonic() + limit_s
    while not (value := await asyncio.to_thread(found)):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)
    return value


async def test_sessions_waiting_for_their_judge_do_not_hold_the_others(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.responder = lambda body: error_reply(503, retry_after=0.1)
    config = service_config(
        tmp_path,
        **{
            "scoring.rules": RULES,
            "scoring.judge": {
                "model": JUDGE_MODEL,
                "api_base": llm_server.api_base,
                "api_key": "k",
                "max_retries": 0,
            },
            "scoring.circuit_breaker": {"enabled": False},
            "session": {"idle": "0.5s", "check_interval": "0.2s"},
        },
    )
    async with running_service(config) as service:
        base = f"http://127.0.0.1:{service.http.port}"

        def scorers(session_id: str) -> set[str]:
            return {row["scorer_id"] for row in api_rows(f"{base}/api/scores?session={session_id}")}

        first = conversation("first", "vercel", [Turn("Hi", "Hello"), Turn("Bye", "Bye")])
        await asyncio.to_thread(_send, base, first)
        await _until(lambda: scorers("first") == {"conversation-turns"}, "the first session's heuristic")
        # Its judge is still down, and a new session is handed on all the same.
        later = conversation("later", "openinference", [Turn("Where is my order?", "Shipped.")])
        await asyncio.to_thread(_send, base, later)
        await _until(lambda: scorers("later") == {"conversation-turns"}, "the later session's heuristic")
        assert await service.store.query("SELECT SessionId FROM session_done") == []  # both wait, unmarked

        llm_server.responder = lambda body: json_reply({"satisfied": True, "reasoning": "Helped."})
        both = {"conversation-turns", "multi-turn-judge"}
        await _until(lambda: scorers("first") == both and scorers("later") == both, "the judge's scores")
        deadline = time.monotonic() + 10
        marked = "SELECT SessionId FROM session_done FINAL ORDER BY SessionId"
        while (rows := await service.store.query(marked)) != [{"SessionId": "first"}, {"SessionId": "later"}]:
            assert time.monotonic() < deadline, f"the sessions are not marked: {rows}"
            await asyncio.sleep(0.2)
