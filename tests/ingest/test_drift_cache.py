"""The chunks a drift pass keeps between passes: a pass that reuses them gives the statistics exactly the
inputs, and so the findings, of a first pass over the same store."""

from __future__ import annotations

from datetime import timedelta

from tests.support.drift import NOW, Streams
from tracescore.ingest.alerting.drift_monitor import DriftMonitor, windows_for
from tracescore.ingest.alerting.score_series import DriftStore
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import DECISIONS_COLUMNS, SCORES_COLUMNS
from tracescore.schemas.drift_config import DriftConfig
from tracescore.scoring.drift.detect import Finding, SeriesData

# Where a row of each table holds what a replay changes.
SCORE, S_VERSION = SCORES_COLUMNS.index("Score"), SCORES_COLUMNS.index("Version")
DECISION, D_VERSION = DECISIONS_COLUMNS.index("Decision"), DECISIONS_COLUMNS.index("Version")

FIRST = NOW + timedelta(minutes=25)  # off the hour: the window's and the baseline's edges cut chunks
SECOND = NOW + timedelta(minutes=40)


def _inputs(data: SeriesData) -> tuple[object, ...]:
    return (
        data.baseline.values.tolist(), data.baseline.counts.tolist(), data.window.values.tolist(),
        data.window.counts.tolist(), data.bucket_means, data.bucket_sizes, data.baseline_buckets,
        data.baseline_decisions, data.window_decisions, data.threshold,
    )  # fmt: skip


async def test_a_pass_from_kept_chunks_after_new_and_replayed_scores_equals_a_first_pass(
    store: Store,
) -> None:
    streams = Streams(seed=31)
    streams.normal("relevancy", 3_000, 300, mean=0.8, window_mean=0.7)
    streams.normal("toxicity-scorer", 2_000, 100, mean=0.1, window_mean=0.1)
    start = NOW - timedelta(days=7, hours=2)
    streams.add_decisions("relevancy", streams.rng.random(400) < 0.1, streams.times(400, start, FIRST))
    await streams.write(store)
    config = DriftConfig()
    kept = DriftStore(store)
    await kept.read(windows_for(config, FIRST), int(config.bucket), {"relevancy": (0.5, "above")})
    monitor = DriftMonitor(store, config, {"relevancy": (0.5, "above")})
    await monitor.run_pass(FIRST, record=False)

    # New scores in the open hour, a score of an hour days ago replayed with a new value, a decision
    # replayed as failed, and a new series.
    scores, decisions = len(streams.scores), len(streams.decisions)
    streams.add("relevancy", [0.2] * 30, streams.times(30, FIRST, SECOND))
    streams.add(
        "faithfulness", [0.9, 0.8], streams.times(2, NOW - timedelta(days=3), NOW - timedelta(days=2))
    )
    replayed = list(streams.scores[1_500])  # mid-week
    replayed[SCORE], replayed[S_VERSION] = 0.123, replayed[S_VERSION] + 1
    streams.scores.append(replayed)
    decision = list(streams.decisions[3])
    decision[DECISION], decision[D_VERSION] = "failed", decision[D_VERSION] + 1
    streams.decisions.append(decision)
    await store.insert("scores", streams.scores[scores:], SCORES_COLUMNS)
    await store.insert("score_decisions", streams.decisions[decisions:], DECISIONS_COLUMNS)

    windows = windows_for(config, SECOND)
    again, _ = await kept.read(windows, int(config.bucket), {"relevancy": (0.5, "above")})
    fresh, _ = await DriftStore(store).read(windows, int(config.bucket), {"relevancy": (0.5, "above")})
    assert list(again) == sorted(fresh, key=lambda key: (*key[:3], key[3] or ""))  # decisions first
    assert {key: _inputs(data) for key, data in again.items()} == {k: _inputs(d) for k, d in fresh.items()}
    assert 0.123 in again[("relevancy", "svc", "agent", "1")].baseline.values

    cached = await monitor.run_pass(SECOND, record=False)
    first = await DriftMonitor(store, config, {"relevancy": (0.5, "above")}).run_pass(SECOND, record=False)
    assert sorted(cached.findings, key=_name) == cached.findings  # series in name order
    assert [f.as_json() for f in cached.findings] == [f.as_json() for f in sorted(first.findings, key=_name)]


def _name(finding: Finding) -> str:
    return finding.name


async def test_passes_from_kept_chunks_equal_full_reads_with_late_replayed_and_duplicated_rows(
    store: Store,
) -> None:
    """Random rounds of new scores (of a new scorer version from the third on), late scores in kept
    hours, scores and decisions replayed with a new version, and rows stored twice; the window is two
    hours, so whole chunks move from the window to the baseline, and some passes fall on the hour."""
    streams = Streams(seed=7)
    rng = streams.rng
    config = DriftConfig(window=7_200.0)
    start = NOW - timedelta(days=7, hours=3)
    for service in ("a", "b", "c"):
        streams.add("relevancy", rng.random(600).round(2), streams.times(600, start, NOW), service=service)
        streams.add_decisions("relevancy", rng.random(200) < 0.2, streams.times(200, start, NOW), service)
    await streams.write(store)
    kept = DriftStore(store)
    monitor = DriftMonitor(store, config)
    at = NOW
    for round_, step in enumerate([60, 5, 35, 20, 60]):  # 12:00, 13:00: a whole chunk moves side
        windows = windows_for(config, at)
        again, again_written = await kept.read(windows, int(config.bucket), {})
        fresh, fresh_written = await DriftStore(store).read(windows, int(config.bucket), {})
        assert {k: _inputs(d) for k, d in again.items()} == {k: _inputs(d) for k, d in fresh.items()}
        assert again_written == fresh_written
        cached = await monitor.run_pass(at, record=False)
        full = await DriftMonitor(store, config).run_pass(at, record=False)
        assert [f.as_json() for f in cached.findings] == [f.as_json() for f in full.findings]

        later = at + timedelta(minutes=step)
        scores, decisions = len(streams.scores), len(streams.decisions)
        service = str(rng.choice(["a", "b", "c", "d"]))
        version = "2" if round_ >= 2 else "1"  # the rule edited before the third round
        streams.add(
            "relevancy",
            rng.random(20).round(2),
            streams.times(20, at, later),
            service=service,
            version=version,
            written=later,
        )
        late = at - timedelta(days=int(rng.integers(1, 6)), hours=int(rng.integers(0, 24)))
        streams.add("relevancy", [0.999], streams.times(1, late, late + timedelta(minutes=1)), service="a")
        for row in rng.choice(scores, 3, replace=False):
            replayed = list(streams.scores[row])
            replayed[SCORE], replayed[S_VERSION] = round(rng.random(), 2), replayed[S_VERSION] + round_ + 1
            streams.scores.append(replayed)
        streams.scores.append(list(streams.scores[int(rng.integers(scores))]))  # stored twice
        decision = list(streams.decisions[int(rng.integers(decisions))])
        decision[DECISION], decision[D_VERSION] = "failed", decision[D_VERSION] + round_ + 1
        streams.decisions += [decision, list(streams.decisions[int(rng.integers(decisions))])]
        await store.insert("scores", streams.scores[scores:], SCORES_COLUMNS)
        await store.insert("score_decisions", streams.decisions[decisions:], DECISIONS_COLUMNS)
        at = later
