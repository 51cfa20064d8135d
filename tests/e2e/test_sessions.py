"""Conversations end to end: a real ``tracescore serve``, multi-turn conversations sent by the real
OTel SDK with two frameworks' session attributes (OpenInference ``session.id``, the Vercel AI SDK's
``ai.telemetry.metadata.sessionId``), ``target: session`` rules scoring each conversation once it
has been quiet for ``session.idle``, and a conversation that resumes after it was scored scored again
with its old rows gone; Mastra's multi-turn judge on a whole conversation, through litellm to the
local OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.conversations import SentTurn, Turn, conversation
from tests.support.llm_server import LLMServer, json_reply
from tests.support.serve import ENV, api_rows, start_serve, stop, tracescore, wait_healthy

SESSION_SCORERS = ("conversation-turns", "repeated-requests", "tool-error-rate", "time-to-resolution")
CONFIG: dict[str, Any] = {
    "assembly": {"idle_seconds": 0.3},
    "session": {"idle": "1s", "check_interval": "0.3s"},
    "scoring": {
        "rules": [
            {"scorer": "textual-difference"},  # a run rule beside them: every turn scored alone too
            *({"scorer": name, "target": "session"} for name in SESSION_SCORERS),
        ]
    },
}
PROTOBUF = {"Content-Type": "application/x-protobuf"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("sessions")
    config = directory / "tracescore.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    proc, http_port = start_serve(directory / "store", "--config", str(config))
    try:
        yield wait_healthy(proc, http_port)
    finally:
        stop(proc)


def send(base: str, turns: list[SentTurn]) -> None:
    for turn in turns:
        request = urllib.request.Request(f"{base}/v1/traces", data=turn.request, headers=PROTOBUF)
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert resp.status == 200


def session_rows(base: str, session_id: str, kind: str = "scores") -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"session": session_id, "limit": 100})
    return api_rows(f"{base}/api/{kind}?{query}")


def wait_for(found: Callable[[], Any], what: str, limit_s: float = 30) -> Any:
    deadline = time.monotonic() + limit_s
    while not (value := found()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def by_scorer(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    assert len({row["scorer_id"] for row in rows}) == len(rows), rows  # one row per scorer
    return {row["scorer_id"]: row for row in rows}


def scored(base: str, session_id: str, turns: int) -> dict[str, dict[str, Any]] | None:
    """The session's score rows once all four are there for a conversation of ``turns`` turns."""
    rows = by_scorer(session_rows(base, session_id))
    if set(rows) != set(SESSION_SCORERS) or rows["conversation-turns"]["score"] != turns:
        return None
    return rows


