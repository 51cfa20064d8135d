"""A team's own scorer in ``tracescore serve``: named ``module:factory`` in a rule, its options
validated like a built-in's, its scores written through the one validated path -- and a scorer that
returns a value outside its scale gets a ``failed`` decision and no score row.

Spans go from the OpenTelemetry SDK over OTLP/gRPC into a real ``tracescore serve`` process; the rows
are read back over the HTTP API and, after the process stopped, from the embedded store itself.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.serve import api_rows, free_port, start_serve, stop, tracescore, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_reads import ScoreResults

LENGTH = "tests.scoring.custom_scorers:create_answer_length_scorer"
OVERCONFIDENT = "tests.scoring.custom_scorers:create_overconfident_scorer"
PARIS = SCENARIOS[0]  # its answer: "The weather in Paris is currently rainy with a temperature of 57°F."


def _config(tmp_path: Path, rules: list[dict[str, object]]) -> Path:
    path = tmp_path / "tracescore.yaml"
    path.write_text(yaml.safe_dump({"scoring": {"rules": rules}, "assembly": {"idle_seconds": 0.2}}))
    return path


def test_serve_scores_with_a_scorer_named_module_colon_factory(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        [
            {"scorer": LENGTH, "options": {"targetWords": 24}},  # camelCase, as for built-ins
            {"scorer": OVERCONFIDENT},
        ],
    )
    grpc_port = free_port()
    proc, http_port = start_serve(tmp_path / "data", "--config", str(config), grpc_port=grpc_port)
    try:
        base = wait_healthy(proc, http_port)
        provider = TracerProvider(resource=Resource.create({"service.name": "custom-scorers"}))
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True))
        )
        trace_id = emit_scenario(provider.get_tracer("test"), PARIS, time.time_ns())
        provider.shutdown()
        deadline = time.monotonic() + 60
        rows: list[dict[str, object]] = []
        while not rows and time.monotonic() < deadline:
            time.sleep(0.2)
            rows = api_rows(f"{base}/api/scores?trace_id={trace_id}")
        assert stop(proc) == 0  # SIGTERM: flushes every decision before the store closes
    finally:
        if proc.poll() is None:
            proc.kill()
            stop(proc)

    # The answer has 12 words: 12 / 24 = 0.5, labelled "long enough" (not below half the target).
    assert [(r["scorer_id"], r["score"], r["label"]) for r in rows] == [("answer-length", 0.5, "long enough")]
    # Its declared version, then the hash of its options (targetWords) and the rest of its configuration.
    assert re.fullmatch(r"2\.1\.0\+[0-9a-f]{8}", str(rows[0]["scorer_version"]))

    async def stored() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        store = Store(str(tmp_path / "data"))
        await store.start()
        try:
            results = ScoreResults(store)
            return await results.trace_scores(trace_id), await results.trace_decisions(trace_id)
        finally:
            await store.shutdown()

    scores, decisions = asyncio.run(stored())
    assert [s["scorer_id"] for s in scores] == ["answer-length"]  # no row for the 1.7
    by_scorer = {d["scorer_id"]: d for d in decisions}
    assert by_scorer["answer-length"]["decision"] == "scored"
    failed = by_scorer["overconfident"]
    assert failed["decision"] == "failed"
    assert "returned 1.7, outside its scale [0, 1]" in str(failed["detail"])


def test_serve_refuses_a_custom_scorer_with_a_bad_option_or_reference(tmp_path: Path) -> None:
    bad_option = _config(tmp_path, [{"scorer": LENGTH, "options": {"target_words": 24, "colour": "red"}}])
    done = tracescore("serve", "--store", str(tmp_path / "a"), "--config", str(bad_option), timeout=60)
    assert done.returncode == 2
    assert f"scoring.rules[0] ({LENGTH})" in done.stderr and "no option 'colour'" in done.stderr

    bad_type = _config(tmp_path, [{"scorer": LENGTH, "options": {"target_words": "many"}}])
    done = tracescore("serve", "--store", str(tmp_path / "b"), "--config", str(bad_type), timeout=60)
    assert done.returncode == 2 and "invalid options" in done.stderr and "target_words" in done.stderr

    missing = _config(tmp_path, [{"scorer": "tests.scoring.no_such_module:create_it"}])
    done = tracescore("serve", "--store", str(tmp_path / "c"), "--config", str(missing), timeout=60)
    assert done.returncode == 2 and "cannot import 'tests.scoring.no_such_module'" in done.stderr
