"""Drift detection on synthetic score streams written to the real ``scores`` table (chDB): what is
flagged, what is not, the streaming detector, the findings rows, the command and the service loop."""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from tests.support.drift import NOW, Streams
from tests.support.service import running_service, service_config
from tracescore.ingest.alerting.drift_monitor import DriftMonitor, DriftReport, windows_for
from tracescore.ingest.alerting.score_series import DriftStore
from tracescore.ingest.cli import main
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import SCORES_COLUMNS
from tracescore.schemas.drift_config import CusumConfig, DriftConfig, ReferencePeriod

WINDOW_START = NOW - timedelta(hours=1)
BASELINE_START = WINDOW_START - timedelta(days=7)


async def drift_pass(
    store: Store, config: DriftConfig | None = None, thresholds: Mapping[str, tuple[float, str]] | None = None
) -> DriftReport:
    return await DriftMonitor(store, config or DriftConfig(), thresholds).run_pass(NOW)


async def test_a_mean_shift_of_one_and_a_half_sd_is_flagged_within_one_window(store: Store) -> None:
    streams = Streams(seed=11)
    streams.normal("relevancy", 2_000, 200, mean=0.8, window_mean=0.65)  # 0.15 lower, sd 0.1
    streams.normal("relevancy-steady", 2_000, 200, mean=0.8, window_mean=0.8)
    await streams.write(store)

    report = await drift_pass(store)
    found = {f.scorer_id: f for f in report.findings}
    shifted, steady = found["relevancy"], found["relevancy-steady"]
    assert shifted.drifted and shifted.state == "drifted" and shifted.severity == "critical"
    assert {"mann_whitney", "kolmogorov_smirnov", "psi"} <= set(shifted.reasons)
    assert (shifted.baseline_n, shifted.window_n) == (2_000, 200)
    assert shifted.effect == pytest.approx(-1.5, abs=0.25)
    assert shifted.p_value < 1e-10
    assert not steady.drifted and steady.state == "ok" and steady.reasons == []

    # The findings are rows of score_drift, one per series.
    rows = await store.query(
        f"SELECT ScorerId, Drifted, State, BaselineN, WindowN, Reasons, PValue, Effect "
        f"FROM {store.quoted_database}.score_drift ORDER BY ScorerId"
    )
    assert [(r["ScorerId"], r["Drifted"], r["State"], r["BaselineN"], r["WindowN"]) for r in rows] == [
        ("relevancy", 1, "drifted", 2_000, 200),
        ("relevancy-steady", 0, "ok", 2_000, 200),
    ]
    assert rows[0]["Reasons"] == shifted.reasons
    assert rows[0]["Effect"] == pytest.approx(shifted.effect)


async def test_fewer_than_one_percent_of_200_stationary_series_alarm(store: Store) -> None:
    streams = Streams(seed=12)
    for k in range(200):
        streams.normal(f"scorer-{k:03d}", 2_000, 200, mean=0.8, window_mean=0.8)
    await streams.write(store)

    report = await drift_pass(store)
    assert len(report.findings) == 200
    assert all(f.state != "insufficient" for f in report.findings)
    alarms = [f.name for f in report.drifted]
    assert len(alarms) < 2, alarms  # fewer than 1% of 200


async def test_a_slow_drift_is_caught_by_the_streaming_detector(store: Store) -> None:
    # 100 scores an hour; over the last two days the mean slides from 0.8 to 0.78 (0.2 sd). The last
    # window alone is too small a change to be significant; the run of low hours is not.
    streams = Streams(seed=13)
    hours = 7 * 24 + 1
    for hour in range(hours):
        start = BASELINE_START + timedelta(hours=hour)
        hours_left = hours - hour
        mean = 0.8 - (0.02 * (48 - hours_left) / 48 if hours_left < 48 else 0.0)
        values = np.clip(streams.rng.normal(mean, 0.1, 100), 0, 1)
        streams.add("faithfulness", values, streams.times(100, start, start + timedelta(hours=1)))
    await streams.write(store)

    (finding,) = (await drift_pass(store)).findings
    assert finding.drifted and finding.reasons == ["cusum"]
    assert finding.cusum_alarm and finding.cusum < -8.0  # downward
    assert finding.mann_whitney_p_value > 0.01

    # Without the streaming detector the same data is not flagged.
    quiet = DriftConfig(cusum=CusumConfig(enabled=False))
    (unflagged,) = (await DriftMonitor(store, quiet).run_pass(NOW, record=False)).findings
    assert not unflagged.drifted


