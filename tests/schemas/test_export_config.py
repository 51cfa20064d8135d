"""The ``export`` section: off by default, from file and environment, contradictions refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ConfigError, ServiceConfig
from tracescore.schemas.export_config import OtlpExportConfig


def test_nothing_is_exported_by_default() -> None:
    otlp = load_config(environ={}).export.otlp
    assert otlp.endpoint is None and not otlp.enabled
    assert (otlp.protocol, otlp.max_queue_size, otlp.timeout_seconds) == ("grpc", 2048, 10.0)


def test_the_file_names_the_receiver_and_the_environment_overrides_it(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text(
        "export:\n"
        "  otlp:\n"
        "    endpoint: http://collector:4317\n"
        "    headers: {Authorization: Bearer from-the-file-123}\n"
        "    max_queue_size: 500\n"
    )
    from_file = load_config(file, environ={}).export.otlp
    assert from_file.endpoint == "http://collector:4317" and from_file.max_queue_size == 500
    assert from_file.max_export_batch_size == 500  # the default batch, cut to the queue
    assert from_file.headers["authorization"].get_secret_value() == "Bearer from-the-file-123"
    assert "from-the-file-123" not in repr(from_file)  # a secret: never in logs or reprs

    env = {
        "TRACESCORE_EXPORT_OTLP_ENDPOINT": "https://otlp.example.com/otlp",
        "TRACESCORE_EXPORT_OTLP_PROTOCOL": "http/protobuf",
        "TRACESCORE_EXPORT_OTLP_HEADERS": "X-Api-Key=k%3Dv,x-tenant = team-a",
    }
    otlp = load_config(file, environ=env).export.otlp
    assert (otlp.endpoint, otlp.protocol) == ("https://otlp.example.com/otlp", "http/protobuf")
    assert otlp.logs_url == "https://otlp.example.com/otlp/v1/logs"
    assert {key: value.get_secret_value() for key, value in otlp.headers.items()} == {
        "x-api-key": "k=v",
        "x-tenant": "team-a",
    }
    assert otlp.max_queue_size == 500  # the file's, where the environment says nothing


@pytest.mark.parametrize(
    ("endpoint", "insecure", "plaintext"),
    [
        ("http://collector:4317", None, True),
        ("https://collector:4317", None, False),
        ("collector:4317", None, False),  # no scheme: TLS, as the collector's otlp exporter does
        ("collector:4317", True, True),
    ],
)
def test_grpc_tls_follows_the_scheme(endpoint: str, insecure: bool | None, plaintext: bool) -> None:
    assert OtlpExportConfig(endpoint=endpoint, insecure=insecure).plaintext is plaintext


@pytest.mark.parametrize(
    ("endpoint", "logs_url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/logs"),
        ("http://collector:4318/", "http://collector:4318/v1/logs"),
        ("http://collector:4318/v1/logs", "http://collector:4318/v1/logs"),
        ("https://vendor.example.com/otlp", "https://vendor.example.com/otlp/v1/logs"),
    ],
)
def test_otlp_http_posts_to_v1_logs_under_the_endpoint(endpoint: str, logs_url: str) -> None:
    assert OtlpExportConfig(endpoint=endpoint, protocol="http/protobuf").logs_url == logs_url


@pytest.mark.parametrize(
    ("otlp", "message"),
    [
        ("{endpoint: 'ftp://c:21'}", "http:// or https://, not ftp://"),
        ("{endpoint: 'c:4318', protocol: http/protobuf}", "needs http:// or https://"),
        ("{endpoint: 'https://c:4317', insecure: true}", "https:// \\(TLS\\) but"),
        ("{endpoint: 'http://c:4317', insecure: false}", "use https:// for TLS"),
        ("{endpoint: 'http://c:4318', protocol: http/protobuf, insecure: true}", "insecure is for grpc"),
        ("{endpoint: 'http://c:4317', max_queue_size: 10, max_export_batch_size: 20}", "must not exceed"),
        ("{endpoint: 'http://c:4317', max_queue_size: 10000000}", "less than or equal to 100000"),
        ("{endpoint: 'http://c:4317', protocol: http/json}", "protocol"),
        ("{endpoint: 'http://c:4317', headers: 'no-equals-sign'}", "key=value pairs"),
        ("{endpiont: 'http://c:4317'}", "export.otlp.endpiont: unknown key; did you mean 'endpoint'\\?"),
    ],
)
def test_a_wrong_export_config_is_refused_with_the_reason(tmp_path: Path, otlp: str, message: str) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(f"export:\n  otlp: {otlp}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(file, environ={})


ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_export_examples_load() -> None:
    """The example of docs/watching-scores.md and the example file's (commented out) block are valid
    as written."""
    page = (ROOT / "docs" / "watching-scores.md").read_text()
    section = page.split("\n## Scores as OpenTelemetry events\n", 1)[1]
    (readme,) = re.findall(r"```yaml\n(.*?)```", section.split("\n## ", 1)[0], re.DOTALL)
    example = (ROOT / "deploy" / "tracescore.example.yaml").read_text()
    block = example[example.index("# export:") :].split("\n\n", 1)[0]
    uncommented = "\n".join(line.removeprefix("# ") for line in block.splitlines())
    for text in (readme, uncommented):
        otlp = ServiceConfig.model_validate(yaml.safe_load(text)).export.otlp
        assert otlp.enabled and otlp.endpoint == "http://otel-collector:4317" and otlp.plaintext
        assert otlp.model_fields_set == set(OtlpExportConfig.model_fields) - {"insecure"}  # all shown
