"""Service configuration: one pydantic model per component, validated once.

Precedence, highest first: command-line flags, ``TRACESCORE_*`` environment variables, the config
file (YAML or JSON), then the defaults named below. ``load_config`` is the one place that reads them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ByteSize,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from tracescore.schemas.config_source import ConfigError, Location, Sources, explain, read_config_file
from tracescore.schemas.drift_config import DriftConfig
from tracescore.schemas.environment import ENV_KEYS
from tracescore.schemas.export_config import ExportConfig, OtlpExportConfig
from tracescore.schemas.rules import RunFilter, ScorerRule
from tracescore.schemas.scoring_config import JudgeConfig, RedactConfig, ScoringConfig
from tracescore.schemas.store_database import DEFAULT_DATABASE, check_database, dsn_database, resolve_database

# Re-exported: every part of the config is importable from here.
__all__ = [
    "DEFAULT_DATABASE",
    "ENV_KEYS",
    "ConfigError",
    "DriftConfig",
    "ExportConfig",
    "JudgeConfig",
    "OtlpExportConfig",
    "RedactConfig",
    "RunFilter",
    "ScorerRule",
    "ScoringConfig",
]

# The embedded stores, under the user's data directory ($XDG_DATA_HOME, else ~/.local/share), so that
# every command finds the same one whatever directory it runs in (cron, systemd, a shell anywhere):
# ``serve`` and the commands that read it use "store"; ``demo`` keeps its runs apart in "demo".
DATA_DIR_NAME = "tracescore"
DEFAULT_STORE_NAME = "store"
DEFAULT_DEMO_STORE_NAME = "demo"
LEGACY_STORE = "./tracescore-data"  # the default before: relative to the working directory
DEFAULT_HOST = "127.0.0.1"
DEFAULT_GRPC_PORT = 4317
DEFAULT_HTTP_PORT = 4318
DEFAULT_MAX_REQUEST_BYTES = 20 * 1024 * 1024  # the OpenTelemetry Collector's HTTP default
DEFAULT_MAX_REQUEST_ITEMS = 100_000
# Attributes of one span or log record. The OTel SDKs cut at 128 by default, so a span past this came
# from a sender that lifted every limit; 1,000 leaves room for conventions that flatten whole
# conversations into attributes (OpenLLMetry's gen_ai.prompt.<i>.*).
DEFAULT_MAX_ATTRIBUTES_PER_ITEM = 1_000
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
# Request headers arrive in one packet from any real client; nginx (client_header_timeout), Envoy
# (request_headers_timeout) and Go servers (ReadHeaderTimeout) bound them likewise.
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
# A kept-alive connection without a request is closed after this (nginx: keepalive_timeout, 75 s);
# when every connection is taken, the idle ones are closed first (see ingest.receivers.connections).
DEFAULT_IDLE_TIMEOUT_SECONDS = 60.0
# One client address's share of receiver.max_connections (unless set): half, so a proxy in
# front of many exporters still gets room, while one noisy host cannot take every connection.
PER_CLIENT_SHARE = 2
DEFAULT_IDLE_SECONDS = 2.0
DEFAULT_MAX_WAIT_SECONDS = 300.0
DEFAULT_MAX_TRACES = 100_000
DEFAULT_MAX_SPANS_PER_TRACE = 2_000
DEFAULT_MAX_HELD_BYTES = 256 * 1024 * 1024
DEFAULT_KAFKA_GROUP = "tracescore"
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
# The store disk's free-space floor: below it nothing is written (ingest.store.free_space). It must
# hold the largest write in flight (a group commit, a merge's reservation) with room to spare.
DEFAULT_STORE_MIN_FREE_BYTES = 256 * 1024**2
# Below this no configuration can run (the service's own rest size is about 190 MiB); the service
# measures what it needs at start and refuses a limit that cannot hold it (ingest.receivers.memory_admission).
MIN_MEMORY_LIMIT = 256 * 1024**2
# The most of memory_limit the assembler's held items may take, counted as stored bytes: in Python
# a held span takes about four times its stored size (measured), so this is about half the limit. The
# service lowers it from what it measures at start unless it is set.
HELD_BYTES_SHARE = 8
DEFAULT_HEARTBEAT_SECONDS = 2.0
DEFAULT_REPLICA_TTL_SECONDS = 10.0


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReceiverConfig(_Config):
    host: str = DEFAULT_HOST
    grpc_port: int = Field(default=DEFAULT_GRPC_PORT, ge=0, le=65535)
    http_port: int = Field(default=DEFAULT_HTTP_PORT, ge=0, le=65535)
    # A port of its own for /healthz and /readyz (plain HTTP, served by a small process of its own):
    # probes answer there however many clients crowd the OTLP ports (ingest.receivers.health_lane).
    # Default: none (the probes are served on the OTLP/HTTP port only).
    health_port: int | None = Field(default=None, ge=0, le=65535)
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, gt=0)
    # Spans or log records in one export request (the collector sends a few thousand at most).
    max_request_items: int = Field(default=DEFAULT_MAX_REQUEST_ITEMS, gt=0)
    # A span or log record with more attributes than this is rejected on its own (OTLP partial
    # success naming it), on every transport (see ingest.decode).
    max_attributes_per_item: int = Field(default=DEFAULT_MAX_ATTRIBUTES_PER_ITEM, gt=0)
    # A request body that does not arrive within this long is answered 408 and its connection closed.
    body_timeout_seconds: float = Field(default=DEFAULT_BODY_TIMEOUT_SECONDS, gt=0)
    # Request headers that have not all arrived this long after the connection opened (or, kept
    # alive, after the next request's first byte) are answered 408 and the connection closed; the
    # TLS handshake has the same deadline. OTLP/gRPC: the HTTP/2 handshake's deadline.
    header_timeout_seconds: float = Field(default=DEFAULT_HEADER_TIMEOUT_SECONDS, gt=0)
    # A kept-alive connection without a request for this long is closed (OTLP/gRPC: sent GOAWAY).
    idle_timeout_seconds: float = Field(default=DEFAULT_IDLE_TIMEOUT_SECONDS, gt=0)
    # Open connections of each receiver. When all are taken, the OTLP/HTTP receiver closes the one
    # that has waited longest for its headers (or idled longest) to admit a new one, never one whose
    # request is being handled (see ingest.receivers.connections); OTLP/gRPC closes newcomers.
    # Default: OTLP/HTTP half the process's open-file limit, OTLP/gRPC a quarter, each at most 4,096.
    max_connections: int | None = Field(default=None, gt=0)
    # Open OTLP/HTTP connections from one client address; beyond it, a new one takes the place of
    # its own longest-waiting (or idle) one, or is closed at once. Default: half of max_connections.
    max_connections_per_client: int | None = Field(default=None, gt=0)
    # Bearer token wanted on OTLP/HTTP, OTLP/gRPC, /api/* and /metrics (see ingest.receivers.auth):
    # TRACESCORE_AUTH_TOKEN, or a file holding it (a mounted secret). Neither: no authentication.
    auth_token: SecretStr | None = None
    auth_token_file: str | None = None
    # /metrics without a token (a scraper inside the cluster); /healthz and /readyz are always open.
    metrics_open: bool = False
    # TLS on both receivers (PEM files): OTLP/HTTP serves HTTPS, OTLP/gRPC TLS. Both or neither.
    tls_cert: str | None = None
    tls_key: str | None = None
    # With it, clients must present a certificate signed by this CA (mutual TLS).
    tls_client_ca: str | None = None

    @model_validator(mode="after")
    def _one_token_source(self) -> ReceiverConfig:
        if self.auth_token is not None and self.auth_token_file:
            raise ValueError("give receiver.auth_token or receiver.auth_token_file, not both")
        return self

    @model_validator(mode="after")
    def _health_port_of_its_own(self) -> ReceiverConfig:
        if self.health_port and self.health_port in (self.http_port, self.grpc_port):
            other = "http_port" if self.health_port == self.http_port else "grpc_port"
            raise ValueError(f"receiver.health_port must differ from receiver.{other} ({self.health_port})")
        return self

    @model_validator(mode="after")
    def _per_client_within_the_cap(self) -> ReceiverConfig:
        per_client, cap = self.max_connections_per_client, self.max_connections
        if per_client is not None and cap is not None and per_client > cap:
            raise ValueError(
                f"receiver.max_connections_per_client ({per_client}) must not exceed "
                f"receiver.max_connections ({cap})"
            )
        return self

    @model_validator(mode="after")
    def _tls_cert_and_key(self) -> ReceiverConfig:
        if bool(self.tls_cert) != bool(self.tls_key):
            given, missing = ("tls_cert", "tls_key") if self.tls_cert else ("tls_key", "tls_cert")
            raise ValueError(f"receiver.{given} is set but receiver.{missing} is not: TLS needs both")
        if self.tls_client_ca and not self.tls_cert:
            raise ValueError("receiver.tls_client_ca needs receiver.tls_cert and receiver.tls_key")
        return self

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert and self.tls_key)


_SASL_KEYS = ("sasl_mechanism", "sasl_username", "sasl_password", "sasl_password_file")
_SSL_FILE_KEYS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")


class KafkaConfig(_Config):
    bootstrap: str | None = None
    topic: str | None = None  # OTLP trace export requests (the collector's kafka exporter: otlp_spans)
    logs_topic: str | None = None  # OTLP logs export requests (the collector's kafka exporter: otlp_logs)
    group: str = DEFAULT_KAFKA_GROUP
    encoding: str = "otlp_proto"
    dead_letter_topic: str | None = None  # default: "<topic>.dlq" (or "<logs_topic>.dlq" without topic)
    session_timeout_ms: int = Field(default=10_000, gt=0)
    # The brokers' security, as Kafka clients name it (passed to the consumer and the dead-letter
    # producer by ingest.receivers.kafka_security). SASL wants a mechanism, a user and a password
    # (TRACESCORE_KAFKA_SASL_PASSWORD, or a file holding it); SSL may name the CA that signed the
    # brokers' certificates and a client certificate and key.
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    sasl_password_file: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool = True

    @field_validator("security_protocol", mode="before")
    @classmethod
    def _protocol_upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("sasl_mechanism", mode="before")
    @classmethod
    def _mechanism_upper(cls, value: Any) -> Any:
        # "scram-sha-256" and "SCRAM_SHA_256" name the same mechanism.
        return value.strip().upper().replace("_", "-") if isinstance(value, str) else value

    @model_validator(mode="after")
    def _security_fits_the_protocol(self) -> KafkaConfig:
        protocol = self.security_protocol
        sasl_keys = [key for key in _SASL_KEYS if getattr(self, key) is not None]
        ssl_keys = [key for key in _SSL_FILE_KEYS if getattr(self, key) is not None]
        if protocol.startswith("SASL_"):
            for key in ("sasl_mechanism", "sasl_username"):
                if getattr(self, key) is None:
                    raise ValueError(f"kafka.{key} is required with kafka.security_protocol {protocol}")
            if (self.sasl_password is None) == (self.sasl_password_file is None):
                raise ValueError(
                    f"kafka.security_protocol {protocol} needs one of kafka.sasl_password "
                    "(TRACESCORE_KAFKA_SASL_PASSWORD) or kafka.sasl_password_file"
                )
        elif sasl_keys:
            raise ValueError(
                f"kafka.{sasl_keys[0]} is set but kafka.security_protocol is {protocol}: "
                "use SASL_SSL (or SASL_PLAINTEXT)"
            )
        if ssl_keys and not protocol.endswith("SSL"):
            raise ValueError(
                f"kafka.{ssl_keys[0]} is set but kafka.security_protocol is {protocol}: use SSL or SASL_SSL"
            )
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError("kafka.ssl_keyfile needs kafka.ssl_certfile (the client certificate)")
        return self

    @model_validator(mode="after")
    def _both_or_neither(self) -> KafkaConfig:
        if bool(self.bootstrap) != bool(self.topic or self.logs_topic):
            raise ValueError("kafka needs both bootstrap and topic (or logs_topic), or neither")
        if self.topic and self.topic == self.logs_topic:
            # Records are decoded by the topic they come from, so one topic cannot carry both signals.
            raise ValueError("kafka.topic and kafka.logs_topic must be different topics")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.bootstrap and (self.topic or self.logs_topic))

    @property
    def dlq_topic(self) -> str:
        return self.dead_letter_topic or f"{self.topic or self.logs_topic}.dlq"


class AssemblyConfig(_Config):
    idle_seconds: float = Field(default=DEFAULT_IDLE_SECONDS, gt=0)
    max_wait_seconds: float = Field(default=DEFAULT_MAX_WAIT_SECONDS, gt=0)
    # Traces tracked at once (holding items or spilled); beyond it the oldest are forgotten until the
    # recovery scan finds them in the store again.
    max_traces: int = Field(default=DEFAULT_MAX_TRACES, gt=0)
    max_spans_per_trace: int = Field(default=DEFAULT_MAX_SPANS_PER_TRACE, gt=0)
    # Bytes of spans and log records (as stored) held in memory; beyond it the oldest traces spill:
    # they are read back from the store when due. In the service: memory_limit / 8 unless set.
    max_held_bytes: int = Field(default=DEFAULT_MAX_HELD_BYTES, gt=0)
    # No longer used: late spans rebuild their run from the store. Accepted so older configs load.
    late_cache_spans: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _idle_below_max_wait(self) -> AssemblyConfig:
        if self.idle_seconds > self.max_wait_seconds:
            raise ValueError("assembly.idle_seconds must not exceed assembly.max_wait_seconds")
        return self


class ReplicaConfig(_Config):
    """This process among the replicas sharing one store (see docs/scaling.md)."""

    # Stable across restarts (a StatefulSet pod name, a host name): a restarted replica resumes its
    # own watermark. Default: the host name.
    id: str | None = Field(default=None, min_length=1, max_length=200)
    heartbeat_seconds: float = Field(default=DEFAULT_HEARTBEAT_SECONDS, gt=0)
    # A replica whose last heartbeat is older than this is gone: the others take over its traces.
    ttl_seconds: float = Field(default=DEFAULT_REPLICA_TTL_SECONDS, gt=0)

    @model_validator(mode="after")
    def _ttl_over_heartbeats(self) -> ReplicaConfig:
        if self.ttl_seconds < 2 * self.heartbeat_seconds:
            raise ValueError("replica.ttl_seconds must be at least twice replica.heartbeat_seconds")
        return self


def default_store(name: str = DEFAULT_STORE_NAME, environ: Mapping[str, str] | None = None) -> str:
    """The absolute path of a default embedded store: ``$XDG_DATA_HOME/tracescore/<name>``, or
    ``~/.local/share/tracescore/<name>`` (a relative XDG_DATA_HOME is ignored, as the XDG base
    directory specification asks)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, DATA_DIR_NAME, name)


