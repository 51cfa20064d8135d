"""The Helm chart (deploy/helm/tracescore), rendered and linted by Helm's own engine (tests.support.helm).

Every manifest is parsed; the objects are checked against each other as Kubernetes would join them
(selectors and labels, named ports, the volumes and the files the config names), and the ConfigMap's
tracescore.yaml is loaded by tracescore's own ``load_config``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.helm import (
    CHART,
    CONFIG_FILE,
    NAMESPACE,
    RELEASE,
    Rendered,
    lint,
    mount_secrets,
    render,
    render_error,
)
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ServiceConfig

KUBERNETES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md"

SECRETS = {
    "judgeApiKey": "sk-judge-0123456789abcdef",
    "authToken": "token-5f1c2d3e4b",
    "storePassword": "clickhouse-pw-99",
    "kafkaSaslPassword": "kafka-pw-42",
}

CUSTOM_RULES = [
    {"scorer": "textual-difference", "sample_rate": 0.5},
    {"scorer": "answer-relevancy", "sample_rate": 0.1, "filter": {"agent_name": ["weather_agent"]}},
]

# Replicas 3, own rules and judge, an existing Secret, the ServiceMonitor on, Kafka with SASL.
CUSTOM: dict[str, Any] = {
    "replicaCount": 3,
    "image": {"repository": "registry.example/tracescore", "tag": "1.2.3"},
    "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}},
    "secrets": {
        "existingSecret": "team-llm-keys",
        "existingSecretKeys": {
            "judgeApiKey": "openai",
            "authToken": "otlp-token",
            "storePassword": "clickhouse",
            "kafkaSaslPassword": "kafka",
        },
    },
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}, "interval": "15s"},
    "service": {"grpcPort": 14317},
    "config": {
        "store": "https://tracescore@clickhouse.db.svc:8443",
        "kafka": {
            "bootstrap": "kafka.kafka.svc:9093",
            "topic": "otlp_spans",
            "group": "tracescore-prod",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "tracescore",
        },
        "scoring": {"judge": {"model": "openai/gpt-4o-mini"}, "rules": CUSTOM_RULES},
    },
}
PROBES = ("startupProbe", "livenessProbe", "readinessProbe")
EXISTING_SECRET_DATA = {"openai": "sk-existing-1", "otlp-token": "t0k3n", "clickhouse": "pw", "kafka": "kpw"}


@pytest.fixture(scope="module")
def default() -> Rendered:
    return render()


@pytest.fixture(scope="module")
def custom() -> Rendered:
    return render(CUSTOM)


@pytest.fixture(scope="module")
def with_secrets() -> Rendered:
    return render(
        {
            "secrets": SECRETS,
            "config": {
                "scoring": {"judge": {"model": "openai/gpt-4o-mini"}},
                "kafka": {
                    "bootstrap": "kafka:9092",
                    "topic": "otlp_spans",
                    "security_protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "PLAIN",
                    "sasl_username": "tracescore",
                },
            },
        }
    )


def load(rendered: Rendered, tmp_path: Path, text: str | None = None) -> ServiceConfig:
    path = tmp_path / "tracescore.yaml"
    path.write_text(rendered.config_text if text is None else text)
    return load_config(path, environ={})  # the file alone, not this process's TRACESCORE_* variables


def load_mounted(
    rendered: Rendered, tmp_path: Path, secret_data: dict[str, str] | None = None
) -> ServiceConfig:
    """The config as the pod reads it: the Secret's files written where the volume puts them (under
    tmp_path), the config's paths to them pointed there, loaded by ``load_config``."""
    directory = mount_secrets(rendered, tmp_path, secret_data)
    (mount,) = [m for m in rendered.container["volumeMounts"] if m["name"] == "secrets"]
    return load(rendered, tmp_path, rendered.config_text.replace(mount["mountPath"], str(directory)))


def secrets_mount(rendered: Rendered) -> dict[str, Any]:
    (mount,) = [m for m in rendered.container["volumeMounts"] if m["name"] == "secrets"]
    return dict(mount)


def named_port(rendered: Rendered, name: str) -> int:
    (port,) = [p["containerPort"] for p in rendered.container["ports"] if p["name"] == name]
    return int(port)


