"""The Grafana provisioning files carry what Grafana needs to load them, and refer to each other rightly.

What the queries return is tested against a real store in test_grafana_queries.py.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest

from tests.support.grafana_files import (
    CLICKHOUSE_TYPE,
    EXPRESSION_UID,
    GRAFANA_BUILTIN_UID,
    PROMETHEUS_TYPE,
    alert_queries,
    alert_rules,
    dashboard_queries,
    is_clickhouse,
    load_dashboards,
    load_yaml,
    walk_panels,
)
from tracescore.ingest.store.ddl import load_ddl
from tracescore.schemas.score import DecisionKind
from tracescore.scoring.prebuilt.registry import registered

GRAFANA_PAGE = Path(__file__).resolve().parents[2] / "docs" / "grafana.md"
DASHBOARDS = load_dashboards()
BY_UID = {d["uid"]: d for d in DASHBOARDS.values()}
ENV_REFERENCE = re.compile(r"^\$\{[A-Z][A-Z0-9_]*\}$")
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


def datasources() -> dict[str, dict[str, Any]]:
    document = load_yaml("datasources/tracescore.yaml")
    assert document["apiVersion"] == 1
    return {source["uid"]: source for source in document["datasources"]}


def test_the_datasources_are_clickhouse_in_otel_mode_and_prometheus() -> None:
    sources = datasources()
    assert set(sources) == {"tracescore-clickhouse", "tracescore-prometheus"}
    assert len({s["name"] for s in sources.values()}) == len(sources)
    clickhouse = sources["tracescore-clickhouse"]
    assert clickhouse["type"] == CLICKHOUSE_TYPE
    settings = clickhouse["jsonData"]
    for key in ("host", "port", "protocol", "username", "defaultDatabase"):
        assert ENV_REFERENCE.match(str(settings[key])), f"{key} should come from the environment"
    assert ENV_REFERENCE.match(clickhouse["secureJsonData"]["password"])
    for signal, table in (("traces", "otel_traces_scored"), ("logs", "otel_logs")):
        assert settings[signal]["defaultTable"] == table
        assert settings[signal]["defaultDatabase"] == settings["defaultDatabase"]
        assert settings[signal]["otelEnabled"] is True
        assert settings[signal]["otelVersion"] == "latest"
    prometheus = sources["tracescore-prometheus"]
    assert (prometheus["type"], prometheus["url"]) == (PROMETHEUS_TYPE, "${PROMETHEUS_URL}")


def test_no_query_names_a_database_the_data_source_gives_it() -> None:
    """tracescore's database is a setting (store_database): a query naming one (default.scores) would
    read another database than the data source's defaultDatabase."""
    created = re.compile(r"^CREATE (?:TABLE|VIEW|MATERIALIZED VIEW) IF NOT EXISTS `db`\.(\w+)")
    ours = {m[1] for statement in load_ddl("db") if (m := created.match(statement))}
    assert {"otel_traces", "otel_traces_scored", "scores", "scores_by_scorer", "score_drift"} <= ours
    tables = "|".join(sorted(ours))
    qualified = re.compile(rf"\b(?:FROM|JOIN)\s+([\w`\"]+\s*\.\s*[`\"]?(?:{tables})\b)", re.IGNORECASE)
    queries = [
        (q.where, q.sql) for d in DASHBOARDS.values() for q in dashboard_queries(d) if is_clickhouse(q)
    ]
    queries += [(q.where, q.data["model"]["rawSql"]) for q in alert_queries("tracescore-clickhouse")]
    assert len(queries) > 40
    named = [f"{where}: {found}" for where, sql in queries for found in qualified.findall(sql)]
    assert named == []


def test_the_dashboard_provider_loads_the_dashboard_folder_into_the_tracescore_folder() -> None:
    document = load_yaml("dashboards/tracescore.yaml")
    assert document["apiVersion"] == 1
    (provider,) = document["providers"]
    assert (provider["type"], provider["folder"]) == ("file", "tracescore")
    assert provider["name"] and Path(provider["options"]["path"]).is_absolute()


