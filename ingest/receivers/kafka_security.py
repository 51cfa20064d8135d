"""The Kafka clients' security settings, built once from ``KafkaConfig`` for the consumer and the
dead-letter producer alike (kafka-python's parameter names).

Built at start, so a missing certificate file or an unreadable password file stops the service with
the key named, instead of the consumer thread retrying a connection that can never work. The SASL
password is registered as a secret: no log line, ``/readyz`` error or dead-letter reason shows it.
"""

from __future__ import annotations

from typing import Any

from tracescore.ingest.configuration.service_secrets import existing_file, secret_value
from tracescore.schemas.config import KafkaConfig


def kafka_client_options(config: KafkaConfig) -> dict[str, Any]:
    """``KafkaConsumer`` / ``KafkaProducer`` keyword arguments for the brokers' security.

    Raises ValueError naming the key when a file it names does not exist or cannot be read.
    """
    options: dict[str, Any] = {"security_protocol": config.security_protocol}
    if config.security_protocol.startswith("SASL_"):
        options["sasl_mechanism"] = config.sasl_mechanism
        # kafka-python names the user and password "plain" for every mechanism, SCRAM included.
        options["sasl_plain_username"] = config.sasl_username
        options["sasl_plain_password"] = secret_value(
            config.sasl_password, config.sasl_password_file, "kafka.sasl_password"
        )
    if config.security_protocol.endswith("SSL"):
        options["ssl_check_hostname"] = config.ssl_check_hostname
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = existing_file(getattr(config, key), f"kafka.{key}")
            if path is not None:
                options[key] = path
    return options
