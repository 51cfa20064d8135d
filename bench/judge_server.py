"""A local OpenAI-compatible chat server for the judge benchmark: every request answered after a fixed
latency, in a process of its own.

litellm reaches it as model ``openai/<name>`` with ``api_base=server.api_base`` and any api key. The
benchmark measures our judge client and pipeline, so the server does as little as it can: a request
that asks for structured output (it carries a ``response_format``) gets ``structured``, any other
gets ``text``, each as a chat completion, ``latency_s`` after it arrived. It runs in a child process
(``python -m bench.judge_server``) so that its work never shares the interpreter, and the CPU time,
of the client being measured; ``JudgeServer`` starts and stops it.

    server = JudgeServer(structured='{"verdicts": []}', text="The score is 0.", latency_s=0.05)
    server.start()  # server.api_base is http://127.0.0.1:<port>/v1
    ...
    server.close()
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web

# Set before litellm is first imported: the benchmark must never fetch litellm's price list.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 30.0
# More pending connections than the clients' concurrency: none waits in the kernel's accept queue.
BACKLOG = 1024


class JudgeServer:
    """The server in a child process: ``start()`` waits until it listens, ``close()`` stops it."""

    def __init__(self, structured: str, text: str, latency_s: float = 0.05) -> None:
        self.structured = structured
        self.text = text
        self.latency_s = latency_s
        self.port = 0
        self._process: subprocess.Popen[str] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        args = ["--latency", str(self.latency_s), "--structured", self.structured, "--text", self.text]
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.judge_server", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,  # the server stops when this closes (also if we die)
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # the port, once it listens
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"the judge server did not start (it said {line!r})")
        self.port = int(line)

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _completions(structured: str, text: str) -> tuple[Iterator[int], dict[bool, tuple[bytes, bytes]]]:
    """Each answer's bytes around its id: the id is the only part that changes from reply to reply."""
    parts: dict[bool, tuple[bytes, bytes]] = {}
    for wants_json, content in ((True, structured), (False, text)):
        completion = {
            "id": "chatcmpl-ID",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "bench-judge",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
        before, after = json.dumps(completion).encode().split(b"ID", 1)
        parts[wants_json] = (before, after)
    return itertools.count(), parts


def application(structured: str, text: str, latency_s: float) -> web.Application:
    ids, parts = _completions(structured, text)

    async def chat(request: web.Request) -> web.Response:
        body = await request.read()
        await asyncio.sleep(latency_s)
        before, after = parts[b'"response_format"' in body]
        return web.Response(body=before + str(next(ids)).encode() + after, content_type="application/json")

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/chat/completions", chat)
    return app


async def serve(structured: str, text: str, latency_s: float) -> None:
    """Listen on a free loopback port, print it, and serve until stdin closes."""
    runner = web.AppRunner(application(structured, text, latency_s), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=BACKLOG)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # returns when the parent closes our stdin
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.judge_server")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before each answer")
    parser.add_argument("--structured", required=True, help="the answer to requests with a response_format")
    parser.add_argument("--text", required=True, help="the answer to any other request")
    args = parser.parse_args()
    asyncio.run(serve(args.structured, args.text, args.latency))


if __name__ == "__main__":
    main()
