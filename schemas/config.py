"""Service configuration: one pydantic model per component, validated once.

Precedence, highest first: command-line flags, ``TRACESCORE_*`` environment variables, the config
file (YAML or JSON), then the defaults named below. The loader that reads them is
``ingest.configuration.config_loader``; the models here validate the values it gives them.
"""

from __future__ import annotations

from pydantic import BaseModel, ByteSize, ConfigDict, Field, model_validator

from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.schemas.config_source import ConfigError
from tracescore.schemas.drift_config import DriftConfig
from tracescore.schemas.environment import ENV_KEYS
from tracescore.schemas.export_config import ExportConfig, OtlpExportConfig
from tracescore.schemas.kafka_config import KafkaConfig
from tracescore.schemas.receiver_config import ReceiverConfig
from tracescore.schemas.rules import RunFilter, ScorerRule
from tracescore.schemas.scoring_config import JudgeConfig, RedactConfig, ScoringConfig
from tracescore.schemas.session_config import SessionConfig
from tracescore.schemas.store_config import StoreConfig
from tracescore.schemas.store_database import DEFAULT_DATABASE

# Re-exported: every part of the config is importable from here.
__all__ = [
    "DEFAULT_DATABASE",
    "AgreementConfig",
    "ENV_KEYS",
    "ConfigError",
    "DriftConfig",
    "ExportConfig",
    "JudgeConfig",
    "KafkaConfig",
    "OtlpExportConfig",
    "ReceiverConfig",
    "RedactConfig",
    "RunFilter",
    "ScorerRule",
    "ScoringConfig",
    "StoreConfig",
]

DEFAULT_IDLE_SECONDS = 2.0
DEFAULT_MAX_WAIT_SECONDS = 300.0
DEFAULT_MAX_TRACES = 100_000
DEFAULT_MAX_SPANS_PER_TRACE = 2_000
DEFAULT_MAX_HELD_BYTES = 256 * 1024 * 1024
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
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


class ServiceConfig(StoreConfig):
    """The whole config: the store keys (``StoreConfig``) at the top level, then one section per
    component, and the memory bound."""

    receiver: ReceiverConfig = Field(default_factory=ReceiverConfig)
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    assembly: AssemblyConfig = Field(default_factory=AssemblyConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    replica: ReplicaConfig = Field(default_factory=ReplicaConfig)
    drift: DriftConfig = Field(default_factory=DriftConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    agreement: AgreementConfig = Field(default_factory=AgreementConfig)
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
