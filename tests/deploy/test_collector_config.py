"""``deploy/otel-collector.yaml`` configures what its comments claim, and its commented alternatives
are valid when switched on.

No collector binary runs here: the file is read as YAML and its settings are checked against the
exporters' configuration keys (the contrib distribution's kafkaexporter and clickhouseexporter
``config.go``) and against tracescore's own flag parser and config loader, so what the collector writes
is what ``tracescore serve`` reads. ``tests/e2e/test_rotel.py`` runs a real collector (rotel) through
Kafka into tracescore.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tracescore.ingest.cli import build_parser
from tracescore.ingest.cli.serve_command import service_config

COLLECTOR = Path(__file__).resolve().parents[2] / "deploy" / "otel-collector.yaml"
KAFKA = "kafka/tracescore"
OTLP = "otlp/tracescore"
# clickhouseexporter's Config (mapstructure keys), timeout/queue/retry settings included.
CLICKHOUSE_EXPORTER_KEYS = {
    "endpoint",
    "username",
    "password",
    "database",
    "connection_params",
    "logs_table_name",
    "traces_table_name",
    "metrics_tables",
    "ttl",
    "table_engine",
    "cluster_name",
    "create_schema",
    "async_insert",
    "timeout",
    "sending_queue",
    "retry_on_failure",
}
# The OTLP/gRPC exporter's settings used here (configgrpc.ClientConfig and the exporter helpers).
OTLP_EXPORTER_KEYS = {
    "endpoint",
    "tls",
    "headers",
    "compression",
    "timeout",
    "sending_queue",
    "retry_on_failure",
}


def config(text: str | None = None) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COLLECTOR.read_text() if text is None else text)
    return loaded


def uses_only_defined_components(conf: dict[str, Any]) -> None:
    for name, pipeline in conf["service"]["pipelines"].items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in (conf.get(kind) or {}), f"{name} uses {component}, not in {kind}"


def switched_on(text: str, keys: tuple[str, ...]) -> str:
    """``text`` with the commented-out blocks that start with one of ``keys`` uncommented: the key's
    line and the commented lines indented deeper below it."""
    lines, block_indent = [], None
    for line in text.splitlines():
        match = re.match(r"^(\s*)# (\s*)(.*)$", line)
        if match is None:
            block_indent = None
            lines.append(line)
            continue
        indent = len(match.group(1)) + len(match.group(2))
        if match.group(3) in keys:
            block_indent = indent
        elif block_indent is None or indent <= block_indent:
            block_indent = None
            lines.append(line)
            continue
        lines.append(" " * indent + match.group(3))
    return "\n".join(lines) + "\n"


def test_the_logs_pipeline_takes_otlp_through_batch_to_the_logs_topic() -> None:
    conf = config()
    pipelines = conf["service"]["pipelines"]
    assert set(pipelines) == {"traces", "logs"}, "the header claims traces and log records, nothing else"
    for signal, topic in (("traces", "otlp_spans"), ("logs", "otlp_logs")):
        assert pipelines[signal] == {"receivers": ["otlp"], "processors": ["batch"], "exporters": [KAFKA]}
        assert conf["exporters"][KAFKA][signal] == {"topic": topic, "encoding": "otlp_proto"}
    assert conf["exporters"][KAFKA]["partition_logs_by_trace_id"] is True
    assert set(conf["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}


def test_the_collector_writes_nothing_to_clickhouse_as_its_header_says() -> None:
    header = COLLECTOR.read_text().split("\nreceivers:", 1)[0]
    assert "The collector writes nothing to ClickHouse itself" in header
    conf = config()
    assert not any(name.split("/")[0] == "clickhouse" for name in conf["exporters"])
    used = {
        exporter for pipeline in conf["service"]["pipelines"].values() for exporter in pipeline["exporters"]
    }
    assert used == {KAFKA}


def test_tracescore_reads_the_topics_with_the_flags_the_file_names() -> None:
    flags = re.search(r"# tracescore: (--kafka-bootstrap .*)$", COLLECTOR.read_text(), re.MULTILINE)
    assert flags is not None
    args = build_parser().parse_args(["serve", *flags.group(1).split()])
    kafka = service_config(args).kafka
    exporter = config()["exporters"][KAFKA]
    assert kafka.enabled and kafka.bootstrap in exporter["brokers"]
    assert (kafka.topic, kafka.logs_topic) == (exporter["traces"]["topic"], exporter["logs"]["topic"])
    assert kafka.encoding == exporter["traces"]["encoding"] == exporter["logs"]["encoding"]


def test_without_kafka_both_pipelines_go_to_tracescores_otlp_receiver() -> None:
    """The header's alternative: [kafka/tracescore] replaced by [otlp/tracescore]."""
    text = COLLECTOR.read_text()
    assert "replace [kafka/tracescore] by\n# [otlp/tracescore]" in text
    conf = config(text.replace(f"exporters: [{KAFKA}]", f"exporters: [{OTLP}]"))
    uses_only_defined_components(conf)
    assert all(p["exporters"] == [OTLP] for p in conf["service"]["pipelines"].values())
    exporter = conf["exporters"][OTLP]
    assert set(exporter) <= OTLP_EXPORTER_KEYS
    assert exporter["endpoint"].endswith(":4317"), "tracescore's OTLP/gRPC port"


def test_the_commented_clickhouse_exporter_is_valid_when_switched_on() -> None:
    """Uncommented, the clickhouse exporter and the metrics pipeline form a valid config whose exporter
    takes only the metrics (tracescore already stores the spans and log records)."""
    conf = config(switched_on(COLLECTOR.read_text(), ("clickhouse:", "metrics:")))
    uses_only_defined_components(conf)
    exporter = conf["exporters"]["clickhouse"]
    assert set(exporter) <= CLICKHOUSE_EXPORTER_KEYS
    assert re.fullmatch(r"(tcp|http|https|clickhouse)://[\w.-]+:\d+", exporter["endpoint"])
    assert exporter["password"] == "${env:CLICKHOUSE_PASSWORD}"
    routes = {name: p["exporters"] for name, p in conf["service"]["pipelines"].items()}
    assert routes == {"traces": [KAFKA], "logs": [KAFKA], "metrics": ["clickhouse"]}