async def test_pass_rate_and_failure_rate_changes(store: Store) -> None:
    streams = Streams(seed=14)
    # A binary scorer: 90% pass in the baseline, 70% in the window.
    base = streams.rng.random(1_000) < 0.9
    recent = streams.rng.random(300) < 0.7
    streams.add("is-helpful", base.astype(float), streams.times(1_000, BASELINE_START, WINDOW_START))
    streams.add("is-helpful", recent.astype(float), streams.times(300, WINDOW_START, NOW))
    # A judge that failed 2% of runs now fails 30%: its scores look the same, its decisions do not.
    streams.normal("judge-x", 1_000, 300, mean=0.7, window_mean=0.7)
    fail_base = streams.rng.random(1_000) < 0.02
    fail_recent = streams.rng.random(300) < 0.3
    streams.add_decisions("judge-x", fail_base, streams.times(1_000, BASELINE_START, WINDOW_START))
    streams.add_decisions("judge-x", fail_recent, streams.times(300, WINDOW_START, NOW))
    # A threshold makes a continuous scorer's pass rate: scores at or above 0.5 pass.
    streams.normal("tone", 1_000, 300, mean=0.6, window_mean=0.6)
    await streams.write(store)

    report = await drift_pass(store, thresholds={"tone": (0.5, "above")})
    found = {f.scorer_id: f for f in report.findings}
    helpful = found["is-helpful"]
    assert helpful.drifted and helpful.reasons[0] == "pass_rate"  # (the CUSUM sees the drop too)
    assert "mann_whitney" not in helpful.reasons  # 0/1 scores: the pass-rate test stands for the rest
    assert helpful.baseline_pass_rate == pytest.approx(base.mean())
    assert helpful.window_pass_rate == pytest.approx(recent.mean())
    judge = found["judge-x"]
    assert judge.drifted and judge.reasons == ["failure_rate"]
    assert judge.window_failure_rate == pytest.approx(fail_recent.mean())
    tone = found["tone"]
    assert not tone.drifted and tone.baseline_pass_rate == pytest.approx(0.84, abs=0.04)


async def test_series_with_too_few_scores_are_not_tested(store: Store) -> None:
    streams = Streams(seed=15)
    streams.normal("rare", 2_000, 10, mean=0.8, window_mean=0.2)  # a huge drop, but 10 scores
    await streams.write(store)
    (finding,) = (await drift_pass(store)).findings
    assert finding.state == "insufficient" and not finding.drifted and finding.window_n == 10


async def test_a_fixed_reference_period_is_the_baseline(store: Store) -> None:
    streams = Streams(seed=16)
    reference_start = BASELINE_START - timedelta(days=7)
    # The week before the baseline scored 0.9; the baseline and window both 0.8.
    streams.add(
        "relevancy",
        np.clip(streams.rng.normal(0.9, 0.05, 1_000), 0, 1),
        streams.times(1_000, reference_start, BASELINE_START),
    )
    streams.normal("relevancy", 1_000, 200, mean=0.8, window_mean=0.8)
    await streams.write(store)

    (preceding,) = (await drift_pass(store)).findings
    assert not preceding.drifted
    fixed = DriftConfig(reference=ReferencePeriod(start=reference_start, end=BASELINE_START))
    (against_reference,) = (await drift_pass(store, fixed)).findings
    assert against_reference.drifted and against_reference.baseline_n == 1_000
    assert against_reference.windows.baseline_start == reference_start


