"""Drift compares like with like: a series is compared within its scorer's current version, and a change
of version is a finding of its own, never drift (scores written to the real tables, chDB)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from tests.support.drift import NOW, Streams, serving_hooks
from tracescore.ingest.alerting.drift_monitor import DriftMonitor, windows_for
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import SCORES_COLUMNS
from tracescore.schemas.drift_config import DriftConfig
from tracescore.scoring.drift.detect import Finding

OLD, NEW = "1+aaaa0001", "1+bbbb0002"
WINDOW_START = NOW - timedelta(hours=1)
BASELINE_START = WINDOW_START - timedelta(days=7)
CHANGED = NOW - timedelta(minutes=30)  # the rule was edited half an hour ago


def _by_kind(findings: list[Finding], scorer: str) -> dict[str, Finding]:
    return {f.kind: f for f in findings if f.scorer_id == scorer}


def _edited_half_an_hour_ago(streams: Streams, scorer: str, new_mean: float) -> None:
    """A week of the old version's scores (mean 0.8), then the new version's since ``CHANGED``."""
    rng = streams.rng
    old = np.clip(rng.normal(0.8, 0.1, 2_000), 0, 1)
    new = np.clip(rng.normal(new_mean, 0.1, 200), 0, 1)
    streams.add(scorer, old, streams.times(2_000, BASELINE_START, CHANGED), version=OLD, written=CHANGED)
    streams.add(scorer, new, streams.times(200, CHANGED, NOW), version=NEW, written=NOW)


async def test_a_version_change_with_a_real_shift_is_its_own_finding_and_no_drift(store: Store) -> None:
    streams = Streams(seed=41)
    _edited_half_an_hour_ago(streams, "relevancy", new_mean=0.65)  # the new version scores 0.15 lower
    await streams.write(store)

    registry = CollectorRegistry()
    report = await DriftMonitor(store, DriftConfig(), registry=registry).run_pass(NOW)
    found = _by_kind(report.findings, "relevancy")
    assert set(found) == {"drift", "version_change"}
    change, drift = found["version_change"], found["drift"]
    assert (change.previous_version, change.version) == (OLD, NEW)
    assert change.version_changed_at == NOW  # when the new version's first score was written
    assert (change.baseline_n, change.window_n) == (2_000, 200)
    assert change.baseline_mean == pytest.approx(0.8, abs=0.01)
    assert change.window_mean - change.baseline_mean == pytest.approx(-0.15, abs=0.02)
    assert change.mann_whitney_p_value < 1e-10 and change.p_value == change.mann_whitney_p_value
    assert change.state == "version_changed" and not change.drifted and change.reasons == []
    # The new version has no baseline yet: no drift verdict, and the old version's scores are not its.
    assert (drift.version, drift.state, drift.drifted) == (NEW, "insufficient", False)
    assert (drift.baseline_n, drift.window_n) == (0, 200)
    assert report.drifted == []
    assert registry.get_sample_value("tracescore_drift_version_changes") == 1.0

    rows = await store.query(
        f"SELECT Kind, State, Drifted, ScorerVersion, PreviousVersion, VersionChangedAt, BaselineN, WindowN "
        f"FROM {store.quoted_database}.score_drift ORDER BY Kind"
    )
    assert [tuple(row.values()) for row in rows] == [
        ("drift", "insufficient", 0, NEW, "", None, 0, 200),
        ("version_change", "version_changed", 0, NEW, OLD, NOW.replace(tzinfo=None), 2_000, 200),
    ]


async def test_the_same_shift_within_one_version_is_drift(store: Store) -> None:
    # The control of the test above: the same scores, all of one version, are flagged.
    streams = Streams(seed=41)
    _edited_half_an_hour_ago(streams, "relevancy", new_mean=0.65)
    for row in streams.scores:
        row[5] = OLD
    await streams.write(store)
    (finding,) = (await DriftMonitor(store, DriftConfig()).run_pass(NOW, record=False)).findings
    assert (finding.kind, finding.version, finding.drifted) == ("drift", OLD, True)


async def test_a_real_drift_within_the_current_version_is_still_found(store: Store) -> None:
    # Version OLD scored 0.3 for a day a week ago; NEW has scored 0.8 since and drops in the window.
    streams = Streams(seed=42)
    edited = BASELINE_START + timedelta(days=1)
    streams.add(
        "tone", np.full(300, 0.3), streams.times(300, BASELINE_START, edited), version=OLD, written=edited
    )
    for n, mean, start, end in ((1_500, 0.8, edited, WINDOW_START), (200, 0.65, WINDOW_START, NOW)):
        values = np.clip(streams.rng.normal(mean, 0.1, n), 0, 1)
        streams.add("tone", values, streams.times(n, start, end), version=NEW, written=NOW)
    await streams.write(store)

    found = _by_kind((await DriftMonitor(store, DriftConfig()).run_pass(NOW, record=False)).findings, "tone")
    drift = found["drift"]
    assert drift.drifted and drift.version == NEW
    assert (drift.baseline_n, drift.window_n) == (1_500, 200)  # NEW's alone
    assert drift.baseline_mean == pytest.approx(0.8, abs=0.01)  # OLD's 0.3s left out
    assert found["version_change"].previous_version == OLD


async def test_kept_chunks_stay_true_across_a_version_change(store: Store) -> None:
    # A monitor that kept a week of chunks of the old version, then the rule is edited: its next pass
    # equals a new monitor's first pass over the same store.
    streams = Streams(seed=43)
    streams.normal("relevancy", 2_000, 200, mean=0.8, window_mean=0.8)
    for row in streams.scores:
        row[5] = OLD
    await streams.write(store)
    config = DriftConfig()
    kept = DriftMonitor(store, config)
    first = await kept.run_pass(NOW, record=False)
    assert [(f.kind, f.version) for f in first.findings] == [("drift", OLD)]

    later = NOW + timedelta(minutes=20)
    scores = len(streams.scores)
    streams.add("relevancy", [0.4] * 50, streams.times(50, NOW, later), version=NEW, written=later)
    await store.insert("scores", streams.scores[scores:], SCORES_COLUMNS)
    again = await kept.run_pass(later, record=False)
    fresh = await DriftMonitor(store, config).run_pass(later, record=False)
    assert [f.as_json() for f in again.findings] == [f.as_json() for f in fresh.findings]
    assert [(f.kind, f.version) for f in again.findings] == [("drift", NEW), ("version_change", NEW)]


async def test_a_version_change_is_told_once_to_each_webhook_as_its_own_kind(store: Store) -> None:
    streams = Streams(seed=44)
    _edited_half_an_hour_ago(streams, "relevancy", new_mean=0.65)
    await streams.write(store)
    async with serving_hooks() as hooks:
        hooks.fail["/slack"] = 1  # refuses the first post: told again at the next pass
        webhooks = [
            {"url": f"{hooks.url}/generic", "name": "ops"},
            {"url": f"{hooks.url}/slack", "format": "slack", "name": "team"},
        ]
        config = DriftConfig.model_validate({"webhooks": webhooks, "retries": 0})
        monitor = DriftMonitor(store, config)
        await monitor.run_pass(NOW)
        await monitor.run_pass(NOW + timedelta(minutes=5))  # the same change: told only where refused
        await monitor.run_pass(NOW + timedelta(minutes=10))
    [body] = hooks.bodies("/generic")
    assert body["kind"] == "version_change"
    [series] = body["series"]
    assert (series["scorer_id"], series["previous_version"], series["version"]) == ("relevancy", OLD, NEW)
    assert series["drifted"] is False
    refused, slack = hooks.bodies("/slack")
    assert refused == slack
    assert slack["text"].startswith(
        ":arrows_counterclockwise: tracescore: the scorer version changed in 1 series"
    )
    assert (
        f"relevancy changed version at 2026-11-20 12:00 UTC ({OLD} → {NEW}); the new version" in slack["text"]
    )


def test_a_version_change_reads_as_a_sentence() -> None:
    windows = windows_for(DriftConfig(), NOW)
    change = Finding(
        "toxicity",
        "svc",
        "agent",
        windows=windows,
        baseline_n=500,
        window_n=80,
        baseline_mean=0.31,
        window_mean=0.19,
        mann_whitney_p_value=3e-5,
        p_value=3e-5,
        kind="version_change",
        state="version_changed",
        version="1+c3d4e5f6",
        previous_version="1+a1b2c3d4",
        version_changed_at=datetime(2026, 11, 20, 14, 2, tzinfo=UTC),
    )
    assert change.summary == (
        "toxicity changed version at 2026-11-20 14:02 UTC (1+a1b2c3d4 → 1+c3d4e5f6); "
        "the new version scores 0.120 lower than the old (mean 0.310 → 0.190, n 500 → 80, "
        "Mann-Whitney p=3e-05)"
    )


OLD_VIEW = """ALTER TABLE {db}.scores_by_scorer_mv MODIFY QUERY
SELECT ScorerId, SpanStart, TraceId, SpanId, ServiceName, AgentName, Score, Label, JudgeModel, InputTokens,
       OutputTokens, CostUsd, LatencyMs, Source, Timestamp, Version