def test_six_dashboards_with_unique_uids() -> None:
    assert set(BY_UID) == {
        "tracescore-agreement",
        "tracescore-scores",
        "tracescore-judge",
        "tracescore-pipeline",
        "tracescore-drift",
        "tracescore-traces",
    }
    assert len(BY_UID) == len(DASHBOARDS)


def _check_datasource(source: dict[str, Any], where: str) -> None:
    sources = datasources()
    assert source["uid"] in sources, f"{where}: unknown data source {source}"
    assert source["type"] == sources[source["uid"]]["type"], where


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_carries_what_grafana_needs(name: str) -> None:
    dashboard = DASHBOARDS[name]
    assert dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    assert {"from", "to"} <= set(dashboard["time"]) and "refresh" in dashboard
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert len(variables) == len(dashboard["templating"]["list"])
    panels = list(walk_panels(dashboard["panels"]))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    for panel in panels:
        where = f"{name} panel {panel['id']}"
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in ("x", "y", "w", "h")), where
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, where
        assert panel["type"] and panel["title"], where
        if panel["type"] == "row":
            continue
        _check_datasource(panel["datasource"], where)
        assert panel["targets"], where
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), where
        if "repeat" in panel:
            assert variables[panel["repeat"]]["multi"], where
    cells = [
        (p["id"], x, y)
        for p in panels
        for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
        for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])
    ]
    taken: dict[tuple[int, int], int] = {}
    for panel_id, x, y in cells:
        assert taken.setdefault((x, y), panel_id) == panel_id, f"{name}: panels overlap at {(x, y)}"
    for query in dashboard_queries(dashboard):
        _check_datasource(query.datasource, query.where)
        if query.datasource["type"] == CLICKHOUSE_TYPE:
            target = query.target
            assert target["editorType"] == "sql" and target["rawSql"].strip(), query.where
            # sqlds' formats: 0 time series, 1 table, 2 logs, 3 traces.
            expected = {"timeseries": 0, "table": 1, "logs": 2, "traces": 3}.get(
                target.get("queryType", ""), 1
            )
            assert target["format"] == expected, query.where
        else:
            assert query.target["expr"].strip(), query.where
    for variable in variables.values():
        if variable["type"] == "query":
            _check_datasource(variable["datasource"], f"{name} variable {variable['name']}")
        if variable["type"] == "query" and variable["datasource"]["type"] == CLICKHOUSE_TYPE:
            # The plugin's variable editor: custom SQL, of which the resolver reads rawSql.
            assert variable["query"]["queryType"] == "sql" and variable["query"]["rawSql"].strip()
    for annotation in dashboard["annotations"]["list"]:
        if annotation["datasource"]["uid"] != GRAFANA_BUILTIN_UID:
            _check_datasource(annotation["datasource"], f"{name} annotation {annotation['name']}")


def test_scores_filter_by_scorer_service_and_agent_with_all() -> None:
    variables = {v["name"]: v for v in BY_UID["tracescore-scores"]["templating"]["list"]}
    for name in ("scorer", "service", "agent"):
        assert variables[name]["type"] == "query"
        assert variables[name]["multi"] and variables[name]["includeAll"]
        assert variables[name]["datasource"]["uid"] == "tracescore-clickhouse"


def test_the_trace_explorer_has_a_trace_view_on_the_scored_spans() -> None:
    panels = list(walk_panels(BY_UID["tracescore-traces"]["panels"]))
    (trace_view,) = [p for p in panels if p["type"] == "traces"]
    (target,) = trace_view["targets"]
    assert (target["queryType"], target["format"]) == ("traces", 3)
    assert "FROM otel_traces_scored" in target["rawSql"]


