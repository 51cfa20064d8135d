"""Shared pytest fixtures: each component's fixtures live in their own module and are imported here."""

# --- ClickHouse store fixtures (tests/store_fixtures.py) ---
# --- Kafka-compatible broker (tests/kafka_fixtures.py) ---
# --- Local OpenAI-compatible server for LLM-judge tests (tests/llm_server.py; importing it also
#     sets LITELLM_LOCAL_MODEL_COST_MAP so litellm never downloads its price list in tests) ---
from tests.kafka_fixtures import kafka_bootstrap  # noqa: E402, F401
from tests.llm_server import llm_server  # noqa: F401
from tests.store_fixtures import store  # noqa: F401