class ServiceConfig(_Config):
    store: str = Field(default_factory=default_store)
    # The ClickHouse database of every tracescore table, in either store; unset: the server DSN's path
    # (http://host:8123/analytics), else "default". See schemas.store_database and docs/store.md.
    store_database: str | None = None
    # A ClickHouse server store (http(s)://host:port) without secrets in the DSN: the user, the
    # password (TRACESCORE_STORE_PASSWORD, or a file holding it), the CA that signed the server's
    # certificate, a client certificate and key (mutual TLS), and whether to check the server's
    # certificate at all. Applied by ingest.store.clickhouse; none of them means anything to chDB.
    store_user: str | None = None
    store_password: SecretStr | None = None
    store_password_file: str | None = None
    store_tls_ca: str | None = None
    store_tls_cert: str | None = None
    store_tls_key: str | None = None
    store_verify: bool = True
    # The store disk's free-space floor: the larger of the two. Below it tracescore writes nothing
    # (OTLP 503 with Retry-After, Kafka paused, merges stopped) until space is back; 0 and 0: no floor.
    store_min_free_bytes: ByteSize = Field(default=ByteSize(DEFAULT_STORE_MIN_FREE_BYTES), ge=0)
    store_min_free_ratio: float = Field(default=0.0, ge=0.0, lt=1.0)
    receiver: ReceiverConfig = Field(default_factory=ReceiverConfig)
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    assembly: AssemblyConfig = Field(default_factory=AssemblyConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    replica: ReplicaConfig = Field(default_factory=ReplicaConfig)
    drift: DriftConfig = Field(default_factory=DriftConfig)
    # The bound on the memory the process allocates ("2GiB", "800MB" or bytes): its anonymous resident
    # memory; the code its libraries map from files is not counted. A request is admitted only if
    # what it will cost fits under it (429, RESOURCE_EXHAUSTED with RetryInfo, Kafka paused until it
    # does); the assembler's held items and the commit backlog take their bounds from it. See
    # ingest.receivers.memory_admission and docs/operations/memory.md.
    memory_limit: ByteSize = Field(default=ByteSize(DEFAULT_MEMORY_LIMIT), ge=MIN_MEMORY_LIMIT)

    @model_validator(mode="after")
    def _bounds_from_memory_limit(self) -> ServiceConfig:
        if "max_held_bytes" not in self.assembly.model_fields_set:
            self.assembly.max_held_bytes = int(self.memory_limit) // HELD_BYTES_SHARE
            # Still unset as far as the service is concerned: it lowers it from what it measures.
            self.assembly.model_fields_set.discard("max_held_bytes")
        return self

    @field_validator("store")
    @classmethod
    def _store_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("store must be a path or a DSN")
        dsn_database(value)  # a path that names no valid database is refused here, naming its source
        return value

    @field_validator("store_database")
    @classmethod
    def _a_database_name(cls, value: str | None) -> str | None:
        return None if value is None else check_database(value)

    @property
    def database(self) -> str:
        """The database in use: store_database (flag, environment, file), else the store DSN's path,
        else "default"."""
        return resolve_database(self.store_database, self.store)

    @model_validator(mode="after")
    def _server_store_options(self) -> ServiceConfig:
        server_keys = [key for key in _STORE_SERVER_KEYS if key in self.model_fields_set]
        scheme = urlsplit(self.store.strip()).scheme.lower()
        if server_keys and scheme not in ("http", "https"):
            raise ValueError(
                f"{', '.join(server_keys)} apply to a ClickHouse server store (store: https://host:8443), "
                "not to the embedded store"
            )
        tls_keys = [key for key in server_keys if key.startswith(("store_tls_", "store_verify"))]
        if tls_keys and scheme != "https":
            raise ValueError(f"{', '.join(tls_keys)} need an https:// store")
        if self.store_password is not None and self.store_password_file:
            raise ValueError("give store_password or store_password_file, not both")
        if (self.store_password is not None or self.store_password_file) and urlsplit(self.store).password:
            raise ValueError("the store DSN holds a password already: give it there or in store_password")
        if self.store_tls_key and not self.store_tls_cert:
            raise ValueError("store_tls_key needs store_tls_cert (the client certificate)")
        return self


_STORE_SERVER_KEYS = (
    "store_user",
    "store_password",
    "store_password_file",
    "store_tls_ca",
    "store_tls_cert",
    "store_tls_key",
    "store_verify",
)


# A check of the whole config beyond the model's: (raw settings, the config if the model validated
# them) -> (key, why) for each error.
ConfigCheck = Callable[[Mapping[str, Any], "ServiceConfig | None"], list[tuple[Location, str]]]


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[leaf] = value


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    flags: dict[str, str] | None = None,
    checks: ConfigCheck | None = None,
) -> ServiceConfig:
    """Build the service config from file, environment and flag overrides (dotted keys).

    ``flags`` names the command-line flag of each override (``{"receiver.grpc_port": "--grpc-port"}``),
    so an invalid value is reported as coming from it. ``checks`` finds what the model cannot (the
    service's: each rule's scorer and options, ``scoring.runtime.rule_check``); it runs whether the model
    validated or not, and its errors are reported with the model's, each at its key's source.
    """
    env = os.environ if environ is None else environ
    sources = Sources()
    path = path or env.get("TRACESCORE_CONFIG") or None
    if path:
        sources.file = read_config_file(path)
    data: dict[str, Any] = sources.file.data if sources.file else {}
    for var, dotted in ENV_KEYS.items():
        if env.get(var):
            _set_dotted(data, dotted, env[var])
            sources.given[dotted] = f"environment variable {var}"
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, dotted, value)
            sources.given[dotted] = f"flag {(flags or {}).get(dotted, dotted)}"
    config: ServiceConfig | None = None
    invalid: ValidationError | None = None
    try:
        config = ServiceConfig.model_validate(data)
    except ValidationError as exc:
        invalid = exc
    more = checks(data, config) if checks is not None else []
    if invalid is not None or more:
        raise ConfigError(explain(invalid, ServiceConfig, data, sources, more)) from None
    assert config is not None
    return config
