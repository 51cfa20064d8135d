"""The judge throughput row's figures (``bench.judge_throughput.summary``): calls per second per
side from the repeats' wall times, each side's CPU per call, and the ratios that say where the gap is."""

from __future__ import annotations

from bench.judge import CALLS_PER_RUN, Timing
from bench.judge_throughput import RUNS, summary


def test_the_figures_are_medians_of_calls_per_second_and_the_least_cpu_per_call() -> None:
    calls = RUNS * CALLS_PER_RUN
    measured = {
        "times": {
            "ours": [Timing(calls / 100, 3e-3 * calls, 0), Timing(calls / 120, 2.9e-3 * calls, 0)],
            "aiohttp": [Timing(calls / 1_000, 2e-4 * calls, 0), Timing(calls / 1_200, 1.5e-4 * calls, 0)],
            "bare_litellm": [Timing(calls / 110, 3e-3 * calls, 0)],
            "aiohttp_0ms_server": [Timing(calls / 1_100, 3e-4 * calls, 0)],
        },
        "server_cpu_share": [0.2, None],
    }

    detail = summary(measured)

    assert detail["median_calls_per_s"] == {
        "ours": 110,
        "aiohttp": 1_100,
        "bare_litellm": 110,
        "aiohttp_0ms_server": 1_100,
    }
    assert detail["repeats_calls_per_s"]["ours"] == [100, 120]
    assert detail["cpu_us_per_call"] == {
        "ours": 2_900,
        "aiohttp": 150,
        "bare_litellm": 3_000,
        "aiohttp_0ms_server": 300,
    }
    assert detail["ours_vs_bare_litellm"] == 1.0
    assert detail["bare_litellm_vs_aiohttp"] == 0.1
    assert detail["server_cpu_share_during_aiohttp"] == [0.2]  # a repeat without /proc says nothing
    assert detail["ideal_calls_per_s"] == 5_120
