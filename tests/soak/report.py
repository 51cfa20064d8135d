"""The soak's verdict as an operator reads it: one line per criterion (``PASS|FAIL  <criterion>:
<figure>``), then a summary (traces sent and acknowledged per input, the faults as they were made, the
restarts, answers that never came), and the same as JSON in the output directory."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.soak.criteria import FILL_GRACE_S, outside
from tests.soak.observations import NO_RESPONSE, Input, Life
from tests.soak.run import SoakResult

MIB = 2**20


def lines(result: SoakResult) -> list[str]:
    """The criteria, then the summary."""
    return [verdict.line() for verdict in result.verdicts] + ["", *summary(result)]


def origin(result: SoakResult) -> float:
    """Time 0 of the report: when the load started (before it, when serve was first started)."""
    if result.rig is not None:
        return result.rig.started_at
    lives = result.observations.lives
    return lives[0].started_at if lives else 0.0


def summary(result: SoakResult) -> list[str]:
    obs = result.observations
    zero = origin(result)
    out = [f"summary (seed {result.options.seed}, load {result.load_seconds:.0f} s; times from its start):"]
    for source in Input:
        if source is Input.MALFORMED:
            continue
        sent = obs.sent.get(source, 0)
        acked = len(obs.acknowledged.get(source, ()))
        out.append(f"  {source.value:<6} {sent:>9,} traces sent, {acked:>9,} acknowledged")
    out.append(
        f"  malformed: {len(obs.malformed_outcomes)} requests, {obs.kafka.malformed_produced} Kafka records"
    )
    statuses = answer_counts(result)
    out.append("  answers: " + "; ".join(f"{source}: {counts}" for source, counts in statuses.items()))
    silent = Counter(answer.source.value for answer in obs.answers if answer.status == NO_RESPONSE)
    out.append(f"  no response at all (refused, reset, timed out): {dict(silent) or 'none'}")
    out.append("  time to a 200: " + "; ".join(f"{k}: {v}" for k, v in answer_times(result).items()))
    out.append(f"  disk: {disk_summary(result, zero)}")
    if obs.store.footprint:
        out.append(f"  store on its disk at the end: {footprint(obs.store.footprint)}")
    out.append("  faults:")
    if result.rig is not None:
        for done in sorted(result.rig.performed, key=lambda p: p.began_s):
            out.append(f"    {done.began_s:7.1f}-{done.ended_s:7.1f} s  {done.kind.value:<12} {done.detail}")
    out.append(f"  serve lives ({len(obs.lives) - 1} restarts):")
    out += [f"    {describe(life, zero)}" for life in obs.lives]
    if result.settled is not None:
        out.append(f"  end: {result.settled.detail} after {result.settled.seconds:.0f} s")
    out.append(f"  judge calls: {result.judge_calls}")
    return out


def answer_counts(result: SoakResult) -> dict[str, str]:
    counts: dict[str, Counter[int]] = {}
    for answer in result.observations.answers:
        counts.setdefault(answer.source.value, Counter())[answer.status] += 1
    return {
        source: ", ".join(f"{n:,} x {status or 'none'}" for status, n in sorted(c.items()))
        for source, c in counts.items()
    }


def answer_times(result: SoakResult) -> dict[str, str]:
    """Per input, the median and the 99th percentile of the time a 200 took."""
    took: dict[str, list[float]] = {}
    for answer in result.observations.answers:
        if answer.status == 200:
            took.setdefault(answer.source.value, []).append(answer.took_s)
    shown = {}
    for source, times in took.items():
        times.sort()
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        shown[source] = f"median {times[len(times) // 2]:.2f} s, p99 {p99:.2f} s"
    return shown


def disk_summary(result: SoakResult, zero: float) -> str:
    obs = result.observations
    if not obs.disk_samples:
        return "no samples"
    at, lowest = min(obs.disk_samples, key=lambda sample: sample[1])
    text = f"lowest free {lowest / MIB:.0f} MiB at {at - zero:.0f} s, floor {obs.floor_bytes / MIB:.0f} MiB"
    keep = outside(obs.fill_windows, FILL_GRACE_S)
    under = [at for at, free in obs.disk_samples if free <= obs.floor_bytes and keep(at)]
    if under:
        text += f"; at or under the floor outside the fills from {under[0] - zero:.0f} s"
    return text


def footprint(measured: dict[str, Any]) -> str:
    """``230 MiB allocated: otel_traces 120 MiB in 40 parts (+ 30 MiB in 12 merged away), ...``"""
    tables: dict[str, dict[bool, tuple[int, int]]] = {}
    for part in measured.get("parts", []):
        tables.setdefault(part["table"], {})[part["active"]] = (part["parts"], part["bytes"])
    shown = []
    for table, by_state in sorted(tables.items(), key=lambda item: -sum(b for _, b in item[1].values())):
        parts, size = by_state.get(True, (0, 0))
        text = f"{table} {size / MIB:.0f} MiB in {parts} parts"
        if False in by_state:
            old_parts, old_size = by_state[False]
            text += f" (+ {old_size / MIB:.0f} MiB in {old_parts} merged away)"
        shown.append(text)
    return f"{measured.get('allocated_bytes', 0) / MIB:.0f} MiB allocated: " + ", ".join(shown[:5])


def disk_timeline(result: SoakResult, zero: float, every_s: float = 10.0) -> list[list[float]]:
    """The lowest free space (MiB) in each ``every_s`` (seconds from the load's start)."""
    lowest: dict[int, int] = {}
    for at, free in result.observations.disk_samples:
        bucket = int((at - zero) // every_s)
        lowest[bucket] = min(free, lowest.get(bucket, free))
    return [[bucket * every_s, round(free / MIB, 1)] for bucket, free in sorted(lowest.items())]


def describe(life: Life, origin: float) -> str:
    up = f"up after {life.up_at - life.started_at:.1f} s" if life.up_at is not None else "never up"
    end = f"ended by {life.ended_by.value}" if life.ended_by is not None else "running"
    if life.ended_at is not None:
        end += f" at {life.ended_at - origin:.1f} s"
    code = f", exit {life.exit_code}" if life.exit_code is not None else ""
    stop = f" ({life.stop_s:.1f} s after SIGTERM)" if life.stop_s is not None else ""
    peak = f", peak RssAnon {life.peak_rss_anon / MIB:.0f} MiB"
    return f"life {life.number}: started at {life.started_at - origin:.1f} s, {up}, {end}{code}{stop}{peak}"


def as_json(result: SoakResult) -> dict[str, Any]:
    obs = result.observations
    zero = origin(result)
    return {
        "passed": all(verdict.passed for verdict in result.verdicts),
        "seed": result.options.seed,
        "minutes": result.options.minutes,
        "load_seconds": round(result.load_seconds, 1),
        "criteria": [asdict(verdict) for verdict in result.verdicts],
        "schedule": [
            {"kind": f.kind.value, "at_s": f.at_s, "duration_s": f.duration_s} for f in result.schedule
        ],
        "performed": [
            {**asdict(done), "kind": done.kind.value} for done in (result.rig.performed if result.rig else [])
        ],
        "lives": [
            {
                **asdict(life),
                "ended_by": life.ended_by.value if life.ended_by else None,
                **{k: round(v - zero, 3) for k, v in _times(life).items()},
            }
            for life in obs.lives
        ],
        "sent": {source.value: count for source, count in obs.sent.items()},
        "acknowledged": {source.value: len(ids) for source, ids in obs.acknowledged.items()},
        "answers": answer_counts(result),
        "malformed_outcomes": dict(Counter(obs.malformed_outcomes)),
        "kafka": asdict(obs.kafka),
        "probes": len(obs.probes),
        "floor_bytes": obs.floor_bytes,
        "lowest_free_bytes": min((free for _, free in obs.disk_samples), default=None),
        "disk_free_mib_every_10s": disk_timeline(result, zero),
        "fills": [[round(w.start - zero, 1), round(w.end - zero, 1)] for w in obs.fill_windows],
        "answer_times": answer_times(result),
        "store_opened": obs.store.opened,
        "store_error": obs.store.error,
        "store_footprint": obs.store.footprint,
        "settled": asdict(result.settled) if result.settled else None,
        "judge_calls": result.judge_calls,
    }


def _times(life: Life) -> dict[str, float]:
    times = {"started_at": life.started_at, "up_at": life.up_at, "ended_at": life.ended_at}
    return {key: value for key, value in times.items() if value is not None}


def write(result: SoakResult, path: Path) -> Path:
    path.write_text(json.dumps(as_json(result), indent=2, default=str) + "\n")
    return path
