"""Drift passes: read the series, compare each within its current scorer version (and report version
changes), detect, record the findings, notify; and the service's periodic loop.

In a group of replicas one of them runs the periodic pass (the replica that owns the key ``drift`` on
the membership's hash ring), so a group sends each notification once; when it leaves, another takes
over at its next interval.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, Counter, Gauge

from tracescore.ingest.alerting.periodic_pass import PeriodicPass
from tracescore.ingest.alerting.score_series import DriftStore, Notification
from tracescore.ingest.alerting.webhooks import Notifier, messages
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.drift_config import DriftConfig
from tracescore.scoring.drift.detect import Finding, SeriesKey, State, Windows, detect
from tracescore.scoring.drift.version_changes import by_version

log = logging.getLogger(__name__)

# How far back a delivered alert makes a later recovery worth telling.
ALERT_MEMORY = timedelta(days=30)


@dataclass
class DriftReport:
    windows: Windows
    findings: list[Finding]
    notifications: list[Notification] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def drifted(self) -> list[Finding]:
        return [f for f in self.findings if f.drifted]

    @property
    def version_changes(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "version_change"]


class DriftMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.passes = Counter(
            "tracescore_drift_passes", "Drift passes by outcome", ["outcome"], registry=registry
        )
        self.series = Gauge(
            "tracescore_drift_series", "Series by state at the last drift pass", ["state"], registry=registry
        )
        self.version_changes = Gauge(
            "tracescore_drift_version_changes",
            "Series whose span at the last drift pass held scores of an earlier scorer version",
            registry=registry,
        )
        self.notifications = Counter(
            "tracescore_drift_notifications",
            "Drift notifications by kind and whether a webhook took them",
            ["kind", "delivered"],
            registry=registry,
        )


def windows_for(config: DriftConfig, now: datetime) -> Windows:
    """The recent window ending ``now`` and the baseline: the period just before it, or the fixed
    reference period."""
    window_start = now - timedelta(seconds=config.window)
    if config.reference is not None:
        start, end = (_utc(t) for t in (config.reference.start, config.reference.end))
        return Windows(start, end, window_start, now)
    return Windows(window_start - timedelta(seconds=config.baseline), window_start, window_start, now)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class DriftMonitor:
    def __init__(
        self,
        store: Store,
        config: DriftConfig,
        thresholds: Mapping[str, tuple[float, str]] | None = None,
        *,
        registry: CollectorRegistry | None = None,
        leads: Callable[[], bool] = lambda: True,
        notifier: Notifier | None = None,
    ) -> None:
        self._store = DriftStore(store)
        self._config = config
        self._thresholds = dict(thresholds or {})
        self._notifier = notifier or Notifier(config)
        self._metrics = DriftMetrics(registry if registry is not None else CollectorRegistry())
        self._periodic = PeriodicPass("drift", config.interval, self._periodic_pass, leads, self._count)

    def _count(self, outcome: str) -> None:
        self._metrics.passes.labels(outcome=outcome).inc()

    async def run_pass(
        self, now: datetime | None = None, *, record: bool = True, notify: bool = True
    ) -> DriftReport:
        """One pass: findings for every series, written to ``score_drift`` (``record``) and told to the
        webhooks (``notify``, which needs ``record``: the states it compares with are the recorded
        ones)."""
        started = time.perf_counter()
        now = _utc(now) if now is not None else datetime.now(UTC)
        windows = windows_for(self._config, now)
        versioned, written = await self._store.read(windows, int(self._config.bucket), self._thresholds)
        series, changes = by_version(versioned, written, windows)
        findings = detect(series, windows, self._config) + changes
        report = DriftReport(windows, findings)
        if record:
            last_states = await self._store.last_states() if notify else {}
            await self._store.write(findings, now)
            if notify and self._config.webhooks:
                report.notifications = await self._notify(findings, last_states, now)
        for state in ("drifted", "ok", "insufficient"):
            self._metrics.series.labels(state=state).set(sum(f.state == state for f in findings))
        self._metrics.version_changes.set(len(changes))
        report.seconds = time.perf_counter() - started
        return report

    async def _notify(
        self, findings: list[Finding], last_states: dict[SeriesKey, State], now: datetime
    ) -> list[Notification]:
        last_alerts = await self._store.last_alerts(now - ALERT_MEMORY)
        told = await self._store.told_changes(now - ALERT_MEMORY)
        posts = [
            self._notifier.post(hook, message, now)
            for hook in self._config.webhooks
            for message in messages(
                findings,
                last_states,
                last_alerts.get(hook.label, {}),
                now,
                self._config.cooldown,
                told.get(hook.label, set()),
            )
        ]
        sent = list(await asyncio.gather(*posts))
        await self._store.record(sent)
        for n in sent:
            self._metrics.notifications.labels(kind=n.kind, delivered=str(n.delivered).lower()).inc()
        return sent

    async def start(self) -> None:
        """Starts the periodic passes (when ``drift.enabled``); returns at once, the first pass comes
        after one interval."""
        if self._config.enabled:
            self._periodic.start()

    async def shutdown(self) -> None:
        await self._periodic.shutdown()

    async def _periodic_pass(self) -> None:
        report = await self.run_pass()
        if report.drifted:
            names = ", ".join(f.name for f in report.drifted)
            log.warning("score drift in %d series: %s", len(report.drifted), names)
