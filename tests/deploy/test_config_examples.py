"""The config files in ``deploy/`` run as their comments say: ``tracescore.local.yaml`` as it is (no
broker, no ClickHouse server, no key), ``tracescore.example.yaml`` loads as a config and, with
``serve --no-kafka``, starts on one machine.

Each service runs as users run it: ``tracescore serve`` in its own process, on free loopback ports
(the only flags given besides the store), its environment cleared of ``TRACESCORE_*`` variables and
provider keys; spans come from the real OpenTelemetry SDK over OTLP/gRPC.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply
from tests.support.serve import PROJECT_ROOT, api_rows, free_port, stop, wait_healthy
from tracescore.ingest.cli import build_parser
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario
from tracescore.ingest.cli.serve_command import service_config
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ServiceConfig

DEPLOY = Path(PROJECT_ROOT) / "deploy"
LOCAL = DEPLOY / "tracescore.local.yaml"
EXAMPLE = DEPLOY / "tracescore.example.yaml"
WEATHER = SCENARIOS[0]  # "What's the weather in Paris?", one tool call, two model calls


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without tracescore's settings or provider keys, plus ``extra``."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TRACESCORE_") and not key.endswith("_API_KEY")
    }
    return {**kept, "PYTHONPATH": PROJECT_ROOT, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def start(cwd: Path, *args: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], int, int]:
    """``tracescore serve ARGS`` in ``cwd`` on free ports, its log in ``cwd/serve.log``; returns it, its
    gRPC and its HTTP port."""
    grpc_port, http_port = free_port(), free_port()
    with (cwd / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracescore.ingest.cli", "serve", *args]
            + ["--grpc-port", str(grpc_port), "--http-port", str(http_port)],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
        )
    return proc, grpc_port, http_port


def send_weather_run(grpc_port: int) -> str:
    """The weather agent's run through the SDK's OTLP/gRPC exporter; returns its trace id."""
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True, timeout=10)
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_id = emit_scenario(provider.get_tracer("tests.deploy"), WEATHER, time.time_ns())
    provider.shutdown()
    return trace_id


def scores_of(base: str, trace_id: str, expected: set[str], limit_s: float = 60) -> dict[str, float]:
    """The scores of the trace's run by scorer id, once every one of ``expected`` is there."""
    deadline = time.monotonic() + limit_s
    found: dict[str, float] = {}
    while not expected <= set(found) and time.monotonic() < deadline:
        time.sleep(0.2)
        found = {row["scorer_id"]: row["score"] for row in api_rows(f"{base}/api/scores?trace_id={trace_id}")}
    return found


