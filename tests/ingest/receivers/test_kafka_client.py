"""The Kafka client as installed checks every record batch's CRC-32C in native code (kafka-python's
``crc32c`` extra): in pure Python the check took half the receiver's CPU (bench/kafka_path.py)."""

from __future__ import annotations

from kafka.record import util


def test_record_batch_crcs_are_checked_natively() -> None:
    assert util.crc32c_c is not None, "kafka-python falls back to pure Python: install kafka-python[crc32c]"
    assert util.calc_crc32c(memoryview(b"123456789")) == 0xE3069283  # the CRC-32C check value
