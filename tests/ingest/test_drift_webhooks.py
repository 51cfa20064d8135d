"""Drift notifications to webhooks served by a local HTTP server: alert, cooldown, recovery, retries,
the Slack-compatible body, and the record of what was sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from tests.support.drift import NOW, Hooks, Streams, serving_hooks
from tracescore.ingest.alerting.drift_monitor import DriftMonitor
from tracescore.ingest.alerting.webhooks import DriftNotice, Notifier
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.drift_config import DriftConfig, WebhookConfig


@pytest.fixture
async def hooks() -> AsyncIterator[Hooks]:
    async with serving_hooks() as server:
        yield server


def config(hooks: Hooks, **changes: Any) -> DriftConfig:
    values: dict[str, Any] = {
        "webhooks": [
            {"url": f"{hooks.url}/json", "name": "ops"},
            {"url": f"{hooks.url}/slack", "format": "slack", "name": "slack"},
        ],
        "cooldown": "1h",
        "retries": 3,
        "retry_backoff": "0.01s",
        "cusum": {"enabled": False},  # the window tests decide here; the CUSUM's memory is tested apart
    }
    return DriftConfig.model_validate(values | changes)


async def test_alert_cooldown_and_recovery(store: Store, hooks: Hooks) -> None:
    streams = Streams(seed=21)
    streams.normal("relevancy", 2_000, 200, mean=0.8, window_mean=0.65)
    streams.normal("toxicity", 2_000, 200, mean=0.8, window_mean=0.6, sd=0.1)
    streams.normal("steady", 2_000, 200, mean=0.8, window_mean=0.8)
    await streams.write(store)
    monitor = DriftMonitor(store, config(hooks))

    first = await monitor.run_pass(NOW)
    (alert,) = hooks.bodies("/json")
    assert alert["kind"] == "alert"
    # Grouped: both drifted series in one message, the steady one in none.
    assert sorted(s["scorer_id"] for s in alert["series"]) == ["relevancy", "toxicity"]
    assert all(s["drifted"] and s["p_value"] < 0.01 for s in alert["series"])
    (slack,) = hooks.bodies("/slack")
    assert "score drift in 2 series" in slack["text"] and "*relevancy*" in slack["text"]
    assert slack["blocks"][0]["type"] == "header"
    assert {(n.webhook, n.kind, n.delivered, n.attempts) for n in first.notifications} == {
        ("ops", "alert", True, 1),
        ("slack", "alert", True, 1),
    }

    # Ten minutes later both still drift: within the cooldown, nobody is told again.
    again = await monitor.run_pass(NOW + timedelta(minutes=10))
    assert len(again.drifted) == 2 and again.notifications == []
    assert len(hooks.received) == 2

    # Relevancy recovers: the next hour scores as the baseline did.
    later = Streams(seed=22)
    later.add(
        "relevancy",
        [min(1.0, max(0.0, v)) for v in later.rng.normal(0.8, 0.1, 300)],
        later.times(300, NOW + timedelta(minutes=10), NOW + timedelta(minutes=70)),
    )
    later.add(
        "toxicity",
        [min(1.0, max(0.0, v)) for v in later.rng.normal(0.6, 0.1, 300)],
        later.times(300, NOW + timedelta(minutes=10), NOW + timedelta(minutes=70)),
    )
    await later.write(store)
    third = await monitor.run_pass(NOW + timedelta(minutes=70))
    kinds = {(n.webhook, n.kind): n.series for n in third.notifications}
    # Toxicity still drifts and its cooldown has passed: reminded. Relevancy recovered: told so.
    assert kinds[("ops", "recovery")] == ["relevancy/svc/agent"]
    assert kinds[("ops", "alert")] == ["toxicity/svc/agent"]
    recovery = next(b for b in hooks.bodies("/json") if b["kind"] == "recovery")
    assert recovery["series"][0]["state"] == "ok"
    assert any("1 series recovered" in body["text"] for body in hooks.bodies("/slack"))

    # What was sent is recorded, with the body.
    recorded = await store.query(
        f"SELECT Webhook, Kind, Series, Delivered, Attempts, Payload "
        f"FROM {store.quoted_database}.drift_notifications ORDER BY SentAt, Webhook, Kind"
    )
    assert [(r["Webhook"], r["Kind"], r["Delivered"]) for r in recorded] == [
        ("ops", "alert", 1), ("slack", "alert", 1),
        ("ops", "alert", 1), ("ops", "recovery", 1), ("slack", "alert", 1), ("slack", "recovery", 1),
    ]  # fmt: skip
    assert json.loads(recorded[0]["Payload"]) == alert


async def test_a_failing_webhook_is_retried_and_recorded(store: Store, hooks: Hooks) -> None:
    streams = Streams(seed=23)
    streams.normal("relevancy", 2_000, 200, mean=0.8, window_mean=0.65)
    await streams.write(store)
    hooks.fail["/json"] = 2  # answers 503 twice, then takes it
    hooks.fail["/slack"] = 10  # never takes it within the retries
    report = await DriftMonitor(store, config(hooks, retries=2)).run_pass(NOW)

    sent = {n.webhook: n for n in report.notifications}
    assert (sent["ops"].attempts, sent["ops"].delivered, sent["ops"].error) == (3, True, "")
    assert (sent["slack"].attempts, sent["slack"].delivered) == (3, False)
    assert "HTTP 503" in sent["slack"].error
    assert len(hooks.bodies("/json")) == 3 and len(hooks.bodies("/slack")) == 3

    # Undelivered: the next pass tries the alert again (a delivered one would wait for the cooldown).
    hooks.fail.clear()
    retry = await DriftMonitor(store, config(hooks)).run_pass(NOW + timedelta(minutes=5))
    assert [(n.webhook, n.delivered) for n in retry.notifications] == [("slack", True)]


async def test_a_refused_post_is_not_retried_and_an_unreachable_one_is(store: Store, hooks: Hooks) -> None:
    streams = Streams(seed=24)
    streams.normal("relevancy", 2_000, 200, mean=0.8, window_mean=0.65)
    await streams.write(store)
    hooks.reject.add("/json")  # 400: the body is wrong for that hook; trying again cannot help
    drift = config(
        hooks,
        retries=1,
        webhooks=[
            {"url": f"{hooks.url}/json", "name": "ops"},
            {"url": "http://127.0.0.1:1/closed", "name": "closed"},
        ],
    )
    report = await DriftMonitor(store, drift).run_pass(NOW)
    sent = {n.webhook: n for n in report.notifications}
    assert (sent["ops"].delivered, sent["ops"].attempts) == (False, 1)
    assert sent["ops"].error.startswith("HTTP 400")
    assert (sent["closed"].delivered, sent["closed"].attempts) == (False, 2)
    assert "ClientConnectorError" in sent["closed"].error


async def test_waits_between_tries_double_from_retry_backoff_up_to_a_minute(hooks: Hooks) -> None:
    waits: list[float] = []

    async def recorded_sleep(seconds: float) -> None:
        waits.append(seconds)

    hooks.fail["/json"] = 10
    notifier = Notifier(config(hooks, retries=6, retry_backoff="20s"), sleep=recorded_sleep)
    webhook = WebhookConfig.model_validate({"url": f"{hooks.url}/json", "name": "ops"})
    sent = await notifier.post(webhook, DriftNotice("alert", []), NOW)

    assert (sent.attempts, sent.delivered) == (7, False)
    assert waits == [20.0, 40.0, 60.0, 60.0, 60.0, 60.0]
