"""Every fixture trace of every convention, through ``tracescore inspect`` and through the receivers,
gives the AgentRuns of its golden snapshot.

The snapshots (tests/ingest/golden/<fixture>.json) were reviewed by hand against the spans; each
convention's own test module checks the important fields with hand-written expectations too.
Regenerate a snapshot only on purpose, then review its diff: ``TRACESCORE_UPDATE_GOLDEN=1 pytest``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.support.fixture_files import OTLP_DIR
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.cli import main
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.http import HttpReceiver
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.ingest.store.span_sink import SpanSink
from tracescore.ingest.transform.run_builder import RunBuilder
from tracescore.schemas import AgentRun, TraceRound
from tracescore.schemas.config import AssemblyConfig, ReceiverConfig
from tracescore.schemas.trace_view import TraceView

GOLDEN_DIR = Path(__file__).parents[1] / "ingest" / "golden"
UPDATE_GOLDEN = os.environ.get("TRACESCORE_UPDATE_GOLDEN") == "1"
FIXTURES = sorted(p.name.removesuffix(".traces.json") for p in OTLP_DIR.glob("*.traces.json"))


def _logs_file(name: str) -> Path | None:
    path = OTLP_DIR / f"{name}.logs.json"
    return path if path.exists() else None


def _trace_ids(name: str) -> set[str]:
    document = json.loads((OTLP_DIR / f"{name}.traces.json").read_bytes())
    return {s["traceId"] for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}


def _parts(name: str) -> list[str]:
    """The fixtures to send for one fixture: a fragment of its convention's main trace (more spans
    of a trace that ``__main`` holds) is sent after that main trace, as it would arrive live."""
    main = name.split("__", 1)[0] + "__main"
    if name != main and (OTLP_DIR / f"{main}.traces.json").exists() and _trace_ids(name) & _trace_ids(main):
        return [main, name]
    return [name]


def _ordered(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(runs, key=lambda r: (r["trace_id"], r["start_time"] or "", r["span_id"]))


def _golden(name: str, actual: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = GOLDEN_DIR / f"{name}.json"
    if UPDATE_GOLDEN:
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert path.exists(), (
        f"no golden snapshot {path.name}: generate it with TRACESCORE_UPDATE_GOLDEN=1, review it"
    )
    return list(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", FIXTURES)
def test_inspect_gives_the_golden_runs(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = OTLP_DIR / f"{name}.traces.json"
    if len(parts := _parts(name)) > 1:
        merged = {
            "resourceSpans": [
                rs
                for part in parts
                for rs in json.loads((OTLP_DIR / f"{part}.traces.json").read_bytes())["resourceSpans"]
            ]
        }
        traces = tmp_path / f"{name}.traces.json"
        traces.write_text(json.dumps(merged))
    args = ["inspect", str(traces)]
    if logs := _logs_file(name):
        args += ["--logs", str(logs)]
    assert main(args) == 0
    runs = _ordered(json.loads(capsys.readouterr().out))
    assert runs, "the fixture gave no run"
    assert runs == _golden(name, runs)


class RunRecorder:
    """The last stage of the pipeline under test: keeps the runs the transform built."""

    def __init__(self) -> None:
        self.runs: list[AgentRun] = []

    async def consume_runs(
        self, runs: Sequence[AgentRun], round: TraceRound | None = None, trace: TraceView | None = None
    ) -> None:
        self.runs.extend(runs)


class Pipeline:
    def __init__(self, store: Store) -> None:
        self.metrics = Metrics()
        self.recorder = RunRecorder()
        self.assembler = TraceAssembler(
            AssemblyConfig(idle_seconds=0.1, max_wait_seconds=5),
            RunBuilder(self.recorder, self.metrics),
            self.metrics,
        )
        self.http = HttpReceiver(
            ReceiverConfig(http_port=0),
            SpanSink(store, self.assembler, self.metrics),
            self.metrics,
            scores=ScoreResults(store),
        )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pipeline(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pipeline]:
    store = Store(str(tmp_path_factory.mktemp("conventions") / "store"))
    await store.start()
    pipe = Pipeline(store)
    await pipe.assembler.start()
    await pipe.http.start()
    try:
        yield pipe
    finally:
        await pipe.http.shutdown()
        await pipe.assembler.shutdown()
        await store.shutdown()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name", FIXTURES)
async def test_receivers_give_the_golden_runs(name: str, pipeline: Pipeline) -> None:
    trace_ids = _trace_ids(name)
    pipeline.recorder.runs = [r for r in pipeline.recorder.runs if r.trace_id not in trace_ids]
    url = f"http://127.0.0.1:{pipeline.http.port}"
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession() as http:
        # Log records first: content that arrives before its spans must still reach the run.
        if logs := _logs_file(name):
            async with http.post(f"{url}/v1/logs", data=logs.read_bytes(), headers=headers) as resp:
                assert resp.status == 200, await resp.text()
        for part in _parts(name):
            body = (OTLP_DIR / f"{part}.traces.json").read_bytes()
            async with http.post(f"{url}/v1/traces", data=body, headers=headers) as resp:
                assert resp.status == 200, await resp.text()
    await pipeline.assembler.flush_all()
    runs = _ordered([r.to_json_dict() for r in pipeline.recorder.runs if r.trace_id in trace_ids])
    assert runs == _golden(name, runs)