def test_two_frameworks_conversations_are_scored_whole_on_their_last_runs_root(served: str) -> None:
    support = f"oi-{uuid.uuid4().hex[:8]}"
    chat = f"vercel-{uuid.uuid4().hex[:8]}"
    support_turns = conversation(
        support,
        "openinference",
        [
            Turn("Where is my order A-17?", "Let me look it up.", tool_failed=True),
            Turn("Where is my order A-17??", "It shipped yesterday.", tool_failed=False),
        ],
    )
    chat_turns = conversation(
        chat,
        "vercel",
        [Turn("Hi!", "Hello, how can I help?"), Turn("Reset my password", "Done."), Turn("Thanks", "Bye!")],
    )
    send(served, support_turns + chat_turns)

    support_rows = wait_for(lambda: scored(served, support, 2), "the OpenInference session's scores")
    chat_rows = wait_for(lambda: scored(served, chat, 3), "the Vercel session's scores")

    # The user asked the same thing twice: one of one later message repeats; one of two tool calls failed.
    assert support_rows["repeated-requests"]["score"] == 1.0
    assert support_rows["tool-error-rate"]["score"] == 0.5
    assert chat_rows["repeated-requests"]["score"] == 0.0
    assert chat_rows["tool-error-rate"]["score"] == 0.0
    # Turns start a second apart and last 5 ms: 2.005 s from the first start to the last end.
    assert chat_rows["time-to-resolution"]["score"] == pytest.approx(2.005)
    for rows, turns, sid in ((support_rows, support_turns, support), (chat_rows, chat_turns, chat)):
        for row in rows.values():
            assert (row["trace_id"], row["span_id"]) == (turns[-1].trace_id, turns[-1].root_span_id)
            assert row["session_id"] == sid
        decisions = by_scorer(session_rows(served, sid, "decisions"))
        assert {d: decisions[d]["decision"] for d in SESSION_SCORERS} == dict.fromkeys(
            SESSION_SCORERS, "scored"
        )
    # The command reads a conversation's session scores too.
    listed = tracescore("scores", "--url", served, "--session", chat, "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(row["scorer_id"] for row in json.loads(listed.stdout)) == sorted(SESSION_SCORERS)
    # Every turn was scored as a run too, without a session id on its row.
    first = api_rows(f"{served}/api/scores?trace_id={chat_turns[0].trace_id}")
    assert [(r["scorer_id"], r["session_id"]) for r in first] == [("textual-difference", "")]


def test_a_conversation_resumed_after_scoring_is_scored_again_replacing_its_rows(served: str) -> None:
    session = f"resume-{uuid.uuid4().hex[:8]}"
    turns = conversation(
        session, "openinference", [Turn("Book a table", "For how many?"), Turn("Two", "Booked for two.")]
    )
    send(served, turns[:1])
    wait_for(lambda: scored(served, session, 1), "the first scoring")
    send(served, turns[1:])
    rows = wait_for(lambda: scored(served, session, 2), "the second scoring")

    for row in rows.values():
        assert (row["trace_id"], row["span_id"]) == (turns[1].trace_id, turns[1].root_span_id)
    # The first scoring's rows, on the first turn's root span, are gone from every read.
    on_first = api_rows(f"{served}/api/scores?trace_id={turns[0].trace_id}")
    assert [r["scorer_id"] for r in on_first] == ["textual-difference"]
    decided_first = api_rows(f"{served}/api/decisions?trace_id={turns[0].trace_id}")
    assert [r["scorer_id"] for r in decided_first] == ["textual-difference"]
    assert len(session_rows(served, session)) == len(SESSION_SCORERS)


async def test_the_mastra_multi_turn_judge_grades_the_whole_conversation_through_litellm(
    tmp_path: Path,
) -> None:
    server = LLMServer()
    server.responder = lambda body: json_reply({"satisfied": True, "reasoning": "Both turns answer."})
    await server.start()
    rule = {
        "scorer": "multi-turn-judge",
        "target": "session",
        "options": {"criterion": "The user is helped."},
    }
    config = tmp_path / "tracescore.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "scoring": {"rules": [rule]}}))
    proc, http_port = start_serve(
        tmp_path / "store",
        *(
            "--config",
            str(config),
            "--judge-model",
            "openai/gpt-4o-mini",
            "--judge-api-base",
            server.api_base,
        ),
        env={**ENV, "OPENAI_API_KEY": "sk-test"},
    )
    try:
        base = await asyncio.to_thread(wait_healthy, proc, http_port)
        session = f"judge-{uuid.uuid4().hex[:8]}"
        turns = conversation(
            session, "vercel", [Turn("Is it raining?", "Yes, in London."), Turn("Paris?", "Sunny in Paris.")]
        )
        await asyncio.to_thread(send, base, turns)
        rows = await asyncio.to_thread(wait_for, lambda: session_rows(base, session), "the judge's score")
    finally:
        await asyncio.to_thread(stop, proc)
        await server.close()
    assert [(r["scorer_id"], r["score"], r["span_id"]) for r in rows] == [
        ("multi-turn-judge", 1.0, turns[-1].root_span_id)
    ]
    assert rows[0]["reason"] == "✅ Criterion satisfied.\n\nThe user is helped.\n\nBoth turns answer."
    [prompt] = server.user_prompts()
    transcript = "Assistant turn 1: Yes, in London.\n\nAssistant turn 2: Sunny in Paris."
    assert f'label="conversation">\n{transcript}\n</data-' in prompt  # the service's own data fence
