"""A local OpenAI-compatible chat server for the judge benchmark: every request answered at once.

litellm reaches it as model ``openai/<name>`` with ``api_base=server.api_base`` and any api key. The
benchmark measures our judge client and pipeline, so the server does as little as it can: it asks
``answer(request_body)`` for the reply text and sends it back as a chat completion.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

# Set before litellm is first imported: the benchmark must never fetch litellm's price list.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class JudgeServer:
    """``await start()`` binds 127.0.0.1 on a free port; ``await close()`` stops it."""

    def __init__(self, answer: Callable[[dict[str, Any]], str]) -> None:
        self.answer = answer
        self.port = 0
        self._answered = 0
        self._runner: web.AppRunner | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self._answered += 1
        completion = {
            "id": f"chatcmpl-{self._answered}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.answer(body)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
        return web.json_response(completion)
