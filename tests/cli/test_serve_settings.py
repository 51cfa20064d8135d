"""``tracescore serve``'s settings as its help shows them: every environment variable with its config
key, and the flags that set receiver keys."""

from __future__ import annotations

import re

import pytest

from ingest.cli.serve import environment_help
from schemas.config import ENV_KEYS


@pytest.mark.parametrize(
    "variable",
    [
        "TRACESCORE_HEADER_TIMEOUT_SECONDS",
        "TRACESCORE_IDLE_TIMEOUT_SECONDS",
        "TRACESCORE_BODY_TIMEOUT_SECONDS",
        "TRACESCORE_MAX_CONNECTIONS",
        "TRACESCORE_MAX_CONNECTIONS_PER_CLIENT",
    ],
)
def test_serve_help_lists_each_connection_limit_with_its_key(variable: str) -> None:
    key = ENV_KEYS[variable]
    assert key.startswith("receiver.")
    assert re.search(rf"^  {variable} +{re.escape(key)}$", environment_help(), re.MULTILINE)
