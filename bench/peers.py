"""Peers: the same OTLP/HTTP senders against Arize Phoenix and against ``tracescore serve``.

Phoenix (``PHOENIX_VERSION``, installed by ``make bench-peers`` into its own virtualenv
``bench/.peers-venv``) runs as ``phoenix serve`` with SQLite in a temp dir; tracescore as ``tracescore
serve`` on a temp chDB store with its defaults. Each on free loopback ports, one at a time, each
stopped before the next starts (and with the benchmark, however it ends). Two loads, one after the
other against the same instance, from ``bench/senders.py`` (3-span agent traces as OTLP/HTTP
protobuf, ``Retry-After`` honoured on 429 and 503):

- ``peer_phoenix``: 1 trace per request, 16 clients, 1,000 traces. Accepted traces/s, and the seconds
  from the first request until all 1,000 are queryable in Phoenix (the span count of its GraphQL API,
  ``recordCount`` over every project) or scored by tracescore (each trace decided by every default
  scorer, ``tracescore_scoring_decisions_total`` in ``/metrics``). value = ours, baseline = Phoenix's.
- ``peer_phoenix_batched``: 100 traces per request, 4 clients, 10,000 traces. Accepted traces/s, and
  traces queryable (Phoenix) or scored (ours) per second: the traces over the seconds from the first
  request until the last of them is.

Scored is more than queryable: a trace is scored ``assembly.idle_seconds`` (2 s) after its last span
at the earliest, and only once it is stored. Both sides are polled every ``POLL_SECONDS``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import aiohttp

from bench import procs
from bench.report import Metric
from bench.senders import SPANS_PER_TRACE, Sent, send
from tracescore.schemas.scoring_config import DEFAULT_SCORERS

PHOENIX_VERSION = "20.26.1"
PEERS_VENV = Path(__file__).resolve().parent / ".peers-venv"
PHOENIX = PEERS_VENV / "bin" / "phoenix"
SINGLE = (1_000, 1, 16)  # traces, traces per request, clients
BATCHED = (10_000, 100, 4)
POLL_SECONDS = 0.1
VISIBLE_LIMIT_SECONDS = 600.0
START_LIMIT_SECONDS = 180.0

Counter = Callable[[aiohttp.ClientSession], Awaitable[float]]


@dataclass
class Load:
    traces: int
    accepted_per_s: float  # traces acknowledged per second, first request to last answer
    visible_s: float  # first request until every trace is queryable (Phoenix) or scored (ours)
    retries: int

    @property
    def visible_per_s(self) -> float:
        return self.traces / self.visible_s


async def _count_until(session: aiohttp.ClientSession, count: Counter, target: float, since: float) -> float:
    """Seconds from ``since`` (loop time) until ``count`` reaches ``target``."""
    loop = asyncio.get_running_loop()
    while await count(session) < target:
        if loop.time() - since > VISIBLE_LIMIT_SECONDS:
            raise RuntimeError(f"not every trace was visible within {VISIBLE_LIMIT_SECONDS:.0f} s")
        await asyncio.sleep(POLL_SECONDS)
    return loop.time() - since


async def _load(url: str, count: Counter, per_trace: float, shape: tuple[int, int, int]) -> Load:
    """Send ``shape`` (traces, per request, clients) to ``url``; ``count`` grows by ``per_trace``
    with every trace that becomes visible."""
    traces, per_request, clients = shape
    async with aiohttp.ClientSession() as session:
        target = await count(session) + traces * per_trace
        loop = asyncio.get_running_loop()
        since = loop.time()
        sending = asyncio.create_task(send(url, traces, per_request, clients))
        visible_s = await _count_until(session, count, target, since)
        sent: Sent = await sending
    return Load(traces, sent.traces_per_second, visible_s, sent.retries)


async def _phoenix_spans(base: str, session: aiohttp.ClientSession) -> float:
    query = {"query": "query { projects { edges { node { recordCount } } } }"}
    async with session.post(f"{base}/graphql", json=query) as resp:
        body = await resp.json()
    if "errors" in body:
        raise RuntimeError(f"Phoenix's GraphQL API answered {body['errors']}")
    return float(sum(edge["node"]["recordCount"] for edge in body["data"]["projects"]["edges"]))


_DECIDED = re.compile(r"^tracescore_scoring_decisions_total\{[^}]*\} (\S+)$", re.M)


async def _tracescore_decisions(base: str, session: aiohttp.ClientSession) -> float:
    async with session.get(f"{base}/metrics") as resp:
        return sum(float(value) for value in _DECIDED.findall(await resp.text()))


def _run(
    args: list[str], health: str, base: str, count: Counter, per_trace: float, log: IO[bytes], **env: str
) -> list[Load]:
    proc = procs.start(args, log, env=env)
    try:

        async def both() -> list[Load]:
            await procs.wait_http(health, proc, START_LIMIT_SECONDS)
            return [await _load(f"{base}/v1/traces", count, per_trace, shape) for shape in (SINGLE, BATCHED)]

        return asyncio.run(both())
    except Exception as exc:
        raise RuntimeError(f"{exc}\n--- {args[0]}'s log ---\n{procs.tail(log)}") from exc
    finally:
        procs.stop(proc)


def phoenix(directory: Path) -> list[Load]:
    port = procs.free_port()
    base = f"http://127.0.0.1:{port}"

    async def spans(session: aiohttp.ClientSession) -> float:
        return await _phoenix_spans(base, session)

    with open(directory / "phoenix.log", "w+b") as log:
        return _run(
            [str(PHOENIX), "serve"],
            f"{base}/healthz",
            base,
            spans,
            SPANS_PER_TRACE,
            log,
            PYTHONPATH="",  # Phoenix's own environment, not this repository's packages
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(port),
            PHOENIX_GRPC_PORT=str(procs.free_port()),
            PHOENIX_WORKING_DIR=str(directory / "phoenix"),
            PHOENIX_SQL_DATABASE_URL=f"sqlite:///{directory / 'phoenix.db'}",
            PHOENIX_TELEMETRY_ENABLED="false",
            # The assistant connects to a docs server on the internet at startup; nothing here uses it.
            PHOENIX_DISABLE_AGENT_ASSISTANT="true",
        )


def tracescore(directory: Path) -> list[Load]:
    port = procs.free_port()
    base = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "tracescore.ingest.cli", "serve", "--store", str(directory / "store")]
    args += ["--grpc-port", str(procs.free_port()), "--http-port", str(port), "--no-kafka"]

    async def decisions(session: aiohttp.ClientSession) -> float:
        return await _tracescore_decisions(base, session)

    with open(directory / "tracescore.log", "w+b") as log:
        return _run(args, f"{base}/healthz", base, decisions, len(DEFAULT_SCORERS), log)


def installed_version() -> str | None:
    """The Phoenix version in ``bench/.peers-venv`` (None when it is not installed)."""
    if not PHOENIX.exists():
        return None
    done = subprocess.run(
        [str(PEERS_VENV / "bin" / "python"), "-c", "import phoenix; print(phoenix.__version__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
        check=True,
    )
    return done.stdout.strip()


def metrics() -> list[Metric]:
    version = installed_version()
    if version is None:
        print(f"peers: no Phoenix in {PEERS_VENV}: run `make bench-peers`", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-peers-") as directory:
        theirs = phoenix(Path(directory))
        ours = tracescore(Path(directory))
    return rows(f"Arize Phoenix {version}", ours, theirs)


def rows(name: str, ours: list[Load], theirs: list[Load]) -> list[Metric]:
    (single, batched), (peer_single, peer_batched) = ours, theirs

    def detail(mine: Load, peer: Load) -> dict[str, Any]:
        return {
            "tracescore_accepted_traces_per_s": round(mine.accepted_per_s, 1),
            "phoenix_accepted_traces_per_s": round(peer.accepted_per_s, 1),
            "tracescore_seconds_to_all_scored": round(mine.visible_s, 2),
            "phoenix_seconds_to_all_queryable": round(peer.visible_s, 2),
            "tracescore_scored_traces_per_s": round(mine.visible_per_s, 1),
            "phoenix_queryable_traces_per_s": round(peer.visible_per_s, 1),
            "tracescore_retries": mine.retries,
            "phoenix_retries": peer.retries,
        }

    return [
        Metric(
            "peer_phoenix",
            single.visible_s,
            "s",
            peer_single.visible_s,
            "<= 1.0",
            baseline_label=f"{name}: s until all {peer_single.traces:,} queryable",
            peer={"name": name, "value": round(peer_single.visible_s, 2), "unit": "s to all queryable"},
            detail={"load": "1 trace/request, 16 clients, 1,000 traces", **detail(single, peer_single)},
        ),
        Metric(
            "peer_phoenix_batched",
            batched.visible_per_s,
            "traces/s",
            peer_batched.visible_per_s,
            ">= 1.0",
            baseline_label=f"{name}: traces queryable/s",
            peer={"name": name, "value": round(peer_batched.visible_per_s, 1), "unit": "traces queryable/s"},
            detail={"load": "100 traces/request, 4 clients, 10,000 traces", **detail(batched, peer_batched)},
        ),
    ]


def main() -> None:
    """``python -m bench.peers [phoenix|tracescore]``: both (the rows), or one side's loads."""
    side = sys.argv[1] if len(sys.argv) > 1 else None
    if side is None:
        for metric in metrics():
            print(json.dumps({"name": metric.name, **metric.as_json()}))
        return
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-peers-") as directory:
        loads = {"phoenix": phoenix, "tracescore": tracescore}[side](Path(directory))
    for load in loads:
        print(json.dumps({**asdict(load), "visible_per_s": load.visible_per_s}))


if __name__ == "__main__":
    main()
