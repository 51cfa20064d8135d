"""Configuration: the example file loads, precedence is flag > environment > file > default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ENV_KEYS, ConfigError, ServiceConfig
from tracescore.schemas.receiver_config import DEFAULT_HEADER_TIMEOUT_SECONDS, DEFAULT_IDLE_TIMEOUT_SECONDS
from tracescore.schemas.store_config import default_store

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "tracescore.example.yaml"


def test_the_default_stores_are_in_the_users_data_directory_whatever_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert load_config(environ={}).store == str(tmp_path / "data" / "tracescore" / "store")
    assert default_store("demo") == str(tmp_path / "data" / "tracescore" / "demo")
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # ignored, as the XDG specification asks
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_store() == str(tmp_path / "home" / ".local" / "share" / "tracescore" / "store")
    # The environment and the file still choose it.
    assert load_config(environ={"TRACESCORE_STORE": "/srv/ts"}).store == "/srv/ts"


def test_example_config_file_loads_as_documented() -> None:
    config = load_config(EXAMPLE, environ={})
    assert config.store == "./tracescore-data"
    assert config.receiver.host == "0.0.0.0"
    assert (config.receiver.grpc_port, config.receiver.http_port) == (4317, 4318)
    assert config.kafka.enabled and config.kafka.topic == "otlp_spans"
    assert config.kafka.dlq_topic == "otlp_spans.dlq"
    assert config.kafka.security_protocol == "PLAINTEXT" and config.kafka.sasl_mechanism is None
    assert config.receiver.max_attributes_per_item == 1000 and not config.receiver.tls
    assert (config.receiver.header_timeout_seconds, config.receiver.idle_timeout_seconds) == (10, 60)
    assert config.assembly.idle_seconds == 2 and config.assembly.max_wait_seconds == 300
    assert [r.scorer for r in config.scoring.rules] == [
        "content-similarity",
        "textual-difference",
        "tool-call-accuracy-code",
        "answer-relevancy",
        "toxicity",
    ]
    assert config.scoring.judge is not None and config.scoring.judge.model == "openai/gpt-4o-mini"
    relevancy, toxicity = config.scoring.rules[3:]
    assert relevancy.budget is not None and relevancy.budget.max_calls_per_hour == 600
    assert relevancy.filter.trace_has and relevancy.filter.resource_attributes
    assert toxicity.target == "llm_call"
    assert config.scoring.budget is not None and config.scoring.budget.max_usd_per_day == 20
    assert config.scoring.redact.emails and config.scoring.redact.patterns
    assert config.scoring.rules[3].sample_rate == 0.1
    assert config.scoring.rules[1].sample_rate == 0.25
    assert config.scoring.rules[2].options == {"expected_tool": "get_weather"}
    assert config.scoring.rules[2].filter.agent_name == ["weather_agent"]


def test_defaults_without_file_or_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    config = load_config(environ={})
    assert config == ServiceConfig()
    assert config.store == str(tmp_path / ".local" / "share" / "tracescore" / "store")
    assert (config.receiver.grpc_port, config.receiver.http_port) == (4317, 4318)
    assert not config.kafka.enabled
    assert [r.scorer for r in config.scoring.rules] == ["content-similarity", "textual-difference"]


def test_flag_beats_environment_beats_file(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("store: from-file\nreceiver: {grpc_port: 1111, http_port: 2222}\n")
    env = {"TRACESCORE_STORE": "from-env", "TRACESCORE_GRPC_PORT": "3333"}
    config = load_config(file, overrides={"store": "from-flag"}, environ=env)
    assert config.store == "from-flag"
    assert config.receiver.grpc_port == 3333
    assert config.receiver.http_port == 2222


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("kafka: {bootstrap: 'h:9092'}\n", "both bootstrap and topic"),
        ("assembly: {idle_seconds: 10, max_wait_seconds: 5}\n", "must not exceed"),
        ("scoring: {rules: [{scorer: x, sample_rate: 1.5}]}\n", "less than or equal to 1"),
        ("recievers: {}\n", "bad.yaml:1: recievers: unknown key; did you mean 'receiver'\\?"),
    ],
)
def test_invalid_config_is_rejected_with_the_reason(tmp_path: Path, data: str, message: str) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(data)
    with pytest.raises(ConfigError, match=message):
        load_config(file, environ={})


def test_config_file_named_by_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("store: named-by-env\n")
    assert load_config(environ={"TRACESCORE_CONFIG": str(file)}).store == "named-by-env"


def test_the_judge_comes_from_file_and_environment(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text(
        "scoring:\n  judge: {model: openai/gpt-4o, api_base: 'http://judge:4000/v1', api_key: sk-file}\n"
    )
    config = load_config(file, environ={"TRACESCORE_JUDGE_MODEL": "anthropic/claude-sonnet-4-5"})
    judge = config.scoring.judge
    assert judge is not None
    assert judge.api_key is not None
    assert (judge.model, judge.api_base, judge.api_key.get_secret_value()) == (
        "anthropic/claude-sonnet-4-5",
        "http://judge:4000/v1",
        "sk-file",
    )
    assert (judge.timeout_s, judge.max_retries) == (30.0, 3)
    assert "sk-file" not in repr(config)  # a secret: never in logs or reprs
    only_env = load_config(environ={"TRACESCORE_JUDGE_MODEL": "openai/gpt-4o-mini"}).scoring.judge
    assert only_env is not None and only_env.model == "openai/gpt-4o-mini" and only_env.api_base is None
    assert load_config(environ={}).scoring.judge is None


def test_the_connection_limits_default_to_named_constants() -> None:
    receiver = load_config(environ={}).receiver
    assert (
        (receiver.header_timeout_seconds, receiver.idle_timeout_seconds)
        == (
            DEFAULT_HEADER_TIMEOUT_SECONDS,
            DEFAULT_IDLE_TIMEOUT_SECONDS,
        )
        == (10.0, 60.0)
    )
    assert receiver.body_timeout_seconds == 30.0
    # None: sized from the open-file limit when the receivers start (ingest.receivers.connections)
    assert receiver.max_connections is None and receiver.max_connections_per_client is None
    assert receiver.health_port is None  # the probes on the OTLP/HTTP port only


def test_the_connection_limits_come_from_the_environment() -> None:
    env = {
        "TRACESCORE_HEADER_TIMEOUT_SECONDS": "5",
        "TRACESCORE_IDLE_TIMEOUT_SECONDS": "30.5",
        "TRACESCORE_BODY_TIMEOUT_SECONDS": "20",
        "TRACESCORE_MAX_CONNECTIONS": "1000",
        "TRACESCORE_MAX_CONNECTIONS_PER_CLIENT": "100",
        "TRACESCORE_HEALTH_PORT": "13133",
    }
    receiver = load_config(environ=env).receiver
    assert (receiver.header_timeout_seconds, receiver.idle_timeout_seconds) == (5.0, 30.5)
    assert receiver.body_timeout_seconds == 20.0
    assert (receiver.max_connections, receiver.max_connections_per_client) == (1000, 100)
    assert receiver.health_port == 13133
    assert {var for var, key in ENV_KEYS.items() if key.startswith("receiver.")} >= set(env)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("receiver: {max_connections: 100, max_connections_per_client: 200}\n", "must not exceed"),
        (
            "receiver: {http_port: 4318, health_port: 4318}\n",
            "health_port must differ from receiver.http_port",
        ),
        ("receiver: {header_timeout_seconds: 0}\n", "greater than 0"),
        ("receiver: {idle_timeout_seconds: -1}\n", "greater than 0"),
    ],
)
def test_connection_limits_that_cannot_hold_are_rejected(tmp_path: Path, data: str, message: str) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(data)
    with pytest.raises(ConfigError, match=message):
        load_config(file, environ={})


def test_the_judge_key_is_read_from_its_file_and_a_bad_file_is_named_at_its_line(tmp_path: Path) -> None:
    key_file = tmp_path / "judge-key"
    key_file.write_text("sk-from-a-mounted-secret\n")
    file = tmp_path / "c.yaml"
    file.write_text(f"scoring:\n  judge:\n    model: openai/gpt-4o\n    api_key_file: {key_file}\n")
    judge = load_config(file, environ={}).scoring.judge
    assert judge is not None and judge.api_key is not None
    assert judge.api_key.get_secret_value() == "sk-from-a-mounted-secret"  # without the newline

    missing, empty = tmp_path / "missing", tmp_path / "empty"
    empty.write_text("\n")
    file.write_text(f"receiver: {{grpc_port: x}}\nscoring:\n  judge:\n    api_key_file: {missing}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(file, environ={})
    assert str(raised.value).splitlines()[1:] == [  # every error at once, each at its line
        f"  {file}:1: receiver.grpc_port: Input should be a valid integer, unable to parse string as an "
        "integer (got 'x')",
        f"  {file}:4: scoring.judge.api_key_file: {missing}: cannot read it (No such file or directory)",
    ]
    told = f"environment variable TRACESCORE_JUDGE_API_KEY_FILE: scoring.judge.api_key_file: {empty} is empty"
    with pytest.raises(ConfigError, match=re.escape(told)):
        load_config(environ={"TRACESCORE_JUDGE_API_KEY_FILE": str(empty)})
