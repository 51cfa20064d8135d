"""The soak's LLM judge: the local OpenAI-compatible server of the judge tests (``LLMServer``) answering
the toxicity judge's prompts, or, while a fault says so, failing every call with 500 or holding every
call far past the judge's timeout."""

from __future__ import annotations

import json
from collections import Counter
from enum import StrEnum
from typing import Any

from tests.support.llm_server import LLMServer, Reply, error_reply

KEEP_REQUESTS = 200  # the server records every request; the soak needs none of them
HANG_S = 120.0  # far past the judge's timeout (the server ends its delays when it closes)
VERDICTS = {"verdicts": [{"verdict": "no", "reason": "the answer is polite and on topic"}]}
REASON = "The score is 0 because the answer is polite."


class JudgeMode(StrEnum):
    OK = "ok"
    ERRORS = "errors"  # 500 to every call
    HANGS = "hangs"  # no answer within HANG_S


class JudgeBackend:
    """The server, and the mode the faults switch. ``await start()``, ``await close()``."""

    def __init__(self) -> None:
        self.server = LLMServer()
        self.server.responder = self._respond
        self.mode = JudgeMode.OK
        self.calls: Counter[JudgeMode] = Counter()

    @property
    def api_base(self) -> str:
        return self.server.api_base

    async def start(self) -> None:
        await self.server.start()

    async def close(self) -> None:
        await self.server.close()

    def _respond(self, body: dict[str, Any]) -> Reply:
        mode = self.mode
        self.calls[mode] += 1
        if len(self.server.requests) > 5 * KEEP_REQUESTS:
            del self.server.requests[:-KEEP_REQUESTS]
        if mode is JudgeMode.ERRORS:
            return error_reply(500, content="soak: the judge is down")
        if mode is JudgeMode.HANGS:
            return Reply(content=REASON, delay_s=HANG_S)
        # The structured step asks for JSON (response_format); the reason step for text.
        return Reply(content=json.dumps(VERDICTS) if body.get("response_format") else REASON)