def test_the_command_prints_findings_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def seed() -> None:
        store = Store(str(tmp_path / "chdb"))
        await store.start()
        streams = Streams(seed=17)
        streams.normal("relevancy", 2_000, 200, mean=0.8, window_mean=0.65)
        await streams.write(store)
        await store.shutdown()

    asyncio.run(seed())
    until = NOW.isoformat()
    args = [
        "drift",
        "--store",
        str(tmp_path / "chdb"),
        "--window",
        "1h",
        "--baseline",
        "7d",
        "--until",
        until,
    ]
    assert main([*args, "--json"]) == 0
    (finding,) = json.loads(capsys.readouterr().out)
    assert {"scorer_id", "service_name", "agent_name", "drifted", "p_value", "effect"} <= finding.keys()
    assert (finding["scorer_id"], finding["service_name"], finding["agent_name"]) == (
        "relevancy",
        "svc",
        "agent",
    )
    assert finding["drifted"] is True
    assert (finding["baseline_n"], finding["window_n"]) == (2_000, 200)
    assert finding["window_start"] == (NOW - timedelta(hours=1)).isoformat()

    # The table names the series and why; a bad duration is a clear error.
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "relevancy" in table and "drifted" in table and "mann_whitney" in table
    assert main(["drift", "--store", str(tmp_path / "chdb"), "--window", "soon"]) == 2
    assert "'soon' is not a duration" in capsys.readouterr().err


async def test_the_service_runs_drift_passes_on_its_interval(tmp_path: Path) -> None:
    config = service_config(tmp_path, **{"drift.interval": "0.2s", "drift.window": "1h"})
    async with running_service(config) as service:
        streams = Streams(seed=18)
        now = datetime.now(UTC)
        streams.add("relevancy", [0.5] * 5, streams.times(5, now - timedelta(minutes=30), now))
        await streams.write(service.store)
        database = service.store.quoted_database
        for _ in range(100):
            rows = await service.store.query(f"SELECT ScorerId, State FROM {database}.score_drift")
            if rows:
                break
            await asyncio.sleep(0.1)
        assert rows and rows[0] == {"ScorerId": "relevancy", "State": "insufficient"}
        metrics = service.metrics.registry
        assert (metrics.get_sample_value("tracescore_drift_passes_total", {"outcome": "done"}) or 0) >= 1


async def test_the_monitor_starts_once_and_shuts_down_safely_whenever(store: Store) -> None:
    def loops() -> int:
        return sum(task.get_name() == "drift" and not task.done() for task in asyncio.all_tasks())

    registry = CollectorRegistry()
    monitor = DriftMonitor(store, DriftConfig(interval=0.05), registry=registry)
    await monitor.shutdown()  # before start: nothing to stop
    await monitor.start()
    await monitor.start()  # started already: still one loop
    assert loops() == 1
    for _ in range(100):
        if registry.get_sample_value("tracescore_drift_passes_total", {"outcome": "done"}):
            break
        await asyncio.sleep(0.05)
    assert (registry.get_sample_value("tracescore_drift_passes_total", {"outcome": "done"}) or 0) >= 1
    await monitor.shutdown()
    await monitor.shutdown()  # idempotent
    assert loops() == 0

    await DriftMonitor(store, DriftConfig(enabled=False)).start()
    assert loops() == 0  # disabled: the command's passes only