def health(base: str, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{base}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# --- deploy/tracescore.local.yaml ------------------------------------------------------------------


def test_the_local_config_serves_and_scores_with_no_broker_and_no_key(tmp_path: Path) -> None:
    proc, grpc_port, http_port = start(tmp_path, "--config", str(LOCAL), env=clean_env())
    try:
        base = wait_healthy(proc, http_port)
        summary = (tmp_path / "serve.log").read_text()  # the file's store, in the startup summary
        store = f"chdb://{tmp_path / 'tracescore-data'}, database default"
        assert f"  store      {store} (embedded: one process at a time)" in summary
        status, ready = health(base, "/readyz")
        assert status == 200 and ready["status"] == "ok" and "kafka" not in ready
        trace_id = send_weather_run(grpc_port)
        names = [rule.scorer for rule in load_config(LOCAL, environ={}).scoring.rules]
        assert names == [
            "content-similarity",
            "textual-difference",
            "keyword-coverage",
            "check-no-tool-errors",
        ]
        rules = {
            "content-similarity",
            "textual-difference",
            "keyword-coverage",
            "check-no-tool-errors",
        }
        scores = scores_of(base, trace_id, rules)
        assert set(scores) == rules
        assert scores["check-no-tool-errors"] == 1.0  # the weather tool answered
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            stop(proc)


def uncommented(text: str) -> str:
    """The file with its commented-out YAML lines (``# key: ...``, ``# - ...``) switched on."""
    lines = []
    for line in text.splitlines():
        match = re.match(r"^(\s*)# (\s*(?:[\w.-]+:(?:\s|$)|- ).*)$", line)
        lines.append(match.group(1) + match.group(2) if match else line)
    return "\n".join(lines) + "\n"


async def test_the_local_config_with_its_judge_switched_on_asks_a_local_endpoint(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """Uncommenting the judge lines, as the file says, gives a valid config whose judge rule scores
    with the endpoint at ``api_base`` and the file's placeholder key (here the tests' local server)."""
    config = yaml.safe_load(uncommented(LOCAL.read_text()))
    assert config["scoring"]["judge"] == {
        "model": "openai/llama3.1",
        "api_base": "http://127.0.0.1:11434/v1",
        "api_key": "local",
    }
    assert config["scoring"]["rules"][-1] == {"scorer": "answer-relevancy", "sample_rate": 0.2}
    config["scoring"]["judge"]["api_base"] = llm_server.api_base
    config["scoring"]["rules"][-1]["sample_rate"] = 1.0  # this one run, for certain
    (tmp_path / "local.yaml").write_text(yaml.safe_dump(config))
    ServiceConfig.model_validate(config)
    answers = {
        "Statements": {"statements": ["It is rainy in Paris."]},
        "RelevancyResults": {"results": [{"result": "yes", "reason": "answers the question"}]},
    }

    def respond(body: dict[str, Any]) -> Reply:
        # a model litellm has no structured outputs for: JSON mode, the schema in the system prompt
        schema = re.search(r'"title": "(\w+)", "type": "object"\}$', body["messages"][0]["content"])
        return json_reply(answers[schema.group(1)]) if schema else text_reply("It answers the question.")

    llm_server.responder = respond
    proc, grpc_port, http_port = start(tmp_path, "--config", "local.yaml", env=clean_env())

    def serve_one_run() -> dict[str, float]:  # blocking: in a thread, while the judge server answers
        base = wait_healthy(proc, http_port)
        trace_id = send_weather_run(grpc_port)
        return scores_of(base, trace_id, {"answer-relevancy", "content-similarity"})

    try:
        scores = await asyncio.to_thread(serve_one_run)
        assert scores["answer-relevancy"] == 1.0
        assert {request.body["model"] for request in llm_server.chat_requests} == {"llama3.1"}
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            stop(proc)


# --- deploy/tracescore.example.yaml ----------------------------------------------------------------


def test_the_example_config_loads() -> None:
    config = load_config(EXAMPLE, environ={})
    assert config.kafka.enabled and config.kafka.bootstrap == "kafka:9092"
    assert config.scoring.judge is not None and config.scoring.judge.model == "openai/gpt-4o-mini"
    assert "answer-relevancy" in {rule.scorer for rule in config.scoring.rules}


def serve_config(*argv: str) -> ServiceConfig:
    return service_config(build_parser().parse_args(["serve", *argv]))


def test_no_kafka_switches_off_the_kafka_of_the_file_and_of_the_environment(monkeypatch: Any) -> None:
    monkeypatch.setenv("TRACESCORE_KAFKA_BOOTSTRAP", "broker:9092")
    monkeypatch.setenv("TRACESCORE_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")  # incomplete, and ignored
    kafka = serve_config("--config", str(EXAMPLE), "--no-kafka").kafka
    assert not kafka.enabled and kafka.bootstrap is None and kafka.security_protocol == "PLAINTEXT"
    assert serve_config("--config", str(LOCAL), "--no-kafka").scoring.rules  # the rest is the file's


def test_no_kafka_with_kafka_flags_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracescore.ingest.cli", "serve", "--no-kafka", "--kafka-topic", "otlp_spans"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert done.returncode == 2
    assert done.stderr == (
        "tracescore: error: --no-kafka turns Kafka off; drop the Kafka flags (--kafka-topic)\n"
    )


def test_the_example_config_starts_with_no_kafka_and_no_key(tmp_path: Path) -> None:
    """As the example's header says: ``--no-kafka --host 127.0.0.1``; the judge rules wait for a key,
    and the heuristic rules score."""
    header = EXAMPLE.read_text().split("\n\n", 1)[0]
    assert "tracescore serve --config deploy/tracescore.example.yaml --no-kafka --host 127.0.0.1" in header
    assert "OPENAI_API_KEY" in header
    env = clean_env(TRACESCORE_KAFKA_BOOTSTRAP="kafka:9092")  # switched off as well
    proc, grpc_port, http_port = start(
        tmp_path, "--config", str(EXAMPLE), "--no-kafka", "--host", "127.0.0.1", env=env
    )
    try:
        base = wait_healthy(proc, http_port)
        status, ready = health(base, "/readyz")
        assert status == 200 and ready["status"] == "ok" and "kafka" not in ready
        trace_id = send_weather_run(grpc_port)
        # content-similarity scores every run; tool-call-accuracy-code the weather agent's
        scores = scores_of(base, trace_id, {"content-similarity", "tool-call-accuracy-code"})
        assert scores["tool-call-accuracy-code"] == 1.0  # it called get_weather
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            stop(proc)
