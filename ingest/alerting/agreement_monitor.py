"""Agreement passes: how well each scorer agrees with the people who label its units, recorded in
``judge_agreement``, shown as Prometheus gauges, and told to the drift webhooks when it falls; and the
service's periodic loop (beside the drift pass, on the replica that owns the key ``agreement``).

``agreement_rows`` is the one read of agreement over any period, for whatever shows it (the command,
a report). A pass measures the window ending now and the one before it
(``scoring.agreement.agreement_findings``): a scorer whose agreement is below a set level or dropped
significantly alerts, once per ``drift.cooldown`` per webhook while it stays so, and recovers when it
is ok again after an alert. Notifications are recorded in ``drift_notifications`` under the series
name ``agreement:<scorer>``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tracescore.ingest.alerting.agreement_pairs import last_states, read_pairs, write_findings
from tracescore.ingest.alerting.periodic_pass import PeriodicPass
from tracescore.ingest.alerting.score_series import DriftStore, Notification
from tracescore.ingest.alerting.webhooks import Kind, Notifier
from tracescore.ingest.observability.service_metrics import AgreementMetrics
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.schemas.agreement_results import (
    ALERTING_STATES,
    AgreementFinding,
    AgreementRow,
    AgreementState,
)
from tracescore.schemas.drift_config import DriftConfig, WebhookConfig
from tracescore.schemas.version import __version__
from tracescore.scoring.agreement.agreement_findings import assess, measure

log = logging.getLogger(__name__)

SERIES_PREFIX = "agreement:"
ALERT_MEMORY = timedelta(days=30)  # how far back a delivered alert makes a later recovery worth telling
STATES: tuple[AgreementState, ...] = ("ok", "below", "dropped", "insufficient")


async def agreement_rows(
    store: Store, since: datetime, until: datetime, config: AgreementConfig | None = None
) -> list[AgreementRow]:
    """Each scorer's agreement with human labels over the scores written in ``[since, until)``, by
    scorer id; scorers without a labelled unit there are left out."""
    config = config or AgreementConfig()
    recent, _ = await read_pairs(store, since, since, until)
    return [measure(scorer, since, until, pairs, config).row for scorer, pairs in sorted(recent.items())]


@dataclass
class AgreementReport:
    window_start: datetime
    window_end: datetime
    findings: list[AgreementFinding]
    notifications: list[Notification] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "window_start": self.window_start.isoformat(),
            "window_end": self.window_end.isoformat(),
            "findings": [finding.as_json() for finding in self.findings],
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AgreementReport:
        findings = [_finding(item) for item in body["findings"]]
        start, end = (datetime.fromisoformat(body[key]) for key in ("window_start", "window_end"))
        return cls(start, end, findings, seconds=float(body["seconds"]))


def _finding(item: Mapping[str, Any]) -> AgreementFinding:
    rest = {key: item[key] for key in ("previous", "drop_p_value", "state", "reasons")}
    row = {key: value for key, value in item.items() if key not in rest}
    return AgreementFinding.model_validate({"row": row, **rest})


class AgreementMonitor:
    def __init__(
        self,
        store: Store,
        config: AgreementConfig,
        drift: DriftConfig,
        *,
        metrics: AgreementMetrics | None = None,
        leads: Callable[[], bool] = lambda: True,
        notifier: Notifier | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._drift = drift  # its webhooks and cooldown
        self._metrics = metrics
        self._notifier = notifier or Notifier(drift)
        self._periodic = PeriodicPass("agreement", config.interval, self._periodic_pass, leads, self._count)

    async def run_pass(
        self, now: datetime | None = None, *, record: bool = True, notify: bool = True
    ) -> AgreementReport:
        """One pass over the window ending ``now``: findings written to ``judge_agreement``
        (``record``) and told to the webhooks (``notify``, which needs ``record``)."""
        started = time.perf_counter()
        end = now.astimezone(UTC) if now is not None else datetime.now(UTC)
        window = timedelta(seconds=self._config.window)
        start, before = end - window, end - 2 * window
        recent, earlier = await read_pairs(self._store, before, start, end)
        findings = []
        for scorer, pairs in sorted(recent.items()):
            previous = earlier.get(scorer)
            then = measure(scorer, before, start, previous, self._config) if previous else None
            findings.append(assess(measure(scorer, start, end, pairs, self._config), then, self._config))
        report = AgreementReport(start, end, findings)
        if record:
            states = await last_states(self._store) if notify else {}
            await write_findings(self._store, findings, end)
            if notify and self._drift.webhooks:
                report.notifications = await self._notify(findings, states, end)
        self._show(findings)
        report.seconds = time.perf_counter() - started
        return report

    def _show(self, findings: Sequence[AgreementFinding]) -> None:
        """The gauges: each scorer's measures, pairs and state as this pass found them."""
        metrics = self._metrics
        if metrics is None:
            return
        for gauge in (metrics.value, metrics.pairs, metrics.state):
            gauge.clear()  # a scorer no longer labelled is no longer shown
        for finding in findings:
            row = finding.row
            for measure_name in ("kappa", "spearman", "mae"):
                value = getattr(row, measure_name)
                if value is not None:
                    metrics.value.labels(scorer=row.scorer_id, measure=measure_name).set(value)
            metrics.pairs.labels(scorer=row.scorer_id, kind="labels").set(row.label_pairs)
            metrics.pairs.labels(scorer=row.scorer_id, kind="values").set(row.score_pairs)
            for state in STATES:
                metrics.state.labels(scorer=row.scorer_id, state=state).set(int(finding.state == state))

    async def _notify(
        self, findings: Sequence[AgreementFinding], states: Mapping[str, AgreementState], now: datetime
    ) -> list[Notification]:
        drift_store = DriftStore(self._store)
        last_alerts = await drift_store.last_alerts(now - ALERT_MEMORY)
        posts = []
        for hook in self._drift.webhooks:
            for kind, told in _notices(findings, states, last_alerts.get(hook.label, {}), now, self._drift):
                series = [SERIES_PREFIX + finding.scorer_id for finding in told]
                posts.append(self._notifier.send(hook, kind, series, body(kind, told, hook, now), now))
        sent = list(await asyncio.gather(*posts))
        await drift_store.record(sent)
        return sent

    async def start(self) -> None:
        """Starts the periodic passes (when ``agreement.enabled``); the first comes after one interval."""
        if self._config.enabled:
            self._periodic.start()

    async def shutdown(self) -> None:
        await self._periodic.shutdown()

    async def _periodic_pass(self) -> None:
        report = await self.run_pass()
        for finding in report.findings:
            if finding.alerting:
                log.warning("judge agreement of %s: %s", finding.scorer_id, "; ".join(finding.reasons))

    def _count(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.passes.labels(outcome=outcome).inc()


def _notices(
    findings: Sequence[AgreementFinding],
    states: Mapping[str, AgreementState],
    last_alerts: Mapping[str, datetime],
    now: datetime,
    drift: DriftConfig,
) -> list[tuple[Kind, list[AgreementFinding]]]:
    """The alert and recovery messages a pass calls for, for one webhook (empty ones left out)."""
    quiet_since = now - timedelta(seconds=drift.cooldown)
    alerts, recoveries = [], []
    for finding in findings:
        name = SERIES_PREFIX + finding.scorer_id
        last = last_alerts.get(name)
        if finding.alerting and (last is None or last < quiet_since):
            alerts.append(finding)
        elif finding.state == "ok" and states.get(finding.scorer_id) in ALERTING_STATES and last:
            recoveries.append(finding)
    notices: list[tuple[Kind, list[AgreementFinding]]] = []
    if alerts:
        notices.append(("alert", alerts))
    if recoveries:
        notices.append(("recovery", recoveries))
    return notices


def body(
    kind: Kind, findings: Sequence[AgreementFinding], hook: WebhookConfig, checked_at: datetime
) -> dict[str, Any]:
    """A webhook's body: tracescore's JSON (``about: agreement``) or a Slack message."""
    if hook.format == "json":
        return {
            "source": "tracescore",
            "version": __version__,
            "kind": kind,
            "about": "agreement",
            "checked_at": checked_at.isoformat(),
            "scorers": [finding.as_json() for finding in findings],
        }
    if kind == "alert":
        title = f":warning: tracescore: {len(findings)} scorer(s) agree less with people"
    else:
        title = f":white_check_mark: tracescore: {len(findings)} scorer(s) agree with people again"
    lines = [_line(finding) for finding in findings]
    return {
        "text": "\n".join([title, *lines]),
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": title}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:2900]}},
        ],
    }


def _line(finding: AgreementFinding) -> str:
    row = finding.row
    pairs = f"{row.label_pairs} label / {row.score_pairs} value pairs"
    why = ", ".join(finding.reasons) or "ok"
    return f"• *{row.scorer_id}*: {finding.state}, {why} ({pairs})"