def _links(panel: dict[str, Any]) -> list[dict[str, Any]]:
    config = panel.get("fieldConfig", {})
    links = list(config.get("defaults", {}).get("links", []))
    for override in config.get("overrides", []):
        for prop in override["properties"]:
            if prop["id"] == "links":
                links.extend(prop["value"])
    return links


def test_data_links_open_dashboards_and_variables_that_exist() -> None:
    found = 0
    for dashboard in DASHBOARDS.values():
        for panel in walk_panels(dashboard["panels"]):
            for link in _links(panel):
                target = re.match(r"^/d/([^/?]+)/[^?]*\?(.*)$", link["url"])
                assert target, f"{dashboard['uid']} panel {panel['id']}: {link['url']}"
                linked = BY_UID[target.group(1)]
                names = {v["name"] for v in linked["templating"]["list"]}
                named = re.findall(r"var-(\w+)=", target.group(2))
                carried = re.findall(r"\$\{(\w+):queryparam\}", target.group(2))  # var-NAME=value each
                assert set(named + carried) <= names, link["url"]
                found += 1
    assert found >= 4  # worst runs, judge failures, traces, drift series


def test_worst_runs_link_to_the_trace_explorer() -> None:
    (worst,) = [p for p in BY_UID["tracescore-scores"]["panels"] if p["title"] == "Worst runs"]
    assert any(link["url"].startswith("/d/tracescore-traces/") for link in _links(worst))


def test_the_decisions_table_counts_every_decision_kind() -> None:
    (table,) = [
        p for p in BY_UID["tracescore-scores"]["panels"] if p["title"] == "Decisions by scorer and kind"
    ]
    sql = table["targets"][0]["rawSql"]
    for kind in typing.get_args(DecisionKind):
        assert f"Decision = '{kind}'" in sql, kind


def test_scorers_where_lower_is_better_are_known_and_the_same_for_dashboard_and_alert() -> None:
    variables = {v["name"]: v for v in BY_UID["tracescore-scores"]["templating"]["list"]}
    on_dashboard = set(re.findall(r"'([^']+)'", variables["inverted_scorers"]["query"]))
    (rule,) = [r for r in alert_rules() if r["uid"] == "tracescore-pass-rate-drop"]
    sql = rule["data"][0]["model"]["rawSql"]
    scorer_ids = re.search(r"ScorerId IN \(([^)]*)\)", sql)
    assert scorer_ids is not None
    in_rule = set(re.findall(r"'([^']+)'", scorer_ids.group(1)))
    lower_is_better = {"bias", "hallucination", "toxicity"}
    # By name, and by the id earlier releases stored them under (their rows are still read).
    assert on_dashboard == in_rule == lower_is_better | {f"{name}-scorer" for name in lower_is_better}
    assert in_rule <= {name for entry in registered().values() for name in entry.spec.names}


# --- alerting ------------------------------------------------------------------------------------------


