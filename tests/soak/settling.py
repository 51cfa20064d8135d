"""The end of the soak: after the load stops, waiting (bounded) until the service has finished what it
was given -- the Kafka group committed to the end of the topic, nothing held, queued or buffered
(``/healthz``'s backlog), recovery done, and a sample of acknowledged traces showing every rule's
decision -- so that what the store holds afterwards is what the service promised."""

from __future__ import annotations

import asyncio
import json
import random
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

from tests.soak.kafka_feed import KafkaFeed, acknowledged, behind, committed_offsets
from tests.support.serve import api_rows

QUIET_CHECKS = 3  # in a row, a second apart
SAMPLE = 20  # acknowledged traces checked over the API, the newest and as many at random


@dataclass
class Settled:
    settled: bool
    seconds: float
    detail: str


def health(base: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as resp:
            body: dict[str, Any] = json.loads(resp.read())
            return body
    except (OSError, ValueError):
        return None


def _backlog(body: dict[str, Any] | None) -> str:
    """What ``/healthz`` says is left, and why the store refuses writes when it does."""
    if body is None:
        return "/healthz did not answer"
    left = {key: value for key, value in body.get("backlog", {}).items() if value}
    text = f"backlog {left or 'empty'}"
    disk = body.get("store", {}).get("disk") or {}
    if isinstance(disk, dict) and disk.get("status") == "refusing":
        text += f"; store refusing writes: {disk.get('reason')}"
    return text


def idle(body: dict[str, Any] | None) -> bool:
    """Nothing held, queued or buffered, and no recovery under way."""
    if body is None:
        return False
    backlog = body.get("backlog", {})
    recovery = body.get("recovery", {})
    return (
        all(value == 0 for value in backlog.values())
        and recovery.get("state") != "recovering"
        and not recovery.get("more_in_store")
    )


def undecided(base: str, traces: list[str], rules: int) -> list[str]:
    """Of ``traces``, those the service does not show ``rules`` decisions of yet."""
    missing = []
    for trace in traces:
        try:
            rows = api_rows(f"{base}/api/decisions?trace_id={trace}", timeout=5)
        except (OSError, ValueError, AssertionError):  # not answered, or not the answer expected
            rows = []
        if len(rows) < rules:
            missing.append(trace)
    return missing


def sample(acked: list[set[str]], newest: list[list[str]], seed: int) -> list[str]:
    rng = random.Random(seed)
    pool = sorted(set().union(*acked))
    chosen = rng.sample(pool, min(SAMPLE, len(pool)))
    return chosen + [trace for ordered in newest for trace in ordered[-SAMPLE:]]


async def settle(
    base: str,
    bootstrap: str,
    kafka: KafkaFeed,
    http_acked: list[set[str]],
    http_newest: list[list[str]],
    rules: int,
    limit_s: float,
    seed: int,
) -> Settled:
    started = time.monotonic()
    placed = kafka.placed
    quiet, detail = 0, "not checked"
    while (elapsed := time.monotonic() - started) < limit_s:
        committed = await asyncio.to_thread(committed_offsets, bootstrap)
        lag = behind(kafka.ends, committed)
        body = await asyncio.to_thread(health, base)
        quiet = quiet + 1 if lag == 0 and idle(body) else 0
        detail = f"Kafka {lag:,} records behind; {_backlog(body)}"
        if quiet >= QUIET_CHECKS:
            kafka_acked = acknowledged(placed, committed)
            newest_kafka = sorted(kafka_acked, key=lambda trace: placed[trace][1])
            traces = sample([*http_acked, kafka_acked], [*http_newest, newest_kafka], seed)
            missing = await asyncio.to_thread(undecided, base, traces, rules)
            if not missing:
                return Settled(True, elapsed, f"settled: {len(traces)} sampled traces decided")
            detail = f"{len(missing)} of {len(traces)} sampled traces not yet decided (e.g. {missing[0]})"
            quiet = 0
        await asyncio.sleep(1)
    return Settled(False, time.monotonic() - started, f"not settled in {limit_s:.0f} s: {detail}")
