"""The container files hold together: the Dockerfile, ``.dockerignore``, ``deploy/docker-compose.yml``
and the files it mounts (the collector config, Prometheus' config, Grafana's provisioning).

No container engine runs here, so each file is parsed and checked against the others and against
tracescore's own config loader: what a replica reads must be what the collector writes, where the
replicas store must be the ClickHouse service with its credentials, what Grafana's provisioning asks
for must be set, and every file a service mounts must exist.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ServiceConfig

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
COLLECTOR_CONFIG = DEPLOY / "otel-collector.yaml"  # the example, which the compose file runs
DOCKERIGNORE = REPO / ".dockerignore"
PROVISIONING = DEPLOY / "grafana" / "provisioning"

# Grafana's provisioning folder in its image (GF_PATHS_PROVISIONING).
GRAFANA_PROVISIONING_PATH = "/etc/grafana/provisioning"
CLICKHOUSE_HTTP_PORT = 8123
CLICKHOUSE_PORTS = {"native": 9000, "http": CLICKHOUSE_HTTP_PORT}

# The kafka exporter's settings in the pinned collector (contrib 0.139), from its README: a key
# outside these is a typo the collector refuses to start with.
KAFKA_EXPORTER_KEYS = {
    "brokers",
    "protocol_version",
    "resolve_canonical_bootstrap_servers_only",
    "client_id",
    "conn_idle_timeout",
    "logs",
    "metrics",
    "traces",
    "topic_from_attribute",
    "include_metadata_keys",
    "partition_traces_by_id",
    "partition_metrics_by_resource_attributes",
    "partition_logs_by_resource_attributes",
    "partition_logs_by_trace_id",
    "tls",
    "auth",
    "metadata",
    "timeout",
    "retry_on_failure",
    "sending_queue",
    "producer",
}
KAFKA_SIGNAL_KEYS = {"topic", "encoding", "topic_from_metadata_key"}
KAFKA_EXPORTER_MAX_MESSAGE_BYTES = 1_000_000  # producer::max_message_bytes by default
KAFKA_MESSAGE_MAX_BYTES = 1_048_588  # the broker's message.max.bytes by default


# --- reading the files ---------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\})")


def interpolate(value: str, shell: dict[str, str]) -> str:
    """Compose's interpolation of one string: ``$$``, ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``."""

    def replace(match: re.Match[str]) -> str:
        name, operator, argument = match.group(1), match.group(2), match.group(3)
        if name is None:
            return "$"
        if operator in (":-", "-"):
            given = shell.get(name)
            return argument if given is None or (operator == ":-" and given == "") else given
        if name not in shell:
            raise KeyError(f"{name} has no default: `docker compose up` needs it set ({match.group(0)})")
        return shell[name]

    return _VARIABLE.sub(replace, value)


