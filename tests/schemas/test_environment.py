"""``TRACESCORE_*`` variables that tracescore does not read are found, each with the one meant."""

from __future__ import annotations

from tracescore.schemas.environment import ENV_KEYS, unknown_variables


def test_unknown_variables_are_named_with_the_closest_known_one() -> None:
    environ = {
        "TRACESCORE_GRPCPORT": "4317",
        "TRACESCORE_JUDGE_MODLE": "openai/gpt-4o-mini",
        "TRACESCORE_SOMETHING": "x",
        "TRACESCORE_STORE": "./data",  # known
        "TRACESCORE_CONFIG": "t.yaml",  # read beside the config keys
        "TRACESCORE_URL": "http://127.0.0.1:4318",  # tracescore scores
        "TRACESCORE_BENCH_WATCH_ROWS": "10",  # the benchmarks'
        "OTHER_GRPCPORT": "1",
    }
    assert unknown_variables(environ) == [
        ("TRACESCORE_GRPCPORT", "TRACESCORE_GRPC_PORT"),
        ("TRACESCORE_JUDGE_MODLE", "TRACESCORE_JUDGE_MODEL"),
        ("TRACESCORE_SOMETHING", None),
    ]
    assert unknown_variables(dict.fromkeys(ENV_KEYS, "x")) == []
