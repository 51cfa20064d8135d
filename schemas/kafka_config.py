"""The ``kafka`` section of the service config: the topics to consume, the consumer group, the
dead-letter topic and the brokers' security."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

DEFAULT_KAFKA_GROUP = "tracescore"

_SASL_KEYS = ("sasl_mechanism", "sasl_username", "sasl_password", "sasl_password_file")
_SSL_FILE_KEYS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")


class KafkaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