def _interpolated(node: Any, shell: dict[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, shell)
    if isinstance(node, list):
        return [_interpolated(item, shell) for item in node]
    if isinstance(node, dict):
        return {key: _interpolated(value, shell) for key, value in node.items()}
    return node


@cache
def compose() -> dict[str, Any]:
    """The compose file as `docker compose` reads it with nothing set in the shell."""
    data: dict[str, Any] = _interpolated(yaml.safe_load(COMPOSE.read_text()), {})
    return data


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment (mapping or ``KEY=VALUE`` list form) as strings."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) if "=" in item else (item, "") for item in raw)
    return {
        key: "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in raw.items()
    }


def tracescore_services() -> dict[str, dict[str, Any]]:
    """The services built from the repository's Dockerfile."""
    found = {}
    for name, service in services().items():
        build = service.get("build")
        if build is None:
            continue
        context = (DEPLOY / (build if isinstance(build, str) else build.get("context", "."))).resolve()
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
        if (context / dockerfile).resolve() == DOCKERFILE:
            found[name] = service
    return found


def bind_mounts(service: dict[str, Any]) -> list[tuple[Path, str]]:
    """(host path, container path) of each bind mount; named volumes are left out."""
    mounts = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            if volume.get("type") != "bind":
                continue
            source, target = volume["source"], volume["target"]
        else:
            source, target = volume.split(":")[:2]
            if not source.startswith((".", "/", "~")):
                continue  # a named volume
        mounts.append(((DEPLOY / source).resolve(), target))
    return mounts


def mounted_file(service: dict[str, Any], container_path: str) -> Path:
    """The host file a service sees at ``container_path`` (through a mount of it or of a parent)."""
    for source, target in sorted(bind_mounts(service), key=lambda mount: -len(mount[1])):
        if container_path == target or container_path.startswith(target.rstrip("/") + "/"):
            return source / container_path[len(target) :].lstrip("/")
    raise AssertionError(f"nothing is mounted at {container_path}")


def published(service: dict[str, Any]) -> set[tuple[int, int]]:
    """(host port, container port) pairs the service publishes."""
    pairs = set()
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            pairs.add((int(port["published"]), int(port["target"])))
            continue
        parts = str(port).split("/")[0].split(":")
        if len(parts) == 1:
            continue  # a container port on a random host port
        pairs.add((int(parts[-2]), int(parts[-1])))
    return pairs


def dependencies(service: dict[str, Any]) -> dict[str, str]:
    """Each service this one depends on, with the condition it waits for."""
    depends = service.get("depends_on") or {}
    if isinstance(depends, list):
        return dict.fromkeys(depends, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in depends.items()}


@cache
def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuation lines joined."""
    instructions, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        pending += " " + stripped.removesuffix("\\") if pending else stripped.removesuffix("\\")
        if not stripped.endswith("\\"):
            keyword, _, arguments = pending.strip().partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
            pending = ""
    return instructions


def instructions(keyword: str, stage: str = "final") -> list[str]:
    """The arguments of every ``keyword`` instruction of the final stage (or of all: ``stage="all"``)."""
    stages: list[list[tuple[str, str]]] = []
    for instruction in dockerfile():
        if instruction[0] == "FROM":
            stages.append([])
        stages[-1].append(instruction)
    chosen = stages[-1] if stage == "final" else [item for part in stages for item in part]
    return [arguments for name, arguments in chosen if name == keyword]


def exec_form(arguments: str) -> list[str]:
    """The argument list of an exec-form (JSON array) instruction."""
    parsed = yaml.safe_load(arguments)
    assert isinstance(parsed, list), f"not in exec form: {arguments}"
    return [str(item) for item in parsed]


def image_environment() -> dict[str, str]:
    """What the final stage's ENV instructions set (``KEY=VALUE`` form)."""
    env: dict[str, str] = {}
    for arguments in instructions("ENV"):
        for item in shlex.split(arguments):
            key, _, value = item.partition("=")
            env[key] = value
    return env


def replica_config(service: dict[str, Any]) -> ServiceConfig:
    """What `tracescore serve` in this service runs with: the image's ENV under the service's environment."""
    env = {**image_environment(), **environment(service)}
    path = mounted_file(service, env["TRACESCORE_CONFIG"]) if env.get("TRACESCORE_CONFIG") else None
    return load_config(path, environ=env)


def collector() -> dict[str, Any]:
    found: dict[str, Any] = services()["otel-collector"]
    return found


def collector_config_path() -> Path:
    """The config file the collector service runs with (its --config flag, through its mounts)."""
    command = collector().get("command") or []
    command = shlex.split(command) if isinstance(command, str) else command
    flags = [item.split("=", 1)[1] for item in command if item.startswith("--config=")]
    flags += [command[i + 1] for i, item in enumerate(command[:-1]) if item == "--config"]
    assert len(flags) == 1, f"the collector names one config file: {command}"
    return mounted_file(collector(), flags[0])


def collector_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(collector_config_path().read_text())
    return config


def kafka_exporter(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The kafka exporter of the traces pipeline (the one tracescore reads)."""
    names = [
        name
        for name in config["service"]["pipelines"]["traces"]["exporters"]
        if name.split("/")[0] == "kafka"
    ]
    assert len(names) == 1, f"the traces pipeline has one kafka exporter: {names}"
    return names[0], config["exporters"][names[0]]


# --- the compose file ----------------------------------------------------------------------------


def test_the_stack_has_every_service() -> None:
    for name in ("kafka", "clickhouse", "otel-collector", "grafana", "prometheus"):
        assert name in services(), name
    assert len(tracescore_services()) >= 2, "two tracescore replicas built from the repository's Dockerfile"


def test_every_variable_has_a_default_and_every_image_a_pinned_tag() -> None:
    compose()  # raises KeyError for a ${VAR} without a default
    for name, service in services().items():
        if "build" in service:
            continue
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, f"{name}: {image} has no tag"
        assert tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned"


def test_replicas_load_as_tracescore_configs_with_one_group_and_distinct_ids() -> None:
    configs = {name: replica_config(service) for name, service in tracescore_services().items()}
    assert all(config.kafka.enabled for config in configs.values())
    assert len({config.kafka.group for config in configs.values()}) == 1, "one consumer group"
    ids = [config.replica.id for config in configs.values()]
    assert None not in ids and len(set(ids)) == len(ids), f"stable, distinct replica ids: {ids}"


def test_replicas_read_the_topics_the_collector_writes() -> None:
    _, exporter = kafka_exporter(collector_config())
    kafka_env = environment(services()["kafka"])
    advertised = {
        urlsplit(listener).netloc for listener in kafka_env["KAFKA_ADVERTISED_LISTENERS"].split(",")
    }
    assert set(exporter["brokers"]) <= advertised, "the collector writes to the broker's advertised listener"
    for name, service in tracescore_services().items():
        config = replica_config(service).kafka
        assert set(str(config.bootstrap).split(",")) <= advertised, name
        assert config.topic == exporter["traces"]["topic"], name
        assert config.logs_topic == exporter["logs"]["topic"], name
        assert exporter["traces"]["encoding"] == exporter["logs"]["encoding"] == config.encoding, name


def test_the_broker_and_the_replicas_take_the_largest_record_the_collector_writes() -> None:
    _, exporter = kafka_exporter(collector_config())
    largest = int((exporter.get("producer") or {}).get("max_message_bytes", KAFKA_EXPORTER_MAX_MESSAGE_BYTES))
    broker = int(environment(services()["kafka"]).get("KAFKA_MESSAGE_MAX_BYTES", KAFKA_MESSAGE_MAX_BYTES))
    assert largest <= broker, "the broker refuses records the collector writes"
    for name, service in tracescore_services().items():
        assert largest <= replica_config(service).receiver.max_request_bytes, f"{name} dead-letters them"


def test_replicas_store_in_the_clickhouse_service_with_its_credentials() -> None:
    clickhouse_env = environment(services()["clickhouse"])
    for name, service in tracescore_services().items():
        config = replica_config(service)
        dsn = urlsplit(config.store)
        assert dsn.scheme == "http" and dsn.hostname == "clickhouse", f"{name}: {config.store}"
        assert (dsn.port or CLICKHOUSE_HTTP_PORT) == CLICKHOUSE_HTTP_PORT, name
        user = dsn.username or config.store_user
        password = dsn.password or (
            config.store_password.get_secret_value() if config.store_password else None
        )
        assert (user, password) == (
            clickhouse_env["CLICKHOUSE_USER"],
            clickhouse_env["CLICKHOUSE_PASSWORD"],
        ), name


def test_replicas_listen_where_the_other_services_reach_them() -> None:
    for name, service in tracescore_services().items():
        receiver = replica_config(service).receiver
        assert receiver.host == "0.0.0.0", f"{name} listens on {receiver.host} only"
        assert (receiver.grpc_port, receiver.http_port) == (4317, 4318), name


def test_broker_database_and_replicas_have_health_checks() -> None:
    for name in ("kafka", "clickhouse"):
        check = services()[name].get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name} has no health check"
    image_check = instructions("HEALTHCHECK")
    for name, service in tracescore_services().items():
        check = service.get("healthcheck") or {}
        assert not check.get("disable") and check.get("test") != ["NONE"], f"{name} disables its health check"
        assert check.get("test") or image_check, f"{name} has no health check"


def test_services_wait_for_what_they_need_to_be_healthy() -> None:
    healthy = {name for name, service in services().items() if service.get("healthcheck")}
    for name, service in services().items():
        for dependency, condition in dependencies(service).items():
            assert dependency in services(), f"{name} depends on an unknown service {dependency}"
            if dependency in healthy:
                assert condition == "service_healthy", f"{name} should wait for {dependency} to be healthy"
    for name in tracescore_services():
        assert {"kafka", "clickhouse"} <= set(dependencies(services()[name])), name
    assert "kafka" in dependencies(collector())
    assert "clickhouse" in dependencies(services()["grafana"])


def test_agents_and_people_reach_the_published_ports() -> None:
    assert {(4317, 4317), (4318, 4318)} <= published(collector())
    assert (3000, 3000) in published(services()["grafana"])


def test_every_mounted_file_exists_and_every_named_volume_is_declared() -> None:
    declared = set(compose().get("volumes") or {})
    for name, service in services().items():
        for host_path, _ in bind_mounts(service):
            assert host_path.exists(), f"{name} mounts {host_path}, which is not in the repository"
        for volume in service.get("volumes") or []:
            source = volume.get("source") if isinstance(volume, dict) else volume.split(":")[0]
            if source and not source.startswith((".", "/", "~")):
                assert source in declared, f"{name} uses the undeclared volume {source}"


def test_prometheus_scrapes_every_replica() -> None:
    config_file = mounted_file(services()["prometheus"], "/etc/prometheus/prometheus.yml")
    config = yaml.safe_load(config_file.read_text())
    targets = {
        target
        for job in config["scrape_configs"]
        if job.get("metrics_path", "/metrics") == "/metrics"
        for group in job.get("static_configs", [])
        for target in group["targets"]
    }
    expected = {
        f"{name}:{replica_config(service).receiver.http_port}"
        for name, service in tracescore_services().items()
    }
    assert targets == expected


# --- the collector config ------------------------------------------------------------------------


def test_the_collector_runs_the_example_config() -> None:
    assert collector_config_path() == COLLECTOR_CONFIG


def test_collector_pipelines_use_only_defined_components() -> None:
    config = yaml.safe_load(COLLECTOR_CONFIG.read_text())
    pipelines = config["service"]["pipelines"]
    assert {"traces", "logs"} <= set(pipelines), "spans and log records (GenAI message content) both"
    for pipeline, spec in pipelines.items():
        for kind in ("receivers", "processors", "exporters"):
            for component in spec.get(kind, []):
                assert component in (config.get(kind) or {}), f"{pipeline} uses {component}, not in {kind}"
        assert spec["receivers"] and spec["exporters"], pipeline


def test_kafka_exporter_writes_otlp_proto_keyed_by_trace_id() -> None:
    config = yaml.safe_load(COLLECTOR_CONFIG.read_text())
    name, exporter = kafka_exporter(config)
    assert name in config["service"]["pipelines"]["logs"]["exporters"], "log records go to Kafka too"
    unknown = set(exporter) - KAFKA_EXPORTER_KEYS
    assert not unknown, f"{name} has settings the exporter does not know: {unknown}"
    for signal in ("traces", "logs"):
        assert set(exporter[signal]) <= KAFKA_SIGNAL_KEYS, signal
        assert exporter[signal]["encoding"] == "otlp_proto", signal
    assert exporter["traces"]["topic"] != exporter["logs"]["topic"]
    assert exporter["partition_traces_by_id"] is True
    assert exporter["partition_logs_by_trace_id"] is True


def test_collector_receivers_listen_on_the_published_ports() -> None:
    protocols = collector_config()["receivers"]["otlp"]["protocols"]
    endpoints = {protocol: spec["endpoint"] for protocol, spec in protocols.items()}
    assert endpoints == {"grpc": "0.0.0.0:4317", "http": "0.0.0.0:4318"}
    assert {4317, 4318} <= {container for _, container in published(collector())}


# --- Grafana ---------------------------------------------------------------------------------------


def test_grafana_mounts_match_the_provisioning() -> None:
    grafana = services()["grafana"]
    provisioning = environment(grafana).get("GF_PATHS_PROVISIONING", GRAFANA_PROVISIONING_PATH)
    assert mounted_file(grafana, provisioning).resolve() == PROVISIONING
    providers = yaml.safe_load((PROVISIONING / "dashboards" / "tracescore.yaml").read_text())["providers"]
    for provider in providers:
        folder = mounted_file(grafana, provider["options"]["path"])
        assert folder.resolve() == DEPLOY / "grafana" / "dashboards"
        assert sorted(folder.glob("*.json")), f"no dashboards where {provider['name']} looks"


def test_grafana_environment_fills_every_provisioning_variable() -> None:
    grafana = environment(services()["grafana"])
    wanted = {
        variable
        for path in PROVISIONING.rglob("*.yaml")
        for variable in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", path.read_text())
    }
    assert wanted, "the provisioning files name their variables"
    missing = {variable for variable in wanted if not grafana.get(variable)}
    assert not missing, f"unset in Grafana's environment: {sorted(missing)}"


def test_grafana_reaches_clickhouse_and_prometheus() -> None:
    grafana = environment(services()["grafana"])
    clickhouse = environment(services()["clickhouse"])
    assert grafana["CLICKHOUSE_HOST"] == "clickhouse"
    assert int(grafana["CLICKHOUSE_PORT"]) == CLICKHOUSE_PORTS[grafana["CLICKHOUSE_PROTOCOL"]]
    assert grafana["CLICKHOUSE_SECURE"] == "false"
    assert (grafana["CLICKHOUSE_USER"], grafana["CLICKHOUSE_PASSWORD"]) == (
        clickhouse["CLICKHOUSE_USER"],
        clickhouse["CLICKHOUSE_PASSWORD"],
    )
    stores = {replica_config(service).store for service in tracescore_services().values()}
    assert stores == {"http://clickhouse:8123"}
    # Grafana reads the database the replicas write.
    databases = {replica_config(service).database for service in tracescore_services().values()}
    assert databases == {grafana["CLICKHOUSE_DATABASE"]} == {"default"}
    prometheus = urlsplit(grafana["PROMETHEUS_URL"])
    assert (prometheus.hostname, prometheus.port) == ("prometheus", 9090)
    datasources = yaml.safe_load((PROVISIONING / "datasources" / "tracescore.yaml").read_text())
    plugins = {source["type"] for source in datasources["datasources"]} - {"prometheus"}
    installed = set(re.split(r"[,\s]+", grafana.get("GF_INSTALL_PLUGINS", "")))
    assert plugins <= installed, f"plugins to install: {plugins}"


def test_one_shell_variable_chooses_the_database_of_the_replicas_and_of_grafana() -> None:
    shell = {"TRACESCORE_STORE_DATABASE": "agent_evals"}
    given = _interpolated(yaml.safe_load(COMPOSE.read_text()), shell)["services"]
    databases = {replica_config(given[name]).database for name in tracescore_services()}
    assert databases == {"agent_evals"}
    assert environment(given["grafana"])["CLICKHOUSE_DATABASE"] == "agent_evals"


# --- the Dockerfile ---------------------------------------------------------------------------------


def test_every_stage_is_slim_python_3_11() -> None:
    bases = [arguments.split()[0] for arguments in instructions("FROM", stage="all")]
    assert bases and all(base.startswith("python:3.11-slim") for base in bases), bases


def test_the_image_runs_as_a_user_that_is_not_root() -> None:
    users = instructions("USER")
    assert users, "no USER: the image runs as root"
    assert users[-1].split(":")[0] not in ("root", "0")


def test_the_image_serves_through_the_tracescore_command_on_both_ports() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    (entrypoint,) = instructions("ENTRYPOINT")
    assert exec_form(entrypoint) == ["tracescore"] and "tracescore" in scripts
    (command,) = instructions("CMD")
    # Flags would beat the TRACESCORE_* variables given to the container (flags win over the environment).
    assert exec_form(command) == ["serve"]
    exposed = {port.split("/")[0] for arguments in instructions("EXPOSE") for port in arguments.split()}
    assert {"4317", "4318"} <= exposed
    env = image_environment()
    assert env["TRACESCORE_HOST"] == "0.0.0.0", "the receivers must listen beyond the container's loopback"
    assert env["TRACESCORE_STORE"] in [arguments.strip('[]"') for arguments in instructions("VOLUME")]


def test_the_image_installs_the_package_from_the_repository() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["tracescore", "tracescore.*"]
    # tracescore/ and the folders its links point to (ingest, scoring, schemas): a link without its
    # folder would build a package without its parts
    links = [path for path in (REPO / "tracescore").iterdir() if path.is_symlink()]
    packages = ["tracescore", *(str(path.resolve().relative_to(REPO)) for path in links)]
    assert len(links) == 3, links
    copied = {
        source.rstrip("/").removeprefix("./")
        for arguments in instructions("COPY", stage="all")
        if not arguments.startswith("--from")
        for source in arguments.split()[:-1]
    }
    needed = {"pyproject.toml", project["project"]["readme"], *packages}
    assert needed <= copied, f"not copied into the build: {needed - copied}"
    assert any(
        re.search(r"\bpip install\b.*\s\.$", arguments) for arguments in instructions("RUN", stage="all")
    )


def test_the_health_check_asks_healthz_with_python() -> None:
    (check,) = instructions("HEALTHCHECK")
    command = exec_form(check.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"] and "/healthz" in command[2] and "127.0.0.1" in command[2]


class _Probe(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def probe_port() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _Probe)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_health_check_passes_on_healthz_and_fails_without_a_server(probe_port: int) -> None:
    (check,) = instructions("HEALTHCHECK")
    code = exec_form(check.split(" CMD ", 1)[1])[2]

    def run(port: int, health_port: int | None = None) -> int:
        env = {"TRACESCORE_HTTP_PORT": str(port), "PATH": "/usr/bin:/bin"}
        if health_port is not None:
            env["TRACESCORE_HEALTH_PORT"] = str(health_port)
        return subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, timeout=30
        ).returncode

    assert run(probe_port) == 0
    assert run(unused_port()) != 0
    # With a health lane, the check asks it (and only it).
    assert run(unused_port(), health_port=probe_port) == 0
    assert run(probe_port, health_port=unused_port()) != 0


def unused_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- .dockerignore ----------------------------------------------------------------------------------


def _ignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        glob = line.removeprefix("!").strip("/")
        regex = ""
        for part in re.split(r"(\*\*/?|\*|\?|\[[^]]*\])", glob):
            if part.startswith("**"):
                regex += "(?:.*/)?" if part.endswith("/") else ".*"
            elif part == "*":
                regex += "[^/]*"
            elif part == "?":
                regex += "[^/]"
            elif part.startswith("["):
                regex += part
            else:
                regex += re.escape(part)
        patterns.append((negated, re.compile(regex)))
    return patterns


def ignored(path: str) -> bool:
    """Whether Docker leaves ``path`` (context-relative) out: it or a parent matches, the last rule wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for negated, pattern in _ignore_patterns():
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            result = not negated
    return result


def test_dockerignore_leaves_out_local_state_but_nothing_the_build_copies() -> None:
    for path in (
        ".venv/bin/python",
        "tracescore-data/store/x",
        ".git/HEAD",
        "ingest/__pycache__/cli.cpython-311.pyc",
    ):
        assert ignored(path), f"{path} would be sent to the build"
    tracked = subprocess.run(
        ["git", "ls-files", "pyproject.toml", "README.md", "tracescore", "schemas", "scoring", "ingest"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "schemas/sql/otel_traces.sql" in tracked and "tracescore/__init__.py" in tracked
    left_out = [path for path in tracked if ignored(path)]
    assert not left_out, f"the build needs these, which .dockerignore leaves out: {left_out[:5]}"
