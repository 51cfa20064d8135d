"""``tracescore serve``'s settings as its help shows them: every environment variable with its config
key, and the flags that set receiver keys."""

from __future__ import annotations

import re

import pytest

from tracescore.ingest.cli import build_parser
from tracescore.ingest.cli.serve_command import environment_help, service_config
from tracescore.schemas.config import ENV_KEYS


@pytest.mark.parametrize(
    "variable",
    [
        "TRACESCORE_HEADER_TIMEOUT_SECONDS",
        "TRACESCORE_IDLE_TIMEOUT_SECONDS",
        "TRACESCORE_BODY_TIMEOUT_SECONDS",
        "TRACESCORE_MAX_CONNECTIONS",
        "TRACESCORE_MAX_CONNECTIONS_PER_CLIENT",
        "TRACESCORE_HEALTH_PORT",
    ],
)
def test_serve_help_lists_each_connection_limit_with_its_key(variable: str) -> None:
    key = ENV_KEYS[variable]
    assert key.startswith("receiver.")
    assert re.search(rf"^  {variable} +{re.escape(key)}$", environment_help(), re.MULTILINE)


def test_the_health_port_flag_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACESCORE_HEALTH_PORT", "13134")
    assert service_config(build_parser().parse_args(["serve"])).receiver.health_port == 13134
    args = build_parser().parse_args(["serve", "--health-port", "13133"])
    assert service_config(args).receiver.health_port == 13133
