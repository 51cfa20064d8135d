"""A local OpenAI-compatible HTTP server for judge tests: scripted answers, failures and latency.

litellm reaches it as model ``openai/<name>`` with ``api_base=server.api_base`` and any api key (or
none: the judge sends a placeholder). Each ``POST /v1/chat/completions`` takes the next scripted
``Reply`` (or asks ``responder``); every request is recorded, with its headers, so tests can assert
the prompts, ``response_format``, ``temperature`` and the ``Authorization`` sent. ``error_reply(401)``
answers as a provider refusing the key.
``POST /v1/embeddings`` answers scripted vectors (a deterministic one for unscripted text).
``POST /v1/moderations`` answers the next scripted ``moderations`` category scores (418 when none).
``script_faults("embeddings" | "moderations", ...)`` puts errors or delays before those answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import pytest
from aiohttp import web

from tracescore.scoring.judge import Judge, close_clients

# Imported by tests/conftest.py before any test module: litellm must never fetch its price list here.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

NO_REPLY_STATUS = 418  # a permanent error: an unscripted request fails at once, loudly


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion with ``content``, or an HTTP error ``status``."""

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)  # names lowercase

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    prompt_tokens: int = 11
    completion_tokens: int = 7


def json_reply(value: Any, **kwargs: Any) -> Reply:
    return Reply(content=json.dumps(value), **kwargs)


def text_reply(text: str, **kwargs: Any) -> Reply:
    return Reply(content=text, **kwargs)


def error_reply(status: int, retry_after: float | None = None, **kwargs: Any) -> Reply:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Reply(status=status, headers=headers, **kwargs)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    at: float  # time.monotonic() when it arrived
    headers: dict[str, str] = field(default_factory=dict)  # names lowercase

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))


class LLMServer:
    """The server; ``await start()`` binds 127.0.0.1 on a free port, ``await close()`` stops it."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        self.vectors: dict[str, list[float]] = {}
        self.moderations: deque[dict[str, float]] = deque()
        self.faults: dict[str, deque[Reply]] = {"embeddings": deque(), "moderations": deque()}
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def script_faults(self, endpoint: str, *replies: Reply) -> None:
        """Errors (or, with status 200, delays) served by ``endpoint`` before its normal answers."""
        self.faults[endpoint].extend(replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def system_prompt(self, index: int = 0) -> str:
        """The system message of the ``index``-th chat request."""
        return str(self.chat_requests[index].messages[0]["content"])

    def user_prompt(self, index: int = 0) -> str:
        """The user message (the prompt a scorer wrote) of the ``index``-th chat request."""
        return str(self.chat_requests[index].messages[1]["content"])

    def user_prompts(self) -> list[str]:
        """The last message of every chat request (after a repair round: the repair request)."""
        return [str(request.messages[-1]["content"]) for request in self.chat_requests]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/moderations", self._moderations)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        self._closing.set()  # ends scripted delays so in-flight handlers finish
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(RecordedRequest(request.path, body, time.monotonic(), _headers(request)))
        if self.replies:
            reply = self.replies.popleft()
        elif self.responder is not None:
            reply = self.responder(body)
        else:
            reply = Reply(status=NO_REPLY_STATUS, content="llm test server: no scripted reply left")
        await self._delay(reply)
        if reply.status != 200:
            return _error_response(reply)
        completion = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }
        return web.json_response(completion, headers=reply.headers)

    async def _delay(self, reply: Reply) -> None:
        if reply.delay_s:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), reply.delay_s)

    async def _fault(self, endpoint: str) -> web.StreamResponse | None:
        """The next scripted fault of ``endpoint`` as a response (None: answer normally)."""
        if not self.faults[endpoint]:
            return None
        reply = self.faults[endpoint].popleft()
        await self._delay(reply)
        return _error_response(reply) if reply.status != 200 else None

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(RecordedRequest(request.path, body, time.monotonic(), _headers(request)))
        if (fault := await self._fault("embeddings")) is not None:
            return fault
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        data = [
            {"object": "embedding", "index": i, "embedding": self.vectors.get(text) or _vector(text)}
            for i, text in enumerate(texts)
        ]
        tokens = sum(len(str(text).split()) for text in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return web.json_response(
            {"object": "list", "data": data, "model": body.get("model", ""), "usage": usage}
        )

    async def _moderations(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(RecordedRequest(request.path, body, time.monotonic(), _headers(request)))
        if (fault := await self._fault("moderations")) is not None:
            return fault
        if not self.moderations:
            error = {"error": {"message": "llm test server: no scripted moderation left", "type": "test"}}
            return web.json_response(error, status=NO_REPLY_STATUS)
        scores = self.moderations.popleft()
        result = {
            "flagged": any(value > 0.5 for value in scores.values()),
            "categories": {name: value > 0.5 for name, value in scores.items()},
            "category_scores": scores,
        }
        model = body.get("model") or "omni-moderation-latest"
        return web.json_response({"id": f"modr-{len(self.requests)}", "model": model, "results": [result]})


def _headers(request: web.Request) -> dict[str, str]:
    return {name.lower(): value for name, value in request.headers.items()}


def _error_response(reply: Reply) -> web.StreamResponse:
    error = {"error": {"message": reply.content or f"scripted {reply.status}", "type": "test"}}
    return web.json_response(error, status=reply.status, headers=reply.headers)


def _vector(text: str, dims: int = 8) -> list[float]:
    """A deterministic unit-free vector for unscripted text."""
    digest = hashlib.sha256(str(text).encode()).digest()
    return [byte / 255.0 for byte in digest[:dims]]


class TokenUsage(TypedDict):
    """The token counts of one answer, as ``Reply`` takes them."""

    prompt_tokens: int
    completion_tokens: int


def provider_usage(body: dict[str, Any], content: str) -> TokenUsage:
    """The token counts a provider would report for this request and answer (litellm's tokenizer
    of the model), so costs in tests come out as a real provider's would."""
    import litellm

    model = str(body.get("model", "gpt-4o-mini"))
    return {
        "prompt_tokens": litellm.token_counter(model=model, messages=body.get("messages", [])),
        "completion_tokens": litellm.token_counter(model=model, text=content),
    }


def answering(structured: Any, reason: str) -> Callable[[dict[str, Any]], Reply]:
    """A responder: ``structured`` (as JSON) to requests asking for JSON, ``reason`` to the others,
    each with the usage a provider would report."""

    def respond(body: dict[str, Any]) -> Reply:
        content = json.dumps(structured) if body.get("response_format") else reason
        return Reply(content=content, **provider_usage(body, content))

    return respond


JUDGE_MODEL = "openai/gpt-4o-mini"  # litellm routes openai/* to the api_base given


def judge_at(server: LLMServer, model: str = JUDGE_MODEL, **settings: Any) -> Judge:
    """A judge asking ``server``, retrying fast (tests script 429s and 500s on purpose)."""
    settings = {"api_key": "test-key", "backoff_initial_s": 0.01, **settings}
    return Judge(model, api_base=server.api_base, **settings)


@pytest.fixture
def judge(llm_server: LLMServer) -> Judge:
    """A judge asking the ``llm_server`` of the test."""
    return judge_at(llm_server)


@pytest.fixture
async def llm_server() -> AsyncIterator[LLMServer]:
    server = LLMServer()
    await server.start()
    try:
        yield server
    finally:
        await close_clients()  # litellm's cached sessions belong to this test's event loop
        await server.close()
