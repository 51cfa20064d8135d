"""One soak, start to end: the broker, the judge, the tmpfs and ``tracescore serve`` on it, the prober
and the samplers; the load and the schedule's faults for the soak's minutes; then the service settles,
is stopped with SIGTERM, and the store is read. Returns what was observed (``SoakResult``); every
process it started is stopped on the way out, however it ends (Ctrl-C included)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.soak.agent_traces import TraceFactory
from tests.soak.criteria import Verdict, evaluate
from tests.soak.fault_actions import Rig, run_schedule
from tests.soak.http_exporters import Exporter, Ledger, paced
from tests.soak.judge_backend import JudgeBackend
from tests.soak.kafka_feed import (
    GROUP,
    TOPIC,
    KafkaFeed,
    acknowledged,
    behind,
    committed_offsets,
    create_topics,
    dead_letter_topic,
    records_in,
)
from tests.soak.observations import Input, KafkaOutcome, Observations, StoreState
from tests.soak.prober import Prober
from tests.soak.schedule import Fault, fault_schedule
from tests.soak.serve_supervisor import Ports, ServeSupervisor
from tests.soak.settling import Settled, health, settle
from tests.soak.store_reading import store_state
from tests.support.background import every
from tests.support.kafka import start_broker, stop_broker
from tests.support.serve import ENV, free_port
from tests.support.tmpfs import Tmpfs
from tracescore.schemas.scoring_config import DEFAULT_SCORERS
from tracescore.schemas.store_config import DEFAULT_STORE_MIN_FREE_BYTES

MIB = 2**20
DISK = "512m"
MEMORY_LIMIT = "768MiB"
MEMORY_LIMIT_BYTES = 768 * MIB
JUDGE_RULE = "sampled-judge"
JUDGE_SAMPLE_RATE = 0.2
JUDGE_TIMEOUT_S = 3.0
JUDGE_BREAKER_COOLDOWN_S = 10.0
RULES = (*DEFAULT_SCORERS, JUDGE_RULE)
HTTP_TRACES_PER_SECOND = 40.0
HTTP_CLIENTS = 10  # exporters: one request at a time each, as the SDK's batch processor sends
KAFKA_TRACES_PER_SECOND = 20.0
DISK_EVERY_S = 0.5
FINISH_REQUESTS_S = 60.0  # after the load stops, for the requests in hand to be answered


@dataclass(frozen=True)
class Options:
    minutes: float
    seed: int
    out: Path
    store_floor: str | None = None  # TRACESCORE_STORE_MIN_FREE_BYTES; None: the service's default


@dataclass
class SoakResult:
    options: Options
    schedule: list[Fault]
    rig: Rig | None
    observations: Observations
    verdicts: list[Verdict]
    settled: Settled | None
    load_seconds: float
    judge_calls: dict[str, int] = field(default_factory=dict)
    serve_log: Path | None = None


def config_file(path: Path, api_base: str) -> Path:
    """The default rules and one sampled judge rule (a short judge timeout: hangs are cut), a quick Kafka
    group join."""
    rules: list[dict[str, object]] = [{"scorer": scorer} for scorer in DEFAULT_SCORERS]
    # A cooldown shorter than the default 30 s: the open circuit probes the judge while it still hangs.
    breaker = {"cooldown_seconds": JUDGE_BREAKER_COOLDOWN_S}
    rules.append(
        {
            "name": JUDGE_RULE,
            "scorer": "toxicity",
            "sample_rate": JUDGE_SAMPLE_RATE,
            "circuit_breaker": breaker,
        }
    )
    judge = {
        "model": "openai/gpt-4o-mini",
        "api_base": api_base,
        "api_key": "soak-judge-key",
        "timeout_s": JUDGE_TIMEOUT_S,
        "max_retries": 1,
    }
    path.write_text(
        yaml.safe_dump({"kafka": {"session_timeout_ms": 6000}, "scoring": {"judge": judge, "rules": rules}})
    )
    return path


def floor_of(base: str, configured: int) -> int:
    """The floor the service says it keeps (``/healthz``), else the one it was given."""
    body = health(base)
    try:
        return int(body["store"]["disk"]["floor_bytes"]) if body else configured
    except (KeyError, TypeError, ValueError):
        return configured


def settle_limit_s(minutes: float) -> float:
    """How long the service may take to finish after the load stops: a quarter of the load's time, at
    least two minutes (a restart's recovery, the judge's circuit), at most ten."""
    return max(120.0, min(600.0, 0.25 * minutes * 60))


def parse_size(text: str) -> int:
    """``256MiB``, ``64mb``, ``1000000``: bytes."""
    units = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 10**3, "mb": 10**6, "gb": 10**9}
    lowered = text.strip().lower()
    for unit, factor in units.items():
        if lowered.endswith(unit):
            return int(float(lowered[: -len(unit)]) * factor)
    return int(lowered)


def say_now(line: str) -> None:
    """A progress line, at once (stdout may be a file or a pipe)."""
    print(line, flush=True)


async def soak(options: Options, say: Callable[[str], None] = say_now) -> SoakResult:
    options.out.mkdir(parents=True, exist_ok=True)
    schedule = fault_schedule(options.seed, options.minutes)
    env = {**ENV, "TRACESCORE_MEMORY_LIMIT": MEMORY_LIMIT}
    floor = DEFAULT_STORE_MIN_FREE_BYTES
    if options.store_floor is not None:
        env["TRACESCORE_STORE_MIN_FREE_BYTES"] = options.store_floor
        floor = parse_size(options.store_floor)
    ledger = Ledger()
    samples: list[tuple[float, int]] = []
    rig: Rig | None = None
    settled: Settled | None = None
    load_seconds = 0.0
    tasks: list[asyncio.Task[None]] = []
    async with contextlib.AsyncExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tracescore-soak-")))
        factory = await asyncio.to_thread(TraceFactory)
        broker_port = free_port()
        broker_log = stack.enter_context((options.out / "broker.log").open("wb"))
        stack.callback(stop_broker, start_broker(broker_port, log=broker_log))
        bootstrap = f"127.0.0.1:{broker_port}"
        await asyncio.to_thread(create_topics, bootstrap)
        judge = JudgeBackend()
        await judge.start()
        stack.push_async_callback(judge.close)
        config = config_file(options.out / "tracescore.yaml", judge.api_base)
        disk = stack.enter_context(Tmpfs(scratch / "disk", DISK))
        store_dir = disk.mountpoint / "store"
        ports = Ports(free_port(), free_port(), free_port())
        flags = ["--config", str(config), "--kafka-bootstrap", bootstrap, "--kafka-topic", TOPIC]
        flags += ["--kafka-group", GROUP]
        serve_log = options.out / "serve.log"
        supervisor = ServeSupervisor(disk, store_dir, flags, env, serve_log, ports)
        stack.callback(supervisor.abandon)
        prober = Prober({"otlp": f"{ports.base}/healthz", "lane": f"{ports.lane}/healthz"})
        stack.callback(prober.close)
        stack.enter_context(
            every(DISK_EVERY_S, lambda: samples.append((time.monotonic(), disk.free_bytes())))
        )
        stack.push_async_callback(_cancel, tasks)  # first on the way out: faults put back what they took
        kafka = KafkaFeed(bootstrap, factory, KAFKA_TRACES_PER_SECOND)
        stack.callback(kafka.stop)

        say(f"soak: {options.minutes:g} min, seed {options.seed}, {len(schedule)} faults")
        say(f"soak: output in {options.out}")
        if await supervisor.start():
            floor = await asyncio.to_thread(floor_of, ports.base, floor)
            tasks.append(asyncio.create_task(supervisor.watch()))
            stopping = asyncio.Event()
            exporter = Exporter(ports.base, ledger, stopping, options.seed)
            kafka.start()
            started = time.monotonic()
            end = started + options.minutes * 60
            rig = Rig(supervisor, disk, judge, exporter, factory, kafka, options.seed, started)

            def over() -> bool:
                return time.monotonic() >= end or supervisor.gave_up

            load = asyncio.create_task(
                paced(exporter, factory, HTTP_TRACES_PER_SECOND, HTTP_CLIENTS, over, options.seed)
            )
            faults = asyncio.create_task(run_schedule(rig, schedule))
            tasks += [load, faults]
            await _progress(rig, ledger, over, say)
            load_seconds = time.monotonic() - started
            await asyncio.to_thread(kafka.stop)
            await _finish(load, faults, stopping)
            say(f"soak: load stopped after {load_seconds:.0f} s; waiting for the service to finish")
            if not supervisor.gave_up:
                settled = await settle(
                    ports.base,
                    bootstrap,
                    kafka,
                    list(ledger.acknowledged.values()),
                    [list(newest) for newest in ledger.newest.values()],
                    len(RULES),
                    settle_limit_s(options.minutes),
                    options.seed,
                )
                say(f"soak: {settled.detail} ({settled.seconds:.0f} s)")
        await supervisor.terminate()
        kafka_outcome = await asyncio.to_thread(_kafka_outcome, bootstrap, kafka, ledger)
        store = (
            await asyncio.to_thread(store_state, disk, str(store_dir))
            if supervisor.lives
            else StoreState(False)
        )
        probes = list(prober.probes)
    observations = Observations(
        rules=RULES,
        acknowledged=ledger.acknowledged,
        sent={**ledger.sent, Input.KAFKA: kafka_outcome.produced},
        malformed_trace_ids=rig.malformed_trace_ids if rig else set(),
        malformed_outcomes=rig.malformed_outcomes if rig else [],
        answers=ledger.answers,
        probes=probes,
        lives=supervisor.lives,
        memory_limit_bytes=MEMORY_LIMIT_BYTES,
        disk_samples=samples,
        fill_windows=rig.fills if rig else [],
        floor_bytes=floor,
        store=store,
        kafka=kafka_outcome,
    )
    calls = {mode.value: count for mode, count in judge.calls.items()}
    return SoakResult(
        options, schedule, rig, observations, evaluate(observations), settled, load_seconds, calls, serve_log
    )


async def _progress(rig: Rig, ledger: Ledger, over: Callable[[], bool], say: Callable[[str], None]) -> None:
    """Until the load's time is over: each fault as it ends, and a line a minute."""
    told, next_line = 0, time.monotonic() + 60
    while not over():
        await asyncio.sleep(0.5)
        ended = sorted((p for p in rig.performed if p.ended_s), key=lambda p: p.ended_s)
        for done in ended[told:]:
            say(f"  [{done.began_s:6.1f} s] {done.kind.value}: {done.detail}")
        told = len(ended)
        if time.monotonic() >= next_line:
            next_line += 60
            acked = {source.value: len(ids) for source, ids in ledger.acknowledged.items()}
            on_kafka = len(rig.kafka.placed)
            say(f"  [{rig.since_start():6.1f} s] acknowledged so far {acked}, {on_kafka:,} on Kafka")


async def _finish(load: asyncio.Task[None], faults: asyncio.Task[None], stopping: asyncio.Event) -> None:
    """The paced clients stop taking new work; the requests in hand get FINISH_REQUESTS_S to be answered
    (then they are given up); faults still under way (the schedule ends them before the load stops) are
    cut short."""
    await asyncio.wait({load, faults}, timeout=FINISH_REQUESTS_S)
    stopping.set()
    await asyncio.wait({load}, timeout=5)
    for task in (load, faults):
        task.cancel()
    await asyncio.gather(load, faults, return_exceptions=True)


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _kafka_outcome(bootstrap: str, kafka: KafkaFeed, ledger: Ledger) -> KafkaOutcome:
    """The Kafka traces acknowledged (committed past), and what the dead-letter topic holds."""
    committed = committed_offsets(bootstrap)
    ledger.acknowledged[Input.KAFKA] = acknowledged(kafka.placed, committed)
    return KafkaOutcome(
        produced=len(kafka.placed),
        malformed_produced=kafka.malformed_placed,
        dead_lettered=records_in(bootstrap, dead_letter_topic()),
        committed_to_end=behind(kafka.ends, committed) == 0,
    )
