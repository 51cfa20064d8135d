"""OTLP/HTTP clients that behave as exporters do, paced or flat out: each sends one export request at a
time and again after a 429 or 503 (after its Retry-After) or when no answer came (the service was
killed, a connection reset: backoff with jitter), and gives a request up on any other answer or after
its deadline. Every answer is recorded (``Answer``), and the trace ids of each request answered 200.

``tests.support.load.Load`` sends a fixed list as fast as it is taken; the soak needs traffic for
minutes at a steady rate, made as it is sent, which these do."""

from __future__ import annotations

import asyncio
import io
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

from tests.soak.agent_traces import Body, TraceFactory
from tests.soak.observations import NO_RESPONSE, Answer, Input

RETRIED = (429, 503)
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 8.0
REQUEST_DEADLINE_S = 300.0  # after this an exporter gives a request up (the soak's fills last a minute)
ATTEMPT_TIMEOUT_S = 60.0
NEWEST = 50


@dataclass
class Ledger:
    """What the clients sent and what was acknowledged, per input."""

    answers: list[Answer] = field(default_factory=list)
    sent: dict[Input, int] = field(default_factory=dict)
    acknowledged: dict[Input, set[str]] = field(default_factory=dict)
    newest: dict[Input, deque[str]] = field(default_factory=dict)  # the last acknowledged, in order

    def acked(self, source: Input) -> set[str]:
        return self.acknowledged.setdefault(source, set())


class Exporter:
    """Sends export requests to ``base`` until each is answered for good; records into ``ledger``."""

    def __init__(self, base: str, ledger: Ledger, stopping: asyncio.Event, seed: int = 0) -> None:
        self.base = base
        self.ledger = ledger
        self.stopping = stopping  # set: the request in hand is given up at its next wait
        self._rng = random.Random(f"tracescore-soak-backoff:{seed}")

    async def export(
        self, session: aiohttp.ClientSession, body: Body, source: Input, well_formed: bool = True
    ) -> int:
        """Send ``body`` until it is acknowledged or refused for good; its last status (NO_RESPONSE:
        given up without an answer)."""
        deadline = time.monotonic() + REQUEST_DEADLINE_S
        self.ledger.sent[source] = self.ledger.sent.get(source, 0) + len(body.trace_ids)
        backoff = BACKOFF_FIRST_S
        headers = {"Content-Type": body.content_type}
        while True:
            began = time.monotonic()
            status, retry_after = await self._attempt(session, body, headers)
            answered = time.monotonic()
            self.ledger.answers.append(
                Answer(answered, source, status, retry_after is not None, well_formed, answered - began)
            )
            if status == 200:
                self.ledger.acked(source).update(body.trace_ids)
                self.ledger.newest.setdefault(source, deque(maxlen=NEWEST)).extend(body.trace_ids)
                return status
            if status not in (*RETRIED, NO_RESPONSE):
                return status  # an exporter drops what it is told is bad
            if retry_after is not None:
                wait = _seconds(retry_after, backoff)
            else:
                wait = backoff * self._rng.uniform(0.5, 1.5)
                backoff = min(BACKOFF_MAX_S, backoff * 2)
            if time.monotonic() + wait > deadline or await _stopped(self.stopping, wait):
                return status

    async def _attempt(
        self, session: aiohttp.ClientSession, body: Body, headers: dict[str, str]
    ) -> tuple[int, str | None]:
        # A file-like body: aiohttp copies a large bytes body on the event loop (and says so).
        data: bytes | io.BytesIO = io.BytesIO(body.data) if len(body.data) > 1 << 20 else body.data
        try:
            async with session.post(f"{self.base}/v1/traces", data=data, headers=headers) as resp:
                await resp.read()
                return resp.status, resp.headers.get("Retry-After")
        except (aiohttp.ClientError, TimeoutError, OSError):
            return NO_RESPONSE, None


def _seconds(retry_after: str, otherwise: float) -> float:
    try:
        return max(0.0, float(retry_after))
    except ValueError:
        return otherwise


async def _stopped(stopping: asyncio.Event, wait_s: float) -> bool:
    """Waits ``wait_s``; True if ``stopping`` was set meanwhile."""
    try:
        await asyncio.wait_for(stopping.wait(), wait_s)
    except TimeoutError:
        return False
    return True


def session(connections: int = 0) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(total=ATTEMPT_TIMEOUT_S, sock_connect=5)
    return aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=connections))


async def paced(
    exporter: Exporter,
    factory: TraceFactory,
    traces_per_second: float,
    clients: int,
    until: Callable[[], bool],
    seed: int,
) -> None:
    """``clients`` exporters together sending ``traces_per_second``, one to three runs a request, until
    ``until()``. A client whose request is still being retried when its next one is due sends it once
    the first is done, without catching up on the ones it missed (an exporter's queue would drop them)."""
    mean_per_request = 2
    period = clients * mean_per_request / traces_per_second

    async def client(number: int) -> None:
        rng = random.Random(f"tracescore-soak-paced:{seed}:{number}")
        next_at = time.monotonic() + period * number / clients
        async with session(connections=2) as http:
            while not until():
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                if until():
                    return
                await exporter.export(http, factory.request(rng.randint(1, 3)), Input.HTTP)
                next_at = max(next_at + period, time.monotonic())

    await asyncio.gather(*(client(number) for number in range(clients)))


async def flood(
    exporter: Exporter, factory: TraceFactory, seconds: float, clients: int = 16, per_request: int = 100
) -> None:
    """``clients`` exporters sending ``per_request`` runs a request as fast as they are taken for
    ``seconds`` (the requests in hand then finish, as exporters' would)."""
    end = time.monotonic() + seconds

    async def client() -> None:
        async with session(connections=1) as http:
            while time.monotonic() < end and not exporter.stopping.is_set():
                await exporter.export(http, factory.request(per_request), Input.FLOOD)

    await asyncio.gather(*(client() for _ in range(clients)))


async def send_malformed(exporter: Exporter, bodies: list[Body], clients: int = 4) -> list[int]:
    """Each malformed body sent (as an exporter would: again after 429 or 503); the last answer to each."""
    todo = list(reversed(bodies))
    outcomes: list[int] = []

    async def client() -> None:
        async with session(connections=1) as http:
            while todo:
                status = await exporter.export(http, todo.pop(), Input.MALFORMED, well_formed=False)
                outcomes.append(status)

    await asyncio.gather(*(client() for _ in range(clients)))
    return outcomes