def test_alert_rules_carry_what_grafana_needs() -> None:
    document = load_yaml("alerting/tracescore.yaml")
    assert document["apiVersion"] == 1
    sources = datasources()
    uids = []
    for group in document["groups"]:
        assert group["name"] and group["folder"] == "tracescore" and DURATION.match(group["interval"])
        for rule in group["rules"]:
            uids.append(rule["uid"])
            assert rule["title"] and DURATION.match(rule["for"]), rule["uid"]
            assert rule["noDataState"] in ("NoData", "Alerting", "OK", "KeepLast")
            assert rule["execErrState"] in ("Error", "Alerting", "OK", "KeepLast")
            assert rule["labels"]["app"] == "tracescore" and rule["annotations"]["summary"]
            nodes = {d["refId"]: d for d in rule["data"]}
            assert len(nodes) == len(rule["data"]), rule["uid"]
            condition = nodes[rule["condition"]]
            assert condition["model"]["type"] == "threshold", rule["uid"]
            for ref_id, node in nodes.items():
                assert node["model"]["refId"] == ref_id
                window = node["relativeTimeRange"]
                assert window["from"] >= window["to"] >= 0
                if node["datasourceUid"] == EXPRESSION_UID:
                    model = node["model"]
                    assert model["datasource"]["uid"] == EXPRESSION_UID
                    assert model["type"] in ("reduce", "threshold", "math")
                    assert model["expression"] in nodes and model["expression"] != ref_id
                    if model["type"] == "threshold":
                        (evaluator,) = [c["evaluator"] for c in model["conditions"]]
                        assert evaluator["type"] in ("gt", "lt", "within_range", "outside_range")
                else:
                    assert node["datasourceUid"] in sources, rule["uid"]
                    assert node["model"]["datasource"]["uid"] == node["datasourceUid"]
                    assert window["from"] > 0
            panels = {p["id"] for p in walk_panels(BY_UID[rule["dashboardUid"]]["panels"])}
            assert rule["panelId"] in panels, rule["uid"]
    assert len(uids) == len(set(uids)) == 6


def _receivers(route: dict[str, Any]) -> set[str]:
    found = {route["receiver"]} if "receiver" in route else set()
    for child in route.get("routes", []):
        found |= _receivers(child)
    return found


def _matches(matchers: list[list[str]], labels: dict[str, str]) -> bool:
    """Alertmanager's label matchers (=, !=, =~, !~; regular expressions match the whole value)."""

    def check(value: str, op: str, wanted: str) -> bool:
        if op in ("=", "!="):
            return (value == wanted) == (op == "=")
        return (re.fullmatch(wanted, value) is not None) == (op == "=~")

    return all(check(labels.get(name, ""), op, wanted) for name, op, wanted in matchers)


def test_contact_point_and_policy_refer_to_each_other_and_route_every_rule() -> None:
    document = load_yaml("alerting/tracescore.yaml")
    (contact_point,) = document["contactPoints"]
    (receiver,) = contact_point["receivers"]
    assert receiver["type"] == "webhook" and receiver["uid"]
    assert receiver["settings"]["url"] == "${TRACESCORE_ALERT_WEBHOOK_URL}"
    (policy,) = document["policies"]
    assert _receivers(policy) == {contact_point["name"]}
    routes = policy["routes"]
    for rule in alert_rules():
        matching = [r for r in routes if _matches(r["object_matchers"], rule["labels"])]
        assert [r["receiver"] for r in matching] == [contact_point["name"]], rule["uid"]


# --- docs/grafana.md ------------------------------------------------------------------------------------


def _section(text: str, heading: str) -> str:
    """The level-2 section ``heading`` of ``text`` (its ### subsections included)."""
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + len(heading) + 2)
    return text[start : end if end != -1 else len(text)]


def test_the_grafana_page_describes_every_dashboard_and_alert_rule_with_its_threshold() -> None:
    text = GRAFANA_PAGE.read_text(encoding="utf-8")
    dashboards = _section(text, "## Dashboards") + _section(text, "## Setting Grafana up")
    for dashboard in DASHBOARDS.values():
        assert dashboard["title"] in dashboards
        for panel in walk_panels(dashboard["panels"]):
            if panel["type"] != "row":
                assert panel["title"].replace("$scorer", "").strip(": ") in dashboards, panel["title"]
    rules = _section(text, "## Alert rules")
    for rule in alert_rules():
        assert rule["title"] in rules
        (threshold,) = [d for d in rule["data"] if d["refId"] == rule["condition"]]
        (evaluator,) = [c["evaluator"] for c in threshold["model"]["conditions"]]
        assert f"{evaluator['params'][0]:g}" in rules, rule["uid"]
    for variable in ("GF_INSTALL_PLUGINS=grafana-clickhouse-datasource", "TRACESCORE_ALERT_WEBHOOK_URL"):
        assert variable in dashboards + rules
