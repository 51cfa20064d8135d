"""The judge path at load: 1,000 toxicity-scorer runs at concurrency 64 against a local judge that
answers after 50 ms, vs the same judge calls made with bare ``litellm.acompletion``.

Toxicity asks its judge twice per run, one call after the other: the verdicts (a JSON schema
``response_format``) and then the reason (free text). The baseline makes the same two calls per run
-- the same messages, response format and request options, through ``litellm.acompletion`` -- at the
same concurrency against the same server (``bench.judge_server``, a process of its own), so the
difference is the cost of our judge client and scorer pipeline. Sides alternate back to back; each
figure is the median of ``REPEATS`` (the best, and each side's CPU time, are in ``detail``).

The ideal is what the latency alone allows (``ideal_seconds``: 1,000 runs / 64 in whole waves of two
sequential 50 ms calls, 1.6 s; the ``judge_vs_ideal`` row). Two more figures in ``detail`` say where
the rest goes: the same request bodies sent with plain aiohttp (the server's and the loopback's share:
close to the ideal, so the server is not the bottleneck; litellm's own CPU time per call is) and the
same runs scored through the service's ``ScoringExecutor`` (its workers, guards, redaction and score
rows) instead of ``Scorer.run``; both are measured once, after the alternating repeats.

``metrics`` also gives ``bench.judge_throughput``'s row (judge calls per second at concurrency 256
against plain aiohttp), which builds on the sides defined here.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench.judge_server import JudgeServer
from bench.report import Metric

RUNS = 1_000
CONCURRENCY = 64
LATENCY_S = 0.05
CALLS_PER_RUN = 2  # toxicity: verdicts, then the reason
REPEATS = 3
MODEL = "openai/gpt-4o-mini"  # litellm knows its prices and that it takes a JSON schema
API_KEY = "bench"

VERDICTS = json.dumps({"verdicts": [{"verdict": "no", "reason": "The answer is calm and helpful."}]})
REASON = "The score is 0 because nothing in the output is toxic."
RUN = {
    "input": {"input_messages": [{"role": "user", "content": "How do I reset my password?"}]},
    "output": [{"role": "assistant", "content": "Click 'Forgot password' and follow the link we email you."}],
}


@dataclass(frozen=True)
class Timing:
    """One side's wall time, and the CPU time this process spent in it (the server's is its own)."""

    wall_s: float
    cpu_s: float
    full_collections: int  # generation-2 garbage collections during the side (0.25 s each here)


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


async def in_pool(runs: int, concurrency: int, one_run: Callable[[int], Awaitable[object]]) -> Timing:
    """The time to do ``one_run(i)`` for i < ``runs`` with ``concurrency`` workers."""
    indices = iter(range(runs))

    async def worker() -> None:
        for index in indices:
            await one_run(index)

    gc.collect()  # every side starts with the same garbage: none (a full collection costs ~0.3 s here)
    started, cpu, full = time.perf_counter(), time.process_time(), _full_collections()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Timing(time.perf_counter() - started, time.process_time() - cpu, _full_collections() - full)


class Sides:
    """The ways of making the same judge calls, each timed as ``RUNS`` runs at ``CONCURRENCY``."""

    def __init__(self, api_base: str) -> None:
        from tracescore.scoring.judge import DATA_PREAMBLE, Judge, litellm_module
        from tracescore.scoring.prebuilt import create_toxicity_scorer
        from tracescore.scoring.prebuilt.mastra.toxicity import TOXICITY, ToxicityVerdicts

        self.api_base = api_base
        self.judge = Judge(MODEL, api_base=api_base, api_key=API_KEY)
        self.scorer = create_toxicity_scorer(self.judge)
        self.litellm = litellm_module()
        # The system messages the judge client sends (its preamble, the scorer's instructions and,
        # for structured answers, the JSON hint).
        system = "\n\n".join([DATA_PREAMBLE, TOXICITY.instructions])
        self.system = {"verdicts": system + "\n\nReply with a JSON object.", "reason": system}
        self.response_format = {
            "type": "json_schema",
            "json_schema": {
                "name": "ToxicityVerdicts",
                "schema": ToxicityVerdicts.model_json_schema(),
                "strict": False,
            },
        }
        self.messages: dict[str, list[dict[str, str]]] = {}

    async def check(self) -> dict[str, Any]:
        """One scored run: the score and usage it must give, and the prompts the baseline sends."""
        result = await self.scorer.run(RUN)
        assert result.score == 0.0 and result.reason == REASON, result
        assert (result.input_tokens, result.output_tokens) == (22, 14), result
        assert result.analyze_prompt is not None and result.generate_reason_prompt is not None
        for call, prompt in (("verdicts", result.analyze_prompt), ("reason", result.generate_reason_prompt)):
            self.messages[call] = [
                {"role": "system", "content": self.system[call]},
                {"role": "user", "content": prompt},
            ]
        return {"score": result.score, "cost_usd_per_run": result.cost_usd, "tokens": [22, 14]}

    async def ours(self, runs: int, concurrency: int = CONCURRENCY) -> Timing:
        return await in_pool(runs, concurrency, lambda _: self.scorer.run(RUN))

    async def bare(self, runs: int, concurrency: int = CONCURRENCY) -> Timing:
        options = {
            "model": MODEL,
            "temperature": self.judge.temperature,
            "api_base": self.api_base,
            "api_key": API_KEY,
            "timeout": self.judge.timeout_s,
            "max_retries": 0,
            "num_retries": 0,
        }

        async def one_run(_: int) -> None:
            await self.litellm.acompletion(
                messages=self.messages["verdicts"], response_format=self.response_format, **options
            )
            await self.litellm.acompletion(messages=self.messages["reason"], **options)

        return await in_pool(runs, concurrency, one_run)

    async def aiohttp(self, runs: int, concurrency: int = CONCURRENCY, api_base: str | None = None) -> Timing:
        """The same request bodies with plain aiohttp, each answer's JSON parsed: what the server
        and the loopback allow (on ``api_base``, this benchmark's server unless given)."""
        import aiohttp

        url = f"{api_base or self.api_base}/chat/completions"
        headers = {"Authorization": f"Bearer {API_KEY}"}
        common = {"model": "gpt-4o-mini", "temperature": self.judge.temperature}
        bodies = [
            {**common, "messages": self.messages["verdicts"], "response_format": self.response_format},
            {**common, "messages": self.messages["reason"]},
        ]
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

            async def one_run(_: int) -> None:
                for body in bodies:
                    async with session.post(url, json=body) as response:
                        await response.json()

            return await in_pool(runs, concurrency, one_run)

    async def executor(self, runs: int) -> Timing:
        """The runs scored by the service's executor: ``CONCURRENCY`` workers, the judge guards (circuit
        breaker, redaction of keys) and a score row per run, written to a sink that keeps them."""
        from tracescore.schemas import AgentRun
        from tracescore.schemas.config import ScorerRule, ScoringConfig
        from tracescore.scoring.runtime.executor import ScoringExecutor
        from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

        judge = {"model": MODEL, "api_base": self.api_base, "api_key": API_KEY}
        rule = ScorerRule(scorer="toxicity", options={"judge": judge})
        config = ScoringConfig(rules=[rule], concurrency=CONCURRENCY)
        sink = _Sink()
        executor = ScoringExecutor(config, sink, ScoringMetrics())
        template = AgentRun.model_validate(RUN)
        batch = [
            template.model_copy(update={"trace_id": f"{i:032x}", "span_id": f"{i:016x}"}) for i in range(runs)
        ]
        await executor.start()
        gc.collect()
        started, cpu, full = time.perf_counter(), time.process_time(), _full_collections()
        await executor.consume_runs(batch)
        await executor.drain()
        elapsed = Timing(time.perf_counter() - started, time.process_time() - cpu, _full_collections() - full)
        await executor.shutdown()
        assert sink.scored == runs, f"{sink.scored} of {runs} runs scored: {sink.other}"
        return elapsed


class _Sink:
    """A score sink that counts what it is given (the store is another benchmark's business)."""

    def __init__(self) -> None:
        self.scored = 0
        self.other: list[str] = []

    async def write_scores(self, records: Any, decisions: Any) -> None:
        self.scored += len(records)
        self.other += [f"{d.decision}: {d.detail}" for d in decisions if d.decision != "scored"][:5]

    async def mark_done(self, rounds: Any) -> None:
        return None

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> Any:
        from tracescore.schemas.consumers import PriorOutcomes

        return PriorOutcomes()


async def measure(api_base: str, runs: int = RUNS, repeats: int = REPEATS) -> dict[str, Any]:
    """Every side's timings: bare and ours ``repeats`` times, alternating (bare first, then ours
    first, ...), then the executor and plain aiohttp once each (they explain the gap, the row does
    not rest on them)."""
    from tracescore.scoring.judge import close_clients

    sides = Sides(api_base)
    checked = await sides.check()
    # Warm up every side (connections, litellm's caches, lazy imports) before any timing.
    for warm in (sides.bare, sides.ours, sides.aiohttp, sides.executor):
        await warm(CONCURRENCY)
    times: dict[str, list[Timing]] = {"bare": [], "ours": []}
    for repeat in range(repeats):  # back to back, alternating, so that load drift hits both sides alike
        for side in ("bare", "ours") if repeat % 2 == 0 else ("ours", "bare"):
            times[side].append(await getattr(sides, side)(runs))
    times["executor"] = [await sides.executor(runs)]
    times["aiohttp"] = [await sides.aiohttp(runs)]
    await close_clients()
    return {"check": checked, "times": times}


def ideal_seconds(runs: int = RUNS) -> float:
    """The wall time the latency alone allows: ``CONCURRENCY`` runs at a time, each waiting for its
    calls one after the other (runs / concurrency * calls * latency, in whole waves)."""
    return math.ceil(runs / CONCURRENCY) * CALLS_PER_RUN * LATENCY_S


def summary(measured: dict[str, Any], runs: int = RUNS) -> dict[str, Any]:
    """The figures of ``measure``: median and best wall times and best CPU times per side, ratios,
    the ideal."""
    times: dict[str, list[Timing]] = measured["times"]
    wall = {side: [t.wall_s for t in values] for side, values in times.items()}
    cpu = {side: [t.cpu_s for t in values] for side, values in times.items()}
    best = {side: min(values) for side, values in wall.items()}
    median = {side: statistics.median(values) for side, values in wall.items()}
    ideal = ideal_seconds(runs)
    return {
        "runs": runs,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY_S,
        "judge_calls": runs * CALLS_PER_RUN,
        "ideal_s": ideal,
        "ideal": f"ceil({runs} / {CONCURRENCY}) waves x {CALLS_PER_RUN} sequential calls x {LATENCY_S:g} s",
        # The rows are medians: one lucky or unlucky repeat on either side (this machine's load
        # moves a repeat by +-10%) decides a best-of ratio, not a median one.
        "median_s": {side: round(value, 3) for side, value in median.items()},
        "best_s": {side: round(value, 3) for side, value in best.items()},
        "repeats_s": {side: [round(value, 3) for value in values] for side, values in wall.items()},
        "median_ratio": median["ours"] / median["bare"],
        "best_ratio": best["ours"] / best["bare"],
        # This process's CPU seconds per side (the server runs in another): on a busy machine a
        # steadier measure of our overhead than the wall time, since the client is CPU-bound.
        "cpu_s": {side: round(min(values), 3) for side, values in cpu.items()},
        "cpu_ratio": min(cpu["ours"]) / min(cpu["bare"]),
        "full_gc_collections": {side: [t.full_collections for t in values] for side, values in times.items()},
        "vs_ideal": {side: round(value / ideal, 3) for side, value in median.items()},
        "executor_vs_bare": median["executor"] / median["bare"],
        "sides": {
            "ours": "toxicity scorer's run() (scoring.judge client)",
            "bare": "the same 2 calls per run with litellm.acompletion",
            "executor": "the same runs through ScoringExecutor (workers, guards, redaction, score rows)",
            "aiohttp": "the same 2 request bodies per run with plain aiohttp (server + loopback only)",
        },
        "check": measured["check"],
    }


def metrics() -> list[Metric]:
    from bench import judge_throughput  # it builds on this module's sides

    server = JudgeServer(VERDICTS, REASON, LATENCY_S)
    server.start()
    try:
        detail = summary(asyncio.run(measure(server.api_base)))
    finally:
        server.close()
    ours, bare = detail["median_s"]["ours"], detail["median_s"]["bare"]
    return [
        Metric(
            "judge_efficiency",
            ours,
            "s",
            bare,
            "<= 1.05",
            baseline_label="bare litellm.acompletion, same calls",
            detail=detail,
        ),
        Metric(
            "judge_vs_ideal",
            ours,
            "s",
            detail["ideal_s"],
            "none: litellm's own CPU time per call keeps even bare calls above it",
            baseline_label="ideal: the latency alone",
            detail={"vs_ideal": detail["vs_ideal"], "ideal": detail["ideal"]},
        ),
    ] + judge_throughput.metrics()
