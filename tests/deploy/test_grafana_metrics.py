"""Every PromQL expression of the dashboards and alert rules names metrics and labels that a running
tracescore serves on /metrics."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from tests.support.grafana_files import (
    alert_queries,
    dashboard_queries,
    is_prometheus,
    load_dashboards,
    promql_label_names,
    promql_metric_names,
)
from tests.support.otlp import agent_trace_requests, http_request
from tests.support.service import running_service, service_config
from tracescore.ingest.service import Service

# Labels Prometheus adds to every series it scrapes.
TARGET_LABELS = {"instance", "job"}
SERIES_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("_sum", "_count", "_created", ""),
}


def expressions() -> list[tuple[str, str]]:
    """(where, PromQL) of every dashboard target, Prometheus template variable and alert rule."""
    found = []
    for dashboard in load_dashboards().values():
        for query in filter(is_prometheus, dashboard_queries(dashboard)):
            found.append((query.where, query.target["expr"]))
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query" and variable["datasource"]["type"] == "prometheus":
                values = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["query"]["query"])
                assert values, variable["query"]
                found.append(
                    (f"{dashboard['uid']} variable {variable['name']}", f"{values[1]}{{{values[2]}!=''}}")
                )
    for alert in alert_queries("tracescore-prometheus"):
        found.append((alert.where, alert.data["model"]["expr"]))
    return found


def _defined_labels(service: Service) -> dict[str, set[str]]:
    """Label names by metric family, from the service's metric objects: /metrics shows the labels of a
    metric only once it has a sample (prometheus_client keeps them on the object alone)."""
    labels: dict[str, set[str]] = {}
    for holder in (service.metrics, service.metrics.scoring):
        for metric in vars(holder).values():
            if isinstance(metric, MetricWrapperBase):
                labels[metric._name] = set(metric._labelnames)
    return labels


async def _served(service: Service) -> dict[str, set[str]]:
    """Every series name /metrics serves, with the label names it carries."""
    reply = await http_request("GET", f"http://127.0.0.1:{service.http.port}/metrics")
    assert reply.status == 200
    defined = _defined_labels(service)
    series: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(reply.body.decode()):
        for suffix in SERIES_SUFFIXES[family.type]:
            labels = set(defined.get(family.name, ()))
            series.setdefault(family.name + suffix, set()).update(
                labels | ({"le"} if suffix == "_bucket" else set())
            )
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return series


async def _score_some_runs(service: Service) -> None:
    """Runs through the real receiver, so the labelled counters have samples too."""
    requests = agent_trace_requests(2, "grafana-metrics")
    for _, body in requests:
        reply = await http_request(
            "POST",
            f"http://127.0.0.1:{service.http.port}/v1/traces",
            data=body,
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert reply.status == 200
    deadline = time.monotonic() + 60
    for trace_id, _ in requests:
        while not await service.scores.trace_decisions(trace_id):
            assert time.monotonic() < deadline, "runs not scored"
            await asyncio.sleep(0.1)


async def test_promql_names_metrics_and_labels_the_service_serves(tmp_path: Path) -> None:
    # A threshold, so the pass/fail counter of the score metrics has samples too.
    rules = [{"scorer": "content-similarity", "threshold": 0.5}]
    config = service_config(tmp_path, **{"scoring.rules": rules})
    async with running_service(config) as service:
        await _score_some_runs(service)
        served = await _served(service)
    assert (
        "tracescore_spans_received_total" in served
        and "transport" in served["tracescore_spans_received_total"]
    )
    assert {"scorer", "service", "agent", "le"} <= served["tracescore_score_bucket"]
    assert "outcome" in served["tracescore_score_outcomes_total"]
    known: dict[str, Any] = served
    problems = []
    for where, expr in expressions():
        names = promql_metric_names(expr)
        if not names:
            problems.append(f"{where}: names no tracescore metric: {expr}")
        unknown = names - set(known)
        if unknown:
            problems.append(f"{where}: {sorted(unknown)} not served: {expr}")
        labels = set().union(*(known.get(name, set()) for name in names)) | TARGET_LABELS
        stray = promql_label_names(expr) - labels
        if stray:
            problems.append(f"{where}: labels {sorted(stray)} not on {sorted(names)}: {expr}")
    assert not problems, "\n".join(problems)


def test_the_pipeline_dashboard_shows_intake_backlog_lag_refusals_drops_and_dead_letters() -> None:
    (pipeline,) = [d for d in load_dashboards().values() if d["uid"] == "tracescore-pipeline"]
    shown = set().union(
        *(promql_metric_names(q.target["expr"]) for q in dashboard_queries(pipeline) if is_prometheus(q))
    )
    assert {
        "tracescore_spans_received_total",
        "tracescore_spans_rejected_total",
        "tracescore_spans_stored_total",
        "tracescore_backlog",
        "tracescore_watermark_lag_seconds",
        "tracescore_dead_letters_total",
        "tracescore_requests_refused_total",
        "tracescore_http_connections_refused_total",
        "tracescore_assembly_traces_spilled_total",
        "tracescore_assembly_spans_dropped_total",
        "tracescore_kafka_pauses_total",
        "tracescore_scoring_decisions_total",
    } <= shown


def test_promql_parsing_finds_names_and_labels() -> None:
    expr = (
        'sum by (le, scorer) (rate(tracescore_score_bucket{outcome="pass", agent=~"$agent"}[5m]))'
        " / on (scorer) group_left tracescore_x_total"
    )
    assert promql_metric_names(expr) == {"tracescore_score_bucket", "tracescore_x_total"}
    assert promql_label_names(expr) == {"le", "scorer", "outcome", "agent"}
