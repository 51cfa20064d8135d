"""The ``export`` section of the service config: where scores go besides the store.

Today one destination: OTLP, each score as a ``gen_ai.evaluation.result`` event (see
``ingest.score_export.evaluation_events``). ``schemas.config`` loads the whole config.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

# The OpenTelemetry SDK's own defaults (OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_BLRP_*), so an operator who
# knows them finds no surprise.
DEFAULT_EXPORT_TIMEOUT_SECONDS = 10.0
DEFAULT_EXPORT_QUEUE_SIZE = 2048
DEFAULT_EXPORT_BATCH_SIZE = 512
DEFAULT_EXPORT_SCHEDULE_DELAY_SECONDS = 1.0
# Events wait in memory while the receiver is slow or down; at about 2 kB an event (a judge's
# explanation is most of it) this caps them near 200 MB, whatever the config says.
MAX_EXPORT_QUEUE_SIZE = 100_000
# How long shutdown waits for queued events to be sent before it drops them (counted).
DEFAULT_EXPORT_SHUTDOWN_SECONDS = 5.0
LOGS_PATH = "/v1/logs"


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OtlpExportConfig(_Config):
    """An OTLP receiver (a collector, Tempo, Jaeger, a vendor) that is sent every score written.

    ``endpoint`` None: nothing is sent. gRPC takes ``http://host:4317`` (plain text),
    ``https://host:4317`` (TLS) or ``host:4317`` (TLS unless ``insecure``), as the collector's
    otlp exporter does; OTLP/HTTP takes a URL, ``/v1/logs`` added unless the path ends with it.
    """

    endpoint: str | None = None
    protocol: Literal["grpc", "http/protobuf"] = "grpc"
    # Sent with every export (an API key, a tenant id). Values are secrets: never in logs or reprs.
    # From the environment as OTEL_EXPORTER_OTLP_HEADERS writes them: "key=value,key2=value2".
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    # gRPC without TLS. None: from the endpoint's scheme (http:// plain text; https:// or none, TLS).
    insecure: bool | None = None
    # One export request, its retries included (the SDK backs off exponentially within it).
    timeout_seconds: float = Field(default=DEFAULT_EXPORT_TIMEOUT_SECONDS, gt=0)
    # Events waiting to be sent; when it is full, new events are dropped and counted
    # (tracescore_evaluation_events_dropped_total{reason="queue_full"}). Scoring never waits.
    max_queue_size: int = Field(default=DEFAULT_EXPORT_QUEUE_SIZE, gt=0, le=MAX_EXPORT_QUEUE_SIZE)
    max_export_batch_size: int = Field(default=DEFAULT_EXPORT_BATCH_SIZE, gt=0)  # at most max_queue_size
    schedule_delay_seconds: float = Field(default=DEFAULT_EXPORT_SCHEDULE_DELAY_SECONDS, gt=0)
    shutdown_timeout_seconds: float = Field(default=DEFAULT_EXPORT_SHUTDOWN_SECONDS, gt=0)

    @field_validator("endpoint")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return value.strip() or None

    @field_validator("headers", mode="before")
    @classmethod
    def _headers_from_text(cls, value: Any) -> Any:
        """Accept "key=value,key2=value2" (percent-encoded values), the form environment variables use."""
        if not isinstance(value, str):
            return value
        headers: dict[str, str] = {}
        for pair in value.split(","):
            if not pair.strip():
                continue
            key, equals, item = pair.partition("=")
            if not equals or not key.strip():
                raise ValueError("headers must be key=value pairs separated by commas")
            headers[key.strip()] = unquote(item.strip())
        return headers

    @field_validator("headers")
    @classmethod
    def _lowercase_keys(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        # gRPC refuses metadata keys with capitals; HTTP does not care about case.
        return {key.lower(): item for key, item in value.items()}

    @model_validator(mode="after")
    def _endpoint_fits_protocol(self) -> OtlpExportConfig:
        if self.endpoint is None:
            return self
        scheme = urlsplit(self.endpoint).scheme.lower() if "://" in self.endpoint else ""
        if scheme not in ("", "http", "https"):
            raise ValueError(f"export.otlp.endpoint must be http:// or https://, not {scheme}://")
        if self.protocol == "http/protobuf":
            if not scheme:
                raise ValueError("export.otlp.endpoint needs http:// or https:// with protocol http/protobuf")
            if self.insecure is not None:
                raise ValueError("export.otlp.insecure is for grpc; with http/protobuf the scheme decides")
        if scheme == "https" and self.insecure:
            raise ValueError("export.otlp.endpoint is https:// (TLS) but export.otlp.insecure is true")
        if scheme == "http" and self.insecure is False:
            raise ValueError("export.otlp.endpoint is http:// (plain text): use https:// for TLS")
        return self

    @model_validator(mode="after")
    def _batch_within_queue(self) -> OtlpExportConfig:
        if "max_export_batch_size" not in self.model_fields_set:
            # A small queue makes the default batch smaller rather than the config invalid.
            self.max_export_batch_size = min(self.max_export_batch_size, self.max_queue_size)
        elif self.max_export_batch_size > self.max_queue_size:
            raise ValueError("export.otlp.max_export_batch_size must not exceed export.otlp.max_queue_size")
        return self

    @property
    def enabled(self) -> bool:
        return self.endpoint is not None

    @property
    def plaintext(self) -> bool:
        """gRPC without TLS: an http:// endpoint, or ``insecure`` on one without a scheme."""
        endpoint = (self.endpoint or "").lower()
        return endpoint.startswith("http://") or (self.insecure is True and "://" not in endpoint)

    @property
    def logs_url(self) -> str:
        """The OTLP/HTTP URL logs are posted to: the endpoint, ``/v1/logs`` added as OTel SDKs do."""
        endpoint = (self.endpoint or "").rstrip("/")
        return endpoint if endpoint.endswith(LOGS_PATH) else endpoint + LOGS_PATH


class ExportConfig(_Config):
    """Destinations of the scores written, besides the store."""

    otlp: OtlpExportConfig = Field(default_factory=OtlpExportConfig)
