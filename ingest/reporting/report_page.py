"""The report as one self-contained HTML page: the rows of ``ingest.reporting.report_reads``, the
charts of ``report_charts`` drawn by plotly.js inlined once, no request of any kind (a
Content-Security-Policy forbids them, and only the page's own scripts, by nonce, run).

Every text from the store (run input and output, reasons, scorer ids) is escaped by the template
(Jinja's autoescape); the chart data travels as JSON inside a ``<script type="application/json">``
element with ``<``, ``>`` and ``&`` escaped, so no stored text can close it.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import plotly.offline
from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template
from markupsafe import Markup

from tracescore.ingest.alerting.agreement_monitor import agreement_rows
from tracescore.ingest.reporting.lowest_runs import with_seen
from tracescore.ingest.reporting.report_charts import decision_chart, score_charts
from tracescore.ingest.reporting.report_reads import AgreementReader, LowScore, ReportData, read_report
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.scoring.runtime.rule_routing import RuleGroup

TEMPLATES = Path(__file__).parent / "templates"
RUNS_PATH = "/api/runs"
_JSON_IN_HTML = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


async def build_report(
    store: Store,
    groups: Sequence[RuleGroup],
    since: datetime,
    until: datetime,
    *,
    max_items: int,
    service_url: str = "",
    agreement: AgreementReader | None = None,
    agreement_config: AgreementConfig | None = None,
) -> str:
    """The page for runs started in [since, until). ``service_url``: where the runs' links point (the
    service's ``/api/runs``); empty for links relative to the page, as ``GET /report`` serves it."""
    agreement = agreement or functools.partial(agreement_table, config=agreement_config)
    data = await read_report(store, since, until, agreement=agreement)
    data = await with_seen(store, data, groups, max_items)
    return render_page(data, service_url)


async def agreement_table(
    store: Store, since: datetime, until: datetime, config: AgreementConfig | None = None
) -> list[Mapping[str, str]]:
    """Each scorer's agreement with human labels over the period (``agreement_rows`` with the
    ``agreement`` settings: the pairs a measure needs), as the page's table shows it: each measure
    with its confidence interval."""

    def measure(value: float | None, low: float | None, high: float | None) -> str:
        if value is None:
            return "-"
        interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
        return f"{value:.2f}{interval}"

    return [
        {
            "scorer": row.scorer_id,
            "annotators": str(row.annotators),
            "label pairs": str(row.label_pairs),
            "Cohen's kappa": measure(row.kappa, row.kappa_low, row.kappa_high),
            "score pairs": str(row.score_pairs),
            "Spearman": measure(row.spearman, row.spearman_low, row.spearman_high),
            "mean absolute error": measure(row.mae, row.mae_low, row.mae_high),
        }
        for row in await agreement_rows(store, since, until, config)
    ]


def render_page(data: ReportData, service_url: str = "") -> str:
    charts = score_charts(data)
    mix = decision_chart(data)
    figures = {chart.element_id: chart.figure for pair in charts.values() for chart in pair}
    if data.decisions:
        figures[mix.element_id] = mix.figure

    def run_link(trace_id: str) -> str:
        return f"{service_url}{RUNS_PATH}?{urllib.parse.urlencode({'trace_id': trace_id})}"

    def seen_of(low: LowScore) -> dict[str, Any] | None:
        return data.seen.get((low.trace_id, low.span_id, low.scorer_id))

    kinds = sorted({kind for counts in data.decisions.values() for kind in counts})
    return _template().render(
        nonce=secrets.token_urlsafe(16),
        since=f"{data.since:%Y-%m-%d %H:%M}",
        until=f"{data.until:%Y-%m-%d %H:%M}",
        made=f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S}",
        store=data.store,
        total_scores=sum(summary.n for summary in data.scorers),
        total_decisions=sum(sum(counts.values()) for counts in data.decisions.values()),
        scorers=data.scorers,
        charts=charts,
        drift=data.drift,
        versions=data.versions,
        version_changes=[
            (scorer, spans) for scorer, spans in sorted(data.versions.items()) if len(spans) > 1
        ],
        decisions=data.decisions,
        decision_kinds=kinds,
        decision_chart=mix,
        reasons=data.reasons,
        lowest=data.lowest,
        seen_of=seen_of,
        run_link=run_link,
        judge_costs=data.judge_costs,
        calls_avoided=data.calls_avoided,
        agreement=data.agreement,
        plotly_js=Markup(plotly_js()),
        chart_data=Markup(json.dumps(figures).translate(_JSON_IN_HTML)),
    )


def write_page(path: str, page: str) -> str:
    """Write ``page`` to the file ``path``; its absolute path."""
    with open(path, "w", encoding="utf-8") as out:
        out.write(page)
    return os.path.abspath(path)


@cache
def plotly_js() -> str:
    """plotly.js as the plotly package ships it (minified), read once."""
    code: str = plotly.offline.get_plotlyjs()
    return code


@cache
def _template() -> Template:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return environment.get_template("report.html.j2")