async def test_a_baseline_stored_under_a_former_id_is_the_baseline_of_the_scorer_s_name(store: Store) -> None:
    # Earlier releases stored content-similarity as "content-similarity-scorer": the week before the
    # upgrade is that series' baseline, the window after it is stored under the name.
    streams = Streams(seed=17)
    baseline = np.clip(streams.rng.normal(0.8, 0.1, 2_000), 0, 1)
    window = np.clip(streams.rng.normal(0.65, 0.1, 200), 0, 1)
    streams.add("content-similarity-scorer", baseline, streams.times(2_000, BASELINE_START, WINDOW_START))
    streams.add("content-similarity", window, streams.times(200, WINDOW_START, NOW))
    streams.add_decisions(
        "content-similarity-scorer", [False] * 10, streams.times(10, BASELINE_START, WINDOW_START)
    )
    streams.add_decisions("content-similarity", [True] * 10, streams.times(10, WINDOW_START, NOW))
    await streams.write(store)

    report = await drift_pass(store)
    [finding] = report.findings  # one series, not two halves each too short to test
    assert finding.scorer_id == "content-similarity"
    assert (finding.baseline_n, finding.window_n) == (2_000, 200)
    assert finding.drifted and finding.effect == pytest.approx(-1.5, abs=0.25)
    assert (finding.baseline_failure_rate, finding.window_failure_rate) == (0.0, 1.0)
    states = await store.query(f"SELECT ScorerId, State FROM {store.quoted_database}.score_drift")
    assert [(row["ScorerId"], row["State"]) for row in states] == [("content-similarity", "drifted")]


async def test_the_series_read_are_the_value_counts_and_bucket_sums_of_the_stored_scores(
    store: Store,
) -> None:
    # Scores a hair off multiples of 1e-3 (so rounding is unambiguous), many tied, a replayed score
    # (FINAL keeps its newer version only), a series with no baseline, and scores in the hour between
    # a fixed reference period and the window, which belong to neither side but to the buckets.
    streams = Streams(seed=23)
    reference = ReferencePeriod(start=BASELINE_START, end=WINDOW_START - timedelta(hours=1))
    gap = (reference.end, WINDOW_START)
    sides = {"baseline": (reference.start, reference.end), "gap": gap, "window": (WINDOW_START, NOW)}
    written: dict[str, tuple[list[float], list[int]]] = {}
    for scorer, parts in {"tied": ("baseline", "gap", "window"), "new": ("window",)}.items():
        for side in parts:
            n = 300 if side == "baseline" else 40
            values = streams.rng.integers(700, 720, n) / 1000 + streams.rng.uniform(-1e-5, 1e-5, n)
            starts = streams.times(n, *sides[side])
            streams.add(scorer, values, starts)
            kept = written.setdefault(f"{scorer}/{side}", ([], []))
            kept[0].extend(values.tolist())
            kept[1].extend(starts)
    replayed = list(streams.scores[0])
    version = SCORES_COLUMNS.index("Version")
    replayed[6], replayed[version] = 0.5, replayed[version] + 1  # Score, Version
    streams.scores.append(replayed)
    written["tied/baseline"][0][0] = 0.5
    await streams.write(store)

    windows = windows_for(DriftConfig(reference=reference), NOW)
    series, versions_written = await DriftStore(store).read(windows, 3_600, {})
    assert set(series) == {("tied", "svc", "agent", "1"), ("new", "svc", "agent", "1")}
    assert versions_written == {}  # one version per series: no need to know when each was written
    for scorer in ("tied", "new"):
        data = series[(scorer, "svc", "agent", "1")]
        for side, counts in (("baseline", data.baseline), ("window", data.window)):
            expected = Counter(round(v, 3) for v in written.get(f"{scorer}/{side}", ([], []))[0])
            assert dict(zip(counts.values.tolist(), counts.counts.tolist(), strict=True)) == expected
            assert counts.values.tolist() == sorted(expected)
        by_hour: dict[int, list[float]] = defaultdict(list)
        for scores, starts in (written[k] for k in written if k.startswith(f"{scorer}/")):
            for value, start in zip(scores, starts, strict=True):
                by_hour[start // 3_600_000_000_000 * 3_600].append(value)
        hours = sorted(by_hour)
        assert data.bucket_sizes == [len(by_hour[h]) for h in hours]
        assert data.bucket_means == pytest.approx([float(np.mean(by_hour[h])) for h in hours], rel=1e-12)
        assert data.baseline_buckets == sum(h < reference.end.timestamp() for h in hours)