# --- helm lint, and what is rendered


@pytest.mark.parametrize("values", [None, CUSTOM], ids=["default", "custom"])
def test_helm_lint_strict_finds_nothing_wrong(values: dict[str, Any] | None) -> None:
    report = lint(values)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []  # no warnings or errors


@pytest.mark.parametrize("values", [None, CUSTOM, "with_secrets"], ids=["default", "custom", "secrets"])
@pytest.mark.parametrize("kubernetes", ["1.25.0", kubernetes_validate.latest_version()])
def test_every_object_is_valid_kubernetes(
    values: dict[str, Any] | str | None, kubernetes: str, request: pytest.FixtureRequest
) -> None:
    """Strictly (no unknown field) against the OpenAPI schema of the oldest Kubernetes the chart
    supports (Chart.yaml's kubeVersion) and the newest known. The ServiceMonitor is a CRD: its fields
    are checked by test_the_service_monitor_scrapes_metrics_with_the_token."""
    rendered = request.getfixturevalue(values) if isinstance(values, str) else render(values)
    checked = []
    for obj in rendered.objects:
        if obj["kind"] != "ServiceMonitor":
            kubernetes_validate.validate(obj, kubernetes, strict=True)
            checked.append(obj["kind"])
    assert {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"} <= set(checked)
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["kubeVersion"] == ">=1.25.0-0"


def test_the_chart_declares_helm_3_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "tracescore"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert chart["appVersion"]


def test_default_values_render_the_objects_of_a_release(default: Rendered) -> None:
    assert default.kinds() == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"]
    for obj in default.objects:
        assert obj["metadata"]["name"] == RELEASE
        assert obj["metadata"]["namespace"] == NAMESPACE


def test_custom_values_render_a_service_monitor_and_use_the_existing_secret(custom: Rendered) -> None:
    assert custom.kinds() == [
        "ConfigMap",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
    ]
    assert custom.find("Secret") is None  # the user's Secret is not created again


# --- the Deployment


def test_replicas_follow_replica_count(default: Rendered, custom: Rendered) -> None:
    assert default.one("Deployment")["spec"]["replicas"] == 2
    assert custom.one("Deployment")["spec"]["replicas"] == 3


def test_the_container_runs_serve_with_the_mounted_config(default: Rendered, custom: Rendered) -> None:
    for rendered in (default, custom):
        container = rendered.container
        assert container["command"] == ["tracescore"]
        assert container["args"] == ["serve", "--config", CONFIG_FILE]
    assert default.container["image"] == "tracescore:0.1.0"  # the chart's appVersion
    assert custom.container["image"] == "registry.example/tracescore:1.2.3"
    extra = render({"extraArgs": ["--idle", "5"]})
    assert extra.container["args"] == ["serve", "--config", CONFIG_FILE, "--idle", "5"]


def test_the_probes_ask_health_and_readiness_on_the_health_lane(default: Rendered) -> None:
    # A port of their own: slow or hostile OTLP clients cannot crowd them out (docs/operations).
    container = default.container
    probes = {name: container[name]["httpGet"] for name in PROBES}
    assert probes["livenessProbe"]["path"] == "/healthz"
    assert probes["startupProbe"]["path"] == "/healthz"
    assert probes["readinessProbe"]["path"] == "/readyz"
    for probe in probes.values():
        assert named_port(default, probe["port"]) == 13133 == default.config["receiver"]["health_port"]
        assert probe["scheme"] == "HTTP"
    without_lane = render({"config": {"receiver": {"health_port": None}}})
    for name in PROBES:
        probe = without_lane.container[name]["httpGet"]
        assert named_port(without_lane, probe["port"]) == 4318 and probe["scheme"] == "HTTP"


def test_probes_and_scrapes_speak_https_when_the_receivers_serve_tls() -> None:
    tls_config = {"ca": {"secret": {"name": "tracescore-tls", "key": "ca.crt"}}, "serverName": "tracescore"}
    receiver = {"tls_cert": "/tls/tls.crt", "tls_key": "/tls/tls.key", "health_port": None}
    rendered = render(
        {"config": {"receiver": receiver}, "serviceMonitor": {"enabled": True, "tlsConfig": tls_config}}
    )
    for name in PROBES:
        assert rendered.container[name]["httpGet"]["scheme"] == "HTTPS"
    with_lane = render({"config": {"receiver": {**receiver, "health_port": 13133}}})
    for name in PROBES:  # the health lane speaks plain HTTP inside the pod
        assert with_lane.container[name]["httpGet"]["scheme"] == "HTTP"
    (endpoint,) = rendered.one("ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == tls_config


def test_the_probes_need_no_token_on_the_service() -> None:
    """The kubelet sends no Authorization header: the probed paths must be open with a token set."""
    from tracescore.ingest.receivers.http import OPEN_PATHS

    rendered = render({"secrets": {"authToken": "t"}})
    paths = {rendered.container[name]["httpGet"]["path"] for name in ("livenessProbe", "readinessProbe")}
    assert paths <= OPEN_PATHS


def test_resources_are_requested_and_limited(default: Rendered, custom: Rendered) -> None:
    assert default.container["resources"] == {
        "requests": {"cpu": "500m", "memory": "2560Mi"},
        "limits": {"cpu": "2", "memory": "2560Mi"},
    }
    assert custom.container["resources"]["limits"] == {"cpu": "4", "memory": "4Gi"}


def test_the_pod_runs_as_non_root_on_a_read_only_root(default: Rendered) -> None:
    pod, container = default.pod, default.container
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["automountServiceAccountToken"] is False
    # The one writable place, for libraries' temporary files, and HOME pointing there.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    tmp = next(v for v in pod["volumes"] if v["name"] == mounts["/tmp"])
    assert tmp["emptyDir"]["medium"] == "Memory"
    assert {"name": "HOME", "value": "/tmp"} in container["env"]


def test_the_config_map_is_mounted_where_serve_reads_it(default: Rendered) -> None:
    config_dir = str(Path(CONFIG_FILE).parent)
    (mount,) = [m for m in default.container["volumeMounts"] if m["mountPath"] == config_dir]
    assert mount["readOnly"] is True
    volume = next(v for v in default.pod["volumes"] if v["name"] == mount["name"])
    config_map = default.one("ConfigMap")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert Path(CONFIG_FILE).name in config_map["data"]
    # No secret to mount: no secret volume.
    assert "secrets" not in {v["name"] for v in default.pod["volumes"]}


def test_the_secret_is_mounted_as_files_named_by_the_config(with_secrets: Rendered, tmp_path: Path) -> None:
    secret = with_secrets.one("Secret")
    volume = next(v for v in with_secrets.pod["volumes"] if v["name"] == "secrets")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert {item["key"] for item in volume["secret"]["items"]} == set(secret["data"])
    mount = secrets_mount(with_secrets)
    assert mount["readOnly"] is True
    # The secrets are nowhere in plain text: not in the config, not in the pod's environment.
    deployment = yaml.safe_dump(with_secrets.one("Deployment"))
    for value in SECRETS.values():
        assert value not in with_secrets.config_text
        assert value not in deployment
    # The config loads once the Secret's files are where the kubelet puts them, and each *_file key
    # reads its own secret.
    config = load_mounted(with_secrets, tmp_path)
    assert config.scoring.judge is not None
    assert config.scoring.judge.api_key is not None
    assert config.scoring.judge.api_key.get_secret_value() == SECRETS["judgeApiKey"]
    assert config.receiver.auth_token_file is not None
    assert Path(config.receiver.auth_token_file).read_text() == SECRETS["authToken"]
    assert config.store_password_file is not None
    assert Path(config.store_password_file).read_text() == SECRETS["storePassword"]
    assert config.kafka.sasl_password_file is not None
    assert Path(config.kafka.sasl_password_file).read_text() == SECRETS["kafkaSaslPassword"]
    # As rendered, the paths are the mounted files.
    rendered_config = with_secrets.config
    assert rendered_config["scoring"]["judge"]["api_key_file"] == f"{mount['mountPath']}/judge-api-key"
    assert rendered_config["receiver"]["auth_token_file"] == f"{mount['mountPath']}/auth-token"


def test_an_existing_secret_is_mounted_by_its_own_keys(custom: Rendered, tmp_path: Path) -> None:
    volume = next(v for v in custom.pod["volumes"] if v["name"] == "secrets")
    assert volume["secret"]["secretName"] == "team-llm-keys"
    assert {item["key"] for item in volume["secret"]["items"]} == set(EXISTING_SECRET_DATA)
    config = load_mounted(custom, tmp_path, EXISTING_SECRET_DATA)
    assert config.scoring.judge is not None and config.scoring.judge.api_key is not None
    assert config.scoring.judge.api_key.get_secret_value() == "sk-existing-1"
    assert config.receiver.auth_token_file is not None
    assert Path(config.receiver.auth_token_file).read_text() == "t0k3n"


def test_only_the_secrets_given_are_mounted() -> None:
    rendered = render({"secrets": {"storePassword": "pw"}})
    volume = next(v for v in rendered.pod["volumes"] if v["name"] == "secrets")
    assert [item["path"] for item in volume["secret"]["items"]] == ["store-password"]
    assert list(rendered.one("Secret")["data"]) == ["store-password"]
    config = rendered.config
    assert config["store_password_file"].endswith("/store-password")
    assert "auth_token_file" not in config["receiver"]
    assert "judge" not in config["scoring"]


# --- the ConfigMap: tracescore's config


def test_the_default_config_loads_as_a_tracescore_config(default: Rendered, tmp_path: Path) -> None:
    config = load(default, tmp_path)
    assert config.store == "http://tracescore@clickhouse:8123"
    assert config.receiver.host == "0.0.0.0"
    assert config.receiver.grpc_port == named_port(default, "otlp-grpc") == 4317
    assert config.receiver.http_port == named_port(default, "otlp-http") == 4318
    assert [rule.scorer for rule in config.scoring.rules] == ["content-similarity", "textual-difference"]
    assert not config.kafka.enabled


def test_the_custom_config_loads_with_its_rules_and_kafka_group(custom: Rendered, tmp_path: Path) -> None:
    assert custom.config["scoring"]["rules"] == CUSTOM_RULES  # a list is replaced whole, not merged
    config = load_mounted(custom, tmp_path, EXISTING_SECRET_DATA)
    assert [(rule.scorer, rule.sample_rate) for rule in config.scoring.rules] == [
        ("textual-difference", 0.5),
        ("answer-relevancy", 0.1),
    ]
    assert config.kafka.group == "tracescore-prod"
    assert config.store == "https://tracescore@clickhouse.db.svc:8443"
    assert config.receiver.host == "0.0.0.0"  # the chart's defaults stay under the user's values


def test_memory_limit_follows_the_container_limit(
    default: Rendered, custom: Rendered, tmp_path: Path
) -> None:
    assert load(default, tmp_path).memory_limit == 2 * 1024**3  # 0.8 x 2560Mi
    assert custom.config["memory_limit"] == int(0.8 * 4 * 1024**3)
    assert render({"resources": {"limits": {"memory": "3G"}}}).config["memory_limit"] == int(0.8 * 3e9)
    assert render({"memoryLimitRatio": 0.5}).config["memory_limit"] == 1280 * 1024**2
    assert render({"config": {"memory_limit": "1GiB"}}).config["memory_limit"] == "1GiB"  # given: kept
    assert "memory_limit" not in render({"resources": {"limits": None}}).config  # tracescore's default


def test_a_changed_config_or_secret_rolls_the_pods(default: Rendered) -> None:
    def checksums(rendered: Rendered) -> dict[str, str]:
        annotations = rendered.one("Deployment")["spec"]["template"]["metadata"]["annotations"]
        return {key: annotations[key] for key in ("checksum/config", "checksum/secret")}

    before = checksums(default)
    assert checksums(render()) == before  # stable
    after_rules = checksums(render({"config": {"scoring": {"rules": [{"scorer": "content-similarity"}]}}}))
    assert after_rules["checksum/config"] != before["checksum/config"]
    one = checksums(render({"secrets": {"authToken": "a"}}))
    two = checksums(render({"secrets": {"authToken": "b"}}))
    assert one["checksum/secret"] != two["checksum/secret"]


# --- Service, PodDisruptionBudget, ServiceMonitor: selectors and ports


def test_selectors_match_the_pod_labels(default: Rendered, custom: Rendered) -> None:
    for rendered in (default, custom):
        deployment = rendered.one("Deployment")
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        selectors = {
            "Deployment": deployment["spec"]["selector"]["matchLabels"],
            "Service": rendered.one("Service")["spec"]["selector"],
            "PodDisruptionBudget": rendered.one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        }
        for kind, selector in selectors.items():
            assert selector, kind
            assert selector.items() <= pod_labels.items(), kind
        assert selectors["Service"] == selectors["PodDisruptionBudget"] == selectors["Deployment"]
        assert pod_labels["app.kubernetes.io/instance"] == RELEASE
        for obj in rendered.objects:  # every object carries the release's labels
            assert selectors["Deployment"].items() <= obj["metadata"]["labels"].items(), obj["kind"]
    # Two releases in one namespace select only their own pods.
    other = render(release="other")
    assert other.one("Service")["spec"]["selector"] != default.one("Service")["spec"]["selector"]


def test_the_service_exposes_otlp_grpc_and_http(default: Rendered, custom: Rendered) -> None:
    ports = {p["name"]: p for p in default.one("Service")["spec"]["ports"]}
    assert ports["otlp-grpc"]["port"] == 4317
    assert ports["otlp-http"]["port"] == 4318
    for port in ports.values():  # each target names a port the container has
        assert named_port(default, port["targetPort"])
    assert ports["otlp-grpc"]["appProtocol"] == "grpc"
    custom_ports = {p["name"]: p["port"] for p in custom.one("Service")["spec"]["ports"]}
    assert custom_ports == {"otlp-grpc": 14317, "otlp-http": 4318}


def test_the_disruption_budget_lets_one_replica_go_at_a_time(default: Rendered) -> None:
    spec = default.one("PodDisruptionBudget")["spec"]
    assert spec["maxUnavailable"] == 1
    assert "minAvailable" not in spec
    spec = render({"podDisruptionBudget": {"minAvailable": 2}}).one("PodDisruptionBudget")["spec"]
    assert spec["minAvailable"] == 2 and "maxUnavailable" not in spec
    assert render({"podDisruptionBudget": {"enabled": False}}).find("PodDisruptionBudget") is None


def test_the_service_monitor_scrapes_metrics_with_the_token(custom: Rendered) -> None:
    monitor = custom.one("ServiceMonitor")
    service = custom.one("Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert endpoint["interval"] == "15s"
    assert endpoint["authorization"]["credentials"] == {"name": "team-llm-keys", "key": "otlp-token"}
    # /metrics opened to scrapers: no token sent.
    opened = render({**CUSTOM, "config": {**CUSTOM["config"], "receiver": {"metrics_open": True}}})
    assert "authorization" not in opened.one("ServiceMonitor")["spec"]["endpoints"][0]


def test_the_service_monitor_is_off_by_default(default: Rendered) -> None:
    assert default.find("ServiceMonitor") is None


# --- values the chart refuses


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"config": {"scoring": {"judge": {"model": "m", "api_key": "sk-1"}}}}, "secrets.judgeApiKey"),
        ({"config": {"receiver": {"auth_token": "t"}}}, "secrets.authToken"),
        ({"config": {"store_password": "pw"}}, "secrets.storePassword"),
        ({"secrets": {"judgeApiKey": "sk-1"}}, "config.scoring.judge.model"),
        ({"config": {"store": "./tracescore-data"}}, "ClickHouse server"),
        ({"config": {"receiver": {"host": "127.0.0.1"}}}, "0.0.0.0"),
        ({"resources": {"limits": {"memory": "2 gigabytes"}}}, "resources.limits.memory"),
        (
            {"config": {"store_database": "my-db"}},
            'config.store_database: "my-db" is not a database name tracescore accepts: use letters, digits',
        ),
        (
            {"config": {"store": "http://tracescore@clickhouse:8123/evals", "store_database": "other"}},
            'config.store names database "evals" in its path but config.store_database is "other"',
        ),
    ],
    ids=[
        "judge-key",
        "token",
        "store-password",
        "key-no-judge",
        "embedded-store",
        "loopback",
        "memory-unit",
        "database-name",
        "two-databases",
    ],
)
def test_the_chart_refuses(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


# --- NOTES.txt, values.yaml, docs/kubernetes.md


def test_the_notes_say_where_to_send_spans(default: Rendered, custom: Rendered) -> None:
    assert f"http://{RELEASE}.{NAMESPACE}.svc:4317" in default.notes
    assert "No bearer token" in default.notes
    assert "No bearer token" not in custom.notes
    assert "authorization: Bearer $TOKEN" in custom.notes
    assert "get secret team-llm-keys -o jsonpath='{.data.otlp-token}'" in custom.notes
    assert "at least 3 partitions" in custom.notes


@pytest.mark.parametrize(
    ("config", "database"),
    [
        ({}, "default"),
        ({"store_database": "evals"}, "evals"),
        ({"store": "http://tracescore@clickhouse:8123/evals"}, "evals"),
        ({"store": "http://tracescore@clickhouse:8123/evals", "store_database": "evals"}, "evals"),
    ],
    ids=["default", "setting", "dsn-path", "both-agree"],
)
def test_the_database_reaches_the_config_and_the_notes(
    config: dict[str, Any], database: str, tmp_path: Path
) -> None:
    rendered = render({"config": config})
    assert load(rendered, tmp_path).database == database
    assert rendered.config.get("store_database") == config.get("store_database")  # "" in values: not written
    assert f'tables are in ClickHouse database "{database}"' in rendered.notes
    assert f"tracescore schema --database {database}" in rendered.notes


def test_every_value_is_documented() -> None:
    """Each value of values.yaml (a key holding no keys) has a comment of its own, above it or inline, or
    sits under a documented key (a block passed to Kubernetes as it is, such as resources)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    keys = []  # (indent, key, documented) of each key line, in order
    for index, line in enumerate(lines):
        match = re.match(r"^( *)([A-Za-z_][\w.-]*):", line)
        if match:
            commented = "#" in line or (index > 0 and lines[index - 1].lstrip().startswith("#"))
            keys.append((len(match.group(1)), match.group(2), commented))
    enclosing: list[tuple[int, bool]] = []
    undocumented = []
    for position, (indent, key, commented) in enumerate(keys):
        while enclosing and enclosing[-1][0] >= indent:
            enclosing.pop()
        inherited = any(flag for _, flag in enclosing)
        is_leaf = position + 1 == len(keys) or keys[position + 1][0] <= indent
        if is_leaf and not (commented or inherited):
            undocumented.append(key)
        enclosing.append((indent, commented or inherited))
    assert len(keys) > 60
    assert undocumented == []


def test_the_documented_example_renders_and_loads(tmp_path: Path) -> None:
    section = KUBERNETES_PAGE.read_text()
    assert "helm install tracescore deploy/helm/tracescore -f my-values.yaml" in section
    values_block, collector_block = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    values = yaml.safe_load(values_block)
    # The Secret the page creates holds the keys its values name.
    (shell,) = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    created = dict.fromkeys(re.findall(r"--from-literal=([\w-]+)=", shell), "a-secret")
    assert set(created) == set(values["secrets"]["existingSecretKeys"].values())
    rendered = render(values)
    assert rendered.one("Deployment")["spec"]["replicas"] == values["replicaCount"] == 3
    assert rendered.find("ServiceMonitor") is not None
    config = load_mounted(rendered, tmp_path, created)
    assert config.kafka.enabled
    assert [rule.scorer for rule in config.scoring.rules] == ["content-similarity", "answer-relevancy"]
    # The collector's kafka exporter keys records by trace id.
    exporter = yaml.safe_load(collector_block)["exporters"]["kafka/tracescore"]
    assert exporter["partition_traces_by_id"] is True
    assert exporter["traces"]["topic"] == values["config"]["kafka"]["topic"]
