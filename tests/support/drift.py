"""Drift test material: synthetic score streams written to the real tables, and a local webhook
server that records what it is sent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from aiohttp import web

from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import DECISIONS_COLUMNS, SCORES_COLUMNS

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # on the hour: the window is one bucket


class Streams:
    """Synthetic score streams, written as score rows (and decision rows) of distinct spans."""

    def __init__(self, seed: int, now: datetime = NOW) -> None:
        self.rng = np.random.default_rng(seed)
        self.now = now
        self.window_start = now - timedelta(hours=1)
        self.baseline_start = self.window_start - timedelta(days=7)
        self.scores: list[list[Any]] = []
        self.decisions: list[list[Any]] = []

    def times(self, n: int, start: datetime, end: datetime) -> list[int]:
        offsets = np.sort(self.rng.uniform(0, (end - start).total_seconds(), n))
        base = int(start.timestamp()) * 1_000_000_000
        return [base + int(x * 1e9) for x in offsets]

    def add(
        self,
        scorer: str,
        values: Any,
        starts: list[int],
        service: str = "svc",
        agent: str = "agent",
        *,
        version: str = "1",
        written: datetime | None = None,
    ) -> None:
        """Score rows of ``scorer`` at ``starts``, of scorer ``version``, written at ``written``
        (default: ``now``)."""
        created = int((written or self.now).timestamp()) * 1_000_000_000
        for value, start in zip(values, starts, strict=True):
            n = len(self.scores) + len(self.decisions)
            trace, span = f"{n:032x}", f"{n:016x}"
            self.scores.append([
                f"id{n}", created, trace, span, scorer, version, float(value), "", "", "{}", "", 0, 0, 0.0,
                0.0, 1.0, "live", agent, service, start, created, "",
            ])  # fmt: skip

    def add_decisions(self, scorer: str, failed: Any, starts: list[int], service: str = "svc") -> None:
        created = int(self.now.timestamp()) * 1_000_000_000
        for is_failed, start in zip(failed, starts, strict=True):
            n = len(self.scores) + len(self.decisions)
            kind = "failed" if is_failed else "scored"
            self.decisions.append([
                created, f"{n:032x}", f"{n:016x}", scorer, kind, "", 1.0, "live", "agent", service, start,
                created, "",
            ])  # fmt: skip

    def normal(
        self, scorer: str, n_baseline: int, n_window: int, mean: float, window_mean: float, sd: float = 0.1
    ) -> None:
        baseline = np.clip(self.rng.normal(mean, sd, n_baseline), 0, 1)
        window = np.clip(self.rng.normal(window_mean, sd, n_window), 0, 1)
        self.add(scorer, baseline, self.times(n_baseline, self.baseline_start, self.window_start))
        self.add(scorer, window, self.times(n_window, self.window_start, self.now))

    async def write(self, store: Store) -> None:
        assert len(SCORES_COLUMNS) == len(self.scores[0]) if self.scores else True
        for start in range(0, len(self.scores), 100_000):
            await store.insert("scores", self.scores[start : start + 100_000], SCORES_COLUMNS)
        if self.decisions:
            await store.insert("score_decisions", self.decisions, DECISIONS_COLUMNS)


class Hooks:
    """A local webhook server: every request's path and JSON body; ``fail[path]`` answers that many
    requests to ``path`` with 503 first."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.fail: dict[str, int] = {}
        self.reject: set[str] = set()
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append((request.path, await request.json()))
        if request.path in self.reject:
            return web.Response(status=400, text="bad body")
        if self.fail.get(request.path, 0) > 0:
            self.fail[request.path] -= 1
            return web.Response(status=503, text="busy")
        return web.Response(text="ok")

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.received if p == path]


@contextlib.asynccontextmanager
async def serving_hooks() -> AsyncIterator[Hooks]:
    server = Hooks()
    app = web.Application()
    app.router.add_post("/{name}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()
