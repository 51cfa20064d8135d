"""What the embedded store's disk holds under a steady load: ``tracescore serve`` (a subprocess, its
store in a temp directory) is sent agent traces at 60 and at 600 traces a second -- one trace per
request, and ten -- for ``WARMUP_SECONDS`` and then ``MEASURE_SECONDS``, while its store directory is
read every ``SAMPLE_SECONDS`` from outside (the engine is the service's: nothing else may open it).

Every insert writes one part, a directory of about a dozen files, in each table it fills; merges
replace parts with bigger ones, and the parts merged away are kept ``old_parts_lifetime`` before the
engine's cleanup deletes them (``ingest.store.free_space.MERGED_PARTS_SETTINGS``). A part is merged
away when a part of the same partition covers its block range at a higher level. Rows, each against
the store's live data (its active parts) at the window's end, measured in the same run:

- ``store_parts_<rate>``: part directories written per second, every table together (from the block
  numbers the engine gives each insert); the detail has each table's;
- ``store_kept_<rate>``: the most bytes of merged-away parts on disk at any sample of the window;
- ``store_per_hour_<rate>``: what the disk needs per hour of this load: the live data's growth (no
  ``--ttl-days``), plus the merged-away parts kept, once.

``python -m bench.store_disk`` prints these rows.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench import procs
from bench.report import Metric
from bench.senders import PROTOBUF, Traces

WARMUP_SECONDS = 20.0
MEASURE_SECONDS = 60.0
SAMPLE_SECONDS = 5.0
RATES = ((60, 1), (600, 10))  # traces per second, traces per request
MIB = 2**20
# Goals: a 512 MB disk with the default 256 MiB floor runs this load for a while (docs/operations/disk.md).
MAX_PARTS_PER_SECOND = 40
MAX_KEPT_BYTES = 64 * MIB
_PART = re.compile(r"^(?P<partition>.+)_(?P<low>\d+)_(?P<high>\d+)_(?P<level>\d+)(?:_\d+)?$")


@dataclass(frozen=True)
class Part:
    table: str
    partition: str
    low: int
    high: int
    level: int
    bytes: int


@dataclass
class Reading:
    """One look at the store directory."""

    at: float
    active_bytes: int = 0
    kept_bytes: int = 0
    kept_parts: int = 0
    inserts: dict[str, int] = field(default_factory=dict)  # table -> highest block number
    kept_by_table: dict[str, int] = field(default_factory=dict)  # table -> bytes of merged-away parts


def read_store(store: Path) -> Reading:
    """The store's parts by table, split into active and merged away (covered by a higher level)."""
    reading = Reading(time.monotonic())
    tables = store / "data" / "default"
    for table in sorted(os.listdir(tables)) if tables.is_dir() else []:
        parts = list(_parts(tables / table, table))
        reading.inserts[table] = max((part.high for part in parts), default=0)
        for part in parts:
            covered = any(
                other.partition == part.partition
                and other.low <= part.low
                and other.high >= part.high
                and other.level > part.level
                for other in parts
            )
            if covered:
                reading.kept_bytes += part.bytes
                reading.kept_parts += 1
                reading.kept_by_table[table] = reading.kept_by_table.get(table, 0) + part.bytes
            else:
                reading.active_bytes += part.bytes
    return reading


def _parts(directory: Path, table: str) -> list[Part]:
    found = []
    for entry in os.scandir(directory):
        match = _PART.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            size = sum(os.lstat(file.path).st_blocks * 512 for file in os.scandir(entry.path))
        except OSError:  # deleted meanwhile
            continue
        found.append(
            Part(table, match["partition"], int(match["low"]), int(match["high"]), int(match["level"]), size)
        )
    return found


