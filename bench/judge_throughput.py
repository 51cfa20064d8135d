"""Judge calls per second at concurrency 256: tracescore's judge path against the floor any HTTP
client pays, both against the local judge that answers in 50 ms (``bench.judge_server``, a process of
its own).

Ours: toxicity-scorer runs (``Scorer.run``: two judge calls per run, the verdicts with a JSON-schema
``response_format`` and then the reason, through ``scoring.judge``'s client and litellm), 256 runs in
flight. Baseline: the same two request bodies per run posted with plain aiohttp (one session, a
connection pool of 256), each answer's JSON parsed, 256 runs in flight. The row is ours / baseline in
calls per second, medians of ``REPEATS`` alternating repeats of ``RUNS`` runs each.

``detail`` says where the gap is: the same calls through bare ``litellm.acompletion`` (our judge
client's share is ours / that; litellm's is that / aiohttp), each side's CPU time per call in this
process, and whether the server bounds the baseline -- the server's CPU share while the baseline
ran, and the baseline against a second server that answers at once (if the server were the limit,
removing its 50 ms would not change the rate, and its CPU share would be near one core).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.judge import CALLS_PER_RUN, LATENCY_S, REASON, VERDICTS, Sides, Timing
from bench.judge_server import JudgeServer
from bench.report import Metric

CONCURRENCY = 256
RUNS = 500  # 1,000 judge calls per repeat
REPEATS = 3


def server_cpu_s(server: JudgeServer) -> float | None:
    """The CPU seconds the server's process has used so far (None where /proc is not there)."""
    pid = server.pid
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, in ticks


async def _with_server_cpu(
    server: JudgeServer, side: Callable[[], Awaitable[Timing]]
) -> tuple[Timing, float | None]:
    """``side``'s timing and the share of one core the server used while it ran."""
    before = server_cpu_s(server)
    timing = await side()
    after = server_cpu_s(server)
    share = None if before is None or after is None else (after - before) / timing.wall_s
    return timing, share


async def measure(server: JudgeServer, instant: JudgeServer) -> dict[str, Any]:
    """Ours and aiohttp ``REPEATS`` times, alternating; then bare litellm, and aiohttp against the
    server that answers at once (``instant``), once each."""
    from tracescore.scoring.judge import close_clients

    sides = Sides(server.api_base)
    await sides.check()
    for warm in (sides.ours, sides.bare, sides.aiohttp):  # connections, caches, lazy imports
        await warm(CONCURRENCY, CONCURRENCY)
    times: dict[str, list[Timing]] = {"ours": [], "aiohttp": []}
    server_share: list[float | None] = []
    for repeat in range(REPEATS):
        for side in ("aiohttp", "ours") if repeat % 2 == 0 else ("ours", "aiohttp"):
            if side == "ours":
                times["ours"].append(await sides.ours(RUNS, CONCURRENCY))
                continue
            timing, share = await _with_server_cpu(server, lambda: sides.aiohttp(RUNS, CONCURRENCY))
            times["aiohttp"].append(timing)
            server_share.append(share)
    times["bare_litellm"] = [await sides.bare(RUNS, CONCURRENCY)]
    times["aiohttp_0ms_server"] = [await sides.aiohttp(RUNS, CONCURRENCY, api_base=instant.api_base)]
    await close_clients()
    return {"times": times, "server_cpu_share": server_share}


def summary(measured: dict[str, Any]) -> dict[str, Any]:
    """Calls per second (median and per repeat) and CPU microseconds per call, by side."""
    calls = RUNS * CALLS_PER_RUN
    times: dict[str, list[Timing]] = measured["times"]
    rates = {side: [calls / t.wall_s for t in values] for side, values in times.items()}
    median = {side: statistics.median(values) for side, values in rates.items()}
    cpu_us = {side: round(min(t.cpu_s for t in values) / calls * 1e6) for side, values in times.items()}
    shares = [round(share, 2) for share in measured["server_cpu_share"] if share is not None]
    return {
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY_S,
        "judge_calls_per_repeat": calls,
        "ideal_calls_per_s": round(CONCURRENCY / LATENCY_S),
        "median_calls_per_s": {side: round(value) for side, value in median.items()},
        "repeats_calls_per_s": {side: [round(value) for value in values] for side, values in rates.items()},
        # This process's CPU per call (the server's is its own): what each client pays per call.
        "cpu_us_per_call": cpu_us,
        "ours_vs_bare_litellm": round(median["ours"] / median["bare_litellm"], 3),
        "bare_litellm_vs_aiohttp": round(median["bare_litellm"] / median["aiohttp"], 3),
        "server_cpu_share_during_aiohttp": shares,
        "sides": {
            "ours": "toxicity scorer's run(): 2 judge calls through scoring.judge and litellm",
            "aiohttp": "the same 2 request bodies per run posted with plain aiohttp, JSON answers parsed",
            "bare_litellm": "the same 2 calls per run with litellm.acompletion",
            "aiohttp_0ms_server": "the aiohttp side against a server that answers at once",
        },
    }


def metrics() -> list[Metric]:
    server = JudgeServer(VERDICTS, REASON, LATENCY_S)
    instant = JudgeServer(VERDICTS, REASON, 0.0)
    server.start()
    instant.start()
    try:
        started = time.perf_counter()
        detail = summary(asyncio.run(measure(server, instant)))
        detail["bench_seconds"] = round(time.perf_counter() - started, 1)
    finally:
        server.close()
        instant.close()
    return [
        Metric(
            "judge_throughput",
            detail["median_calls_per_s"]["ours"],
            "calls/s",
            detail["median_calls_per_s"]["aiohttp"],
            ">= 0.5",
            baseline_label="bare aiohttp posting the same bodies, same concurrency",
            detail=detail,
        )
    ]


if __name__ == "__main__":
    for metric in metrics():
        print(metric)
