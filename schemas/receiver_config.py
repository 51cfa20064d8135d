"""The ``receiver`` section of the service config: the OTLP ports, request bounds, connection limits
and deadlines, authentication and TLS."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

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


class ReceiverConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
