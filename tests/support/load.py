"""OTLP/HTTP clients that behave as exporters do, for load and failure tests against ``tracescore serve``:
each sends protobuf export requests in turn, again after 429 or 503 (honouring Retry-After, capped so
tests stay short), and gives a request up on any other answer or on a broken connection. Every answer
is kept with its time, and the trace ids of every acknowledged request."""

from __future__ import annotations

import asyncio
import time

import aiohttp

PROTOBUF = {"Content-Type": "application/x-protobuf"}


class Load:
    def __init__(
        self,
        base: str,
        requests: tuple[list[list[str]], list[bytes]],
        clients: int = 4,
        max_retry_after_s: float = 1.0,
    ) -> None:
        self.base = base
        self.todo = list(zip(*requests, strict=True))[::-1]
        self.clients = clients
        self.max_retry_after_s = max_retry_after_s
        self.acknowledged: list[str] = []
        self.answers: list[tuple[float, int, str | None]] = []  # (monotonic time, status, Retry-After)
        self.running = True

    async def client(self, session: aiohttp.ClientSession) -> None:
        while self.running and self.todo:
            ids, body = self.todo.pop()
            while self.running:
                try:
                    async with session.post(f"{self.base}/v1/traces", data=body, headers=PROTOBUF) as resp:
                        await resp.read()
                        status, retry_after = resp.status, resp.headers.get("Retry-After")
                except (aiohttp.ClientError, TimeoutError):
                    self.answers.append((time.monotonic(), 0, None))
                    break  # the service went away: this request was never acknowledged
                self.answers.append((time.monotonic(), status, retry_after))
                if status == 200:
                    self.acknowledged.extend(ids)
                    break
                if status not in (429, 503):
                    break  # an exporter drops the spans
                await asyncio.sleep(min(self.max_retry_after_s, float(retry_after or 1)))

    async def run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            await asyncio.gather(*(self.client(session) for _ in range(self.clients)))
