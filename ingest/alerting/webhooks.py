"""Drift notifications: which series to tell about after a pass, and the webhook posts.

Each webhook keeps its own account. A drifted series alerts unless an alert for it was delivered to
that webhook within the cooldown: once when it drifts, again each cooldown while it stays drifted,
and at the next pass if the webhook did not take the alert. It recovers when it is back to ok after
an alert. A change of a series' scorer version is told once (until a webhook takes it, each pass): it
is never an alert. All series of one kind from one pass go in one message per webhook (grouping).

A post that fails and may succeed later (a connection error, a timeout, or an answer
``schemas.errors.is_retriable_status`` says is worth another try: 408, 409, 429, 500, 502-504) is tried
again after a wait doubling from ``drift.retry_backoff`` up to a minute (the one ``RetryPolicy``);
every post is recorded, delivered or not.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import aiohttp

from tracescore.ingest.alerting.score_series import Notification
from tracescore.schemas.drift_config import DriftConfig, WebhookConfig
from tracescore.schemas.errors import is_retriable_status
from tracescore.schemas.retry_policy import RetryPolicy
from tracescore.schemas.version import __version__
from tracescore.scoring.drift.detect import Finding, SeriesKey, State

log = logging.getLogger(__name__)

Kind = Literal["alert", "recovery", "version_change"]

# The longest wait between two tries of a post (unless drift.retry_backoff, the first, is longer):
# a webhook down for the whole pass should not hold the pass for many minutes.
BACKOFF_CAP_SECONDS = 60.0


@dataclass(frozen=True)
class DriftNotice:
    kind: Kind
    findings: list[Finding]

    @property
    def series(self) -> list[str]:
        """What the record names: each series, a version change with the version it changed to."""
        return [told_as(f) for f in self.findings]


def told_as(finding: Finding) -> str:
    """How a notification names a finding: its series, a version change ``series@version``."""
    return f"{finding.name}@{finding.version}" if finding.kind == "version_change" else finding.name


def messages(
    findings: Sequence[Finding],
    last_states: Mapping[SeriesKey, State],
    last_alerts: Mapping[str, datetime],
    now: datetime,
    cooldown_seconds: float,
    told_changes: Collection[str] = (),
) -> list[DriftNotice]:
    """The alert, recovery and version-change messages a pass calls for (empty ones left out);
    ``told_changes``: the version changes the webhook took before (``told_as``)."""
    quiet_since = now - timedelta(seconds=cooldown_seconds)
    alerts: list[Finding] = []
    recoveries: list[Finding] = []
    changes = [f for f in findings if f.kind == "version_change" and told_as(f) not in told_changes]
    for finding in findings:
        before = last_states.get(finding.key)
        if finding.drifted:
            last = last_alerts.get(finding.name)
            if last is None or last < quiet_since:
                alerts.append(finding)
        elif finding.state == "ok" and before == "drifted" and finding.name in last_alerts:
            recoveries.append(finding)
    found: list[DriftNotice] = []
    if alerts:
        found.append(DriftNotice("alert", alerts))
    if recoveries:
        found.append(DriftNotice("recovery", recoveries))
    if changes:
        found.append(DriftNotice("version_change", changes))
    return found


def body(message: DriftNotice, webhook: WebhookConfig, checked_at: datetime) -> dict[str, Any]:
    if webhook.format == "slack":
        return _slack(message)
    return {
        "source": "tracescore",
        "version": __version__,
        "kind": message.kind,
        "checked_at": checked_at.isoformat(),
        "series": [f.as_json() for f in message.findings],
    }


def _slack(message: DriftNotice) -> dict[str, Any]:
    n = len(message.findings)
    if message.kind == "alert":
        title = f":warning: tracescore: score drift in {n} series"
    elif message.kind == "version_change":
        title = f":arrows_counterclockwise: tracescore: the scorer version changed in {n} series"
    else:
        title = f":white_check_mark: tracescore: {n} series recovered from score drift"
    lines = [_line(f, message.kind) for f in message.findings]
    text = "\n".join([title, *lines])
    return {
        "text": text,
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": title}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:2900]}},
        ],
    }


def _line(f: Finding, kind: Kind) -> str:
    head = f"• *{f.scorer_id}* ({f.service_name or '-'} / {f.agent_name or '-'})"
    if kind == "version_change":
        return f"{head}: {f.summary}"
    means = f"mean {f.baseline_mean:.3f} → {f.window_mean:.3f} (n {f.baseline_n} → {f.window_n})"
    if kind == "recovery":
        return f"{head}: back to normal, {means}"
    return f"{head}: {f.severity}, {means}, {f.effect:+.2f} sd, p={f.p_value:.2g}, {', '.join(f.reasons)}"


class Notifier:
    """Posts a message to one webhook, trying again after a transient failure; returns what it did,
    for the record."""

    def __init__(
        self, config: DriftConfig, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> None:
        self._config = config
        self._sleep = sleep
        self._retry = RetryPolicy(
            initial_s=config.retry_backoff, max_s=max(config.retry_backoff, BACKOFF_CAP_SECONDS)
        )

    async def post(self, hook: WebhookConfig, message: DriftNotice, checked_at: datetime) -> Notification:
        content = body(message, hook, checked_at)
        return await self.send(hook, message.kind, message.series, content, checked_at)

    async def send(
        self,
        hook: WebhookConfig,
        kind: Kind,
        series: list[str],
        content: dict[str, Any],
        checked_at: datetime,
    ) -> Notification:
        """Post ``content`` (a JSON body of any alert about ``series``) to one webhook."""
        payload = json.dumps(content, ensure_ascii=False)
        attempts, error = await self._deliver(hook, payload)
        if error:
            log.warning("%s about %s to webhook %s not delivered: %s", kind, series, hook.label, error)
        return Notification(
            sent_at=checked_at,
            webhook=hook.label,
            kind=kind,
            series=series,
            attempts=attempts,
            delivered=not error,
            error=error,
            payload=payload,
        )

    async def _deliver(self, hook: WebhookConfig, payload: str) -> tuple[int, str]:
        """Post until the webhook takes it, or a failure is final or the tries run out: the tries
        made, and the last error (empty once delivered)."""
        headers = {"Content-Type": "application/json", "User-Agent": f"tracescore/{__version__}"}
        headers |= hook.headers
        timeout = aiohttp.ClientTimeout(total=self._config.timeout)
        attempts = 0
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                attempts += 1
                retriable = True
                try:
                    async with session.post(str(hook.url), data=payload, headers=headers) as response:
                        if response.status < 300:
                            return attempts, ""
                        error = f"HTTP {response.status}: {(await response.text())[:200]}"
                        retriable = is_retriable_status(response.status)
                except (aiohttp.ClientError, TimeoutError) as exc:  # no answer: the next try may get one
                    error = f"{type(exc).__name__}: {exc}"[:300]
                if not retriable or attempts > self._config.retries:
                    return attempts, error
                await self._sleep(self._retry.delay(attempts - 1))