FROM {db}.scores"""


async def test_a_store_of_an_earlier_release_keeps_its_rows_and_gains_the_versions(tmp_path: Path) -> None:
    # A store as earlier releases made it: no ScorerVersion by scorer, a view that did not copy it, and
    # drift rows without a kind. Opening it with this release adds them; the earlier rows hold ''.
    path = str(tmp_path / "chdb")
    earlier = Store(path)
    await earlier.start()
    db = earlier.quoted_database
    try:
        await earlier.query(OLD_VIEW.format(db=db))
        await earlier.query(f"ALTER TABLE {db}.scores_by_scorer DROP COLUMN ScorerVersion")
        for column in ("Kind", "ScorerVersion", "PreviousVersion", "VersionChangedAt"):
            await earlier.query(f"ALTER TABLE {db}.score_drift DROP COLUMN {column}")
        streams = Streams(seed=45)
        streams.add("relevancy", [0.5], streams.times(1, BASELINE_START, WINDOW_START), version="0.1.0")
        await streams.write(earlier)
        await earlier.query(
            f"INSERT INTO {db}.score_drift (CheckedAt, ScorerId, State) VALUES (now(), 'relevancy', 'ok')"
        )
    finally:
        await earlier.shutdown()

    store = Store(path)
    await store.start()
    try:
        streams = Streams(seed=46)
        streams.add("relevancy", [0.7], streams.times(1, WINDOW_START, NOW), version=NEW)
        streams.scores[0][0:4] = ["new-row", streams.scores[0][1], "f" * 32, "f" * 16]  # another span
        await streams.write(store)
        rows = await store.query(
            f"SELECT Score, ScorerVersion FROM {db}.scores_by_scorer FINAL ORDER BY Score"
        )
        assert [(r["Score"], r["ScorerVersion"]) for r in rows] == [(0.5, ""), (0.7, NEW)]
        drift = await store.query(f"SELECT Kind, ScorerVersion FROM {db}.score_drift")
        assert [(r["Kind"], r["ScorerVersion"]) for r in drift] == [("drift", "")]
    finally:
        await store.shutdown()
