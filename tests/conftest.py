"""Shared pytest fixtures: each component's fixtures live in their own module and are imported here."""

# --- ClickHouse store fixtures (tests/store_fixtures.py) ---
# --- Kafka-compatible broker (tests/kafka_fixtures.py) ---
from tests.kafka_fixtures import kafka_bootstrap  # noqa: E402, F401
from tests.store_fixtures import store  # noqa: F401