async def paced_load(base: str, per_second: float, per_request: int, seconds: float) -> int:
    """Send ``per_second`` traces a second for ``seconds``, ``per_request`` to a request, each request
    at its time whether the last was answered or not (as many exporters do); returns how many traces
    were acknowledged."""
    source = Traces(per_request)
    loop = asyncio.get_running_loop()
    interval = per_request / per_second
    acknowledged = 0

    async def one(session: aiohttp.ClientSession, body: bytes) -> None:
        nonlocal acknowledged
        while True:
            async with session.post(f"{base}/v1/traces", data=body, headers=PROTOBUF) as resp:
                await resp.read()
                if resp.status == 200:
                    acknowledged += per_request
                    return
                if resp.status not in (429, 503):
                    raise RuntimeError(f"{base} answered {resp.status}")
                await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        started, sent, tasks = loop.time(), 0, set()
        while loop.time() < started + seconds:
            await asyncio.sleep(max(0.0, started + sent * interval - loop.time()))
            task = asyncio.create_task(one(session, source.next()))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            sent += 1
        await asyncio.gather(*tasks)
    return acknowledged


async def measure(per_second: int, per_request: int) -> list[Metric]:
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-disk-") as data:
        store = Path(data) / "store"
        http_port = procs.free_port()
        with (Path(data) / "serve.log").open("wb") as log:
            proc = procs.start(
                [sys.executable, "-m", "tracescore.ingest.cli", "serve", "--store", str(store),
                 "--http-port", str(http_port), "--grpc-port", str(procs.free_port())],
                log=log,
            )  # fmt: skip
            base = f"http://127.0.0.1:{http_port}"
            try:
                await procs.wait_http(f"{base}/readyz", proc)
                load = asyncio.create_task(
                    paced_load(base, per_second, per_request, WARMUP_SECONDS + MEASURE_SECONDS)
                )
                await asyncio.sleep(WARMUP_SECONDS)
                readings = [await asyncio.to_thread(read_store, store)]
                while not load.done():
                    await asyncio.sleep(SAMPLE_SECONDS)
                    readings.append(await asyncio.to_thread(read_store, store))
                acknowledged = await load
            finally:
                procs.stop(proc)
    return rows(per_second, per_request, readings, acknowledged)


def rows(per_second: int, per_request: int, readings: list[Reading], acknowledged: int) -> list[Metric]:
    first, last = readings[0], readings[-1]
    seconds = last.at - first.at
    per_table = {t: (n - first.inserts.get(t, 0)) / seconds for t, n in last.inserts.items() if n}
    parts_per_second = sum(per_table.values())
    fullest = max(readings, key=lambda reading: reading.kept_bytes)
    kept = fullest.kept_bytes
    growth = (last.active_bytes - first.active_bytes) / seconds * 3600
    load = f"{per_second} traces/s, {per_request} per request"
    live = f"live data at the end ({load})"
    detail = {
        "load": load,
        "acknowledged_traces": acknowledged,
        "seconds_measured": round(seconds, 1),
        "parts_per_second_by_table": {t: round(v, 2) for t, v in sorted(per_table.items())},
        "kept_parts_max": max(reading.kept_parts for reading in readings),
        "kept_bytes_by_table_at_most": dict(sorted(fullest.kept_by_table.items())),
        "active_bytes_end": last.active_bytes,
    }
    return [
        Metric(
            f"store_parts_{per_second}", parts_per_second, "parts/s", None,
            f"value <= {MAX_PARTS_PER_SECOND}", detail=detail,
        ),
        Metric(
            f"store_kept_{per_second}", kept, "bytes", last.active_bytes,
            f"value <= {MAX_KEPT_BYTES}", baseline_label=live, detail=detail,
        ),
        Metric(
            f"store_per_hour_{per_second}", growth + kept, "bytes/h", last.active_bytes, "",
            baseline_label=live, detail=detail,
        ),
    ]  # fmt: skip


def metrics() -> list[Metric]:
    found: list[Metric] = []
    for per_second, per_request in RATES:
        found.extend(asyncio.run(measure(per_second, per_request)))
    return found


if __name__ == "__main__":
    for metric in metrics():
        print(metric.name, f"{metric.value:,.1f}", metric.unit, metric.baseline, metric.detail)
