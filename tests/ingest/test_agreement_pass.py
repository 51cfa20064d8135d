"""Agreement passes on a real store: labels paired with the scores of the same units (each person's
latest label, each score once), the measures recorded in judge_agreement, the gauges, and the webhook
alert, its cooldown and the recovery."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from tests.support.drift import serving_hooks
from tracescore.ingest.alerting.agreement_monitor import AgreementMonitor, agreement_rows
from tracescore.ingest.observability.service_metrics import AgreementMetrics
from tracescore.ingest.store.annotation_rows import insert_annotations
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import SCORES_COLUMNS, score_row
from tracescore.schemas import ScoreRecord
from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.schemas.annotations import Annotation
from tracescore.schemas.drift_config import DriftConfig

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
CONFIG = AgreementConfig(window=7 * 86_400, min_pairs=10, min_kappa=0.4, drop_alpha=0.01)


def unit(index: int) -> tuple[str, str]:
    return f"{index:032x}", f"{index:016x}"


async def score_units(store: Store, first: int, count: int, days_ago: float, scorer: str = "tone") -> None:
    """``count`` units scored ``days_ago``: labels pass and fail in turn, scores 0.9 and 0.1."""
    rows = []
    for index in range(first, first + count):
        trace_id, span_id = unit(index)
        passed = index % 2 == 0
        record = ScoreRecord(
            trace_id=trace_id,
            span_id=span_id,
            scorer_id=scorer,
            score=0.9 if passed else 0.1,
            label="pass" if passed else "fail",
            created_at=NOW - timedelta(days=days_ago),
        )
        rows.append(score_row(record))
        if index % 3 == 0:
            rows.append(score_row(record))  # written again (a replay): still one score
    await store.insert("scores", rows, SCORES_COLUMNS)


async def label_units(store: Store, first: int, count: int, agree: bool, annotator: str = "ann") -> None:
    """A person's labels of the units: the scorer's label and score (``agree``), or the opposite."""
    labels = []
    for index in range(first, first + count):
        trace_id, span_id = unit(index)
        passed = (index % 2 == 0) == agree
        labels.append(
            Annotation(
                trace_id=trace_id,
                span_id=span_id,
                name="tone",
                value=0.9 if passed else 0.1,
                label="Pass" if passed else "fail",
                annotator=annotator,
                source="api",
                time=NOW + timedelta(seconds=index if agree else 0),
            )
        )
    await insert_annotations(store, labels)


async def test_a_pass_pairs_labels_with_scores_and_records_the_drop(store: Store) -> None:
    await score_units(store, 0, 40, days_ago=10)  # the window before: people agree
    await label_units(store, 0, 40, agree=True)
    await score_units(store, 100, 40, days_ago=2)  # this window: people disagree on a fifth of the units
    await label_units(store, 100, 32, agree=True)
    await label_units(store, 132, 8, agree=False)
    registry = CollectorRegistry()
    monitor = AgreementMonitor(store, CONFIG, DriftConfig(), metrics=AgreementMetrics(registry))

    report = await monitor.run_pass(NOW)

    (finding,) = report.findings
    row = finding.row
    assert (row.scorer_id, row.label_pairs, row.score_pairs, row.annotators) == ("tone", 40, 40, 1)
    assert row.kappa == pytest.approx(0.6) and finding.previous is not None and finding.previous.kappa == 1.0
    assert finding.state == "dropped" and finding.drop_p_value is not None and finding.drop_p_value < 0.01
    (stored,) = await store.query("SELECT State, Kappa, PreviousKappa, LabelPairs FROM judge_agreement")
    assert stored == {"State": "dropped", "Kappa": pytest.approx(0.6), "PreviousKappa": 1.0, "LabelPairs": 40}
    gauge = registry.get_sample_value("tracescore_judge_agreement", {"scorer": "tone", "measure": "kappa"})
    assert gauge == pytest.approx(0.6)
    assert (
        registry.get_sample_value("tracescore_judge_agreement_state", {"scorer": "tone", "state": "dropped"})
        == 1.0
    )
    # The same period, read without a pass: the window's row only, nothing recorded.
    (rows,) = [await agreement_rows(store, NOW - timedelta(days=7), NOW, CONFIG)]
    assert rows == [row]
    assert len(await store.query("SELECT 1 FROM judge_agreement")) == 1


async def test_a_new_label_of_the_same_person_replaces_the_old_one_in_the_pairs(store: Store) -> None:
    await score_units(store, 0, 20, days_ago=1)
    await label_units(store, 0, 20, agree=False)
    await label_units(store, 0, 20, agree=False, annotator="bob")

    await label_units(store, 0, 20, agree=True)  # ann changes her mind

    (row,) = await agreement_rows(store, NOW - timedelta(days=7), NOW, CONFIG)
    assert (row.label_pairs, row.annotators) == (40, 2)  # ann's latest and bob's
    assert row.kappa is not None and abs(row.kappa) < 1e-9  # half the pairs agree, as by chance


async def test_an_alert_once_per_cooldown_then_a_recovery(store: Store) -> None:
    await score_units(store, 0, 20, days_ago=1)
    await label_units(store, 0, 20, agree=False)  # kappa -1: below
    async with serving_hooks() as hooks:
        drift = DriftConfig.model_validate({"webhooks": [{"url": f"{hooks.url}/ops"}], "cooldown": "1h"})
        monitor = AgreementMonitor(store, CONFIG, drift)

        first = await monitor.run_pass(NOW)
        again = await monitor.run_pass(NOW + timedelta(minutes=5))
        await label_units(store, 0, 20, agree=True)
        recovered = await monitor.run_pass(NOW + timedelta(minutes=10))

    assert [f.state for r in (first, again, recovered) for f in r.findings] == ["below", "below", "ok"]
    assert [(n.kind, n.series, n.delivered) for n in first.notifications] == [
        ("alert", ["agreement:tone"], True)
    ]
    assert again.notifications == []  # within the cooldown
    assert [n.kind for n in recovered.notifications] == ["recovery"]
    alert, recovery = hooks.bodies("/ops")
    assert (alert["about"], alert["kind"], alert["scorers"][0]["kappa"]) == ("agreement", "alert", -1.0)
    assert alert["scorers"][0]["reasons"] == ["kappa -1.00 < 0.4", "spearman -1.00 < 0.5", "mae 0.800 > 0.25"]
    assert (recovery["kind"], recovery["scorers"][0]["state"]) == ("recovery", "ok")
    sent = await store.query("SELECT Kind, Series FROM drift_notifications ORDER BY SentAt")
    assert sent == [
        {"Kind": "alert", "Series": ["agreement:tone"]},
        {"Kind": "recovery", "Series": ["agreement:tone"]},
    ]


async def test_the_service_runs_the_pass_every_interval_while_it_leads(store: Store) -> None:
    half_a_day_ago = (NOW - datetime.now(UTC)).total_seconds() / 86_400 + 0.5  # before now, not NOW
    await score_units(store, 0, 20, days_ago=half_a_day_ago)
    await label_units(store, 0, 20, agree=True)
    leading = [False]
    registry = CollectorRegistry()
    config = CONFIG.model_copy(update={"interval": 0.05})
    monitor = AgreementMonitor(
        store, config, DriftConfig(), metrics=AgreementMetrics(registry), leads=lambda: leading[0]
    )
    await monitor.start()
    try:
        await asyncio.sleep(0.3)
        assert await store.query("SELECT 1 FROM judge_agreement") == []  # another replica leads
        leading[0] = True
        for _ in range(100):
            if await store.query("SELECT 1 FROM judge_agreement LIMIT 1"):
                break
            await asyncio.sleep(0.05)
    finally:
        await monitor.shutdown()
    (row,) = await store.query("SELECT ScorerId, State, LabelPairs FROM judge_agreement LIMIT 1")
    assert row == {"ScorerId": "tone", "State": "ok", "LabelPairs": 20}
    done = registry.get_sample_value("tracescore_judge_agreement_passes_total", {"outcome": "done"})
    assert done is not None and done >= 1
