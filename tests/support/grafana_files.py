"""The Grafana provisioning of deploy/grafana as data: its files, every query in them, and the template
variables a dashboard's queries see (resolved the way Grafana resolves them, against a real store).

The SQL itself is rendered by ``tests.support.grafana``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.grafana import Selection, TimeRange, render

GRAFANA_DIR = Path(__file__).resolve().parents[2] / "deploy" / "grafana"
DASHBOARD_DIR = GRAFANA_DIR / "dashboards"
PROVISIONING_DIR = GRAFANA_DIR / "provisioning"
CLICKHOUSE_TYPE = "grafana-clickhouse-datasource"
PROMETHEUS_TYPE = "prometheus"
EXPRESSION_UID = "__expr__"
GRAFANA_BUILTIN_UID = "-- Grafana --"  # the built-in annotations of every dashboard
# The database the tests' data source gives the queries: not default, as a deployment may choose.
DATA_SOURCE_DATABASE = "tracescore_dashboards"

# One SELECT: rows as dicts (Store.query).
RunSql = Callable[[str], Awaitable[list[dict[str, Any]]]]


def load_yaml(relative: str) -> Any:
    return yaml.safe_load((PROVISIONING_DIR / relative).read_text(encoding="utf-8"))


def load_dashboards() -> dict[str, Any]:
    """Every dashboard JSON by file name."""
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(DASHBOARD_DIR.glob("*.json"))
    }


def walk_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside (collapsed) rows too."""
    for panel in panels:
        yield panel
        yield from walk_panels(panel.get("panels", []))


@dataclass(frozen=True)
class Query:
    """One query of a dashboard: a panel target, an annotation or a template variable."""

    where: str
    datasource: dict[str, Any]
    target: dict[str, Any]
    repeat: str | None = None
    panel: dict[str, Any] = field(default_factory=dict)

    @property
    def sql(self) -> str:
        return str(self.target["rawSql"])


def dashboard_queries(dashboard: dict[str, Any]) -> list[Query]:
    """Every panel target and annotation query of the dashboard (not its variables)."""
    queries = []
    for panel in walk_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            source = target.get("datasource") or panel["datasource"]
            where = f"{dashboard['uid']} panel {panel['id']} ({panel['title']}) {target['refId']}"
            queries.append(Query(where, source, target, panel.get("repeat"), panel))
    for annotation in dashboard.get("annotations", {}).get("list", []):
        if "target" in annotation:
            where = f"{dashboard['uid']} annotation {annotation['name']}"
            queries.append(Query(where, annotation["datasource"], annotation["target"]))
    return queries


def is_clickhouse(query: Query) -> bool:
    return query.datasource.get("type") == CLICKHOUSE_TYPE


def is_prometheus(query: Query) -> bool:
    return query.datasource.get("type") == PROMETHEUS_TYPE


async def resolve_variables(
    dashboard: dict[str, Any],
    run: RunSql,
    time_range: TimeRange,
    pick_all: bool,
    overrides: Mapping[str, Selection] | None = None,
) -> dict[str, Selection]:
    """The dashboard's variables in order, each query variable's options read from the store through
    its own SQL (which sees the variables before it). ``pick_all``: All where a variable offers it,
    else each variable's first option. A query variable without options fails: its panels would
    have nothing to show."""
    chosen: dict[str, Selection] = {}
    for variable in dashboard["templating"]["list"]:
        name, kind = variable["name"], variable["type"]
        if overrides and name in overrides:
            chosen[name] = overrides[name]
        elif kind == "query" and variable["datasource"]["type"] == CLICKHOUSE_TYPE:
            sql = render(variable["query"]["rawSql"], chosen, time_range)
            rows = await run(sql)
            options = tuple(str(next(iter(row.values()))) for row in rows)
            assert options, f"variable {name} of {dashboard['uid']} has no options: {sql}"
            multi = bool(variable.get("multi"))
            if pick_all and variable.get("includeAll"):
                chosen[name] = Selection(options, multi, True, options, variable.get("allValue"))
            else:
                chosen[name] = Selection(options[:1], multi, False, options)
        elif kind == "query":
            # Variables of other data sources (Prometheus) never reach ClickHouse queries.
            chosen[name] = Selection((), True, True, (), variable.get("allValue"))
        elif kind == "custom":
            options = tuple(value.strip() for value in variable["query"].split(","))
            chosen[name] = Selection((str(variable["current"]["value"]),), False, False, options)
        elif kind in ("constant", "textbox"):
            value = variable["query"] if kind == "constant" else variable["current"]["value"]
            chosen[name] = Selection.one(str(value))
        else:
            raise AssertionError(f"variable type {kind} ({name}) is not resolved by these tests")
    return chosen


def repeat_scopes(query: Query, variables: Mapping[str, Selection]) -> list[dict[str, Selection]]:
    """A repeated panel runs once per value of its variable, that value scoped to the panel."""
    if query.repeat is None:
        return [{}]
    selection = variables[query.repeat]
    values = selection.options if selection.is_all else selection.values
    return [{query.repeat: Selection.one(value)} for value in values]


# --- alert rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlertQuery:
    rule: dict[str, Any]
    data: dict[str, Any]

    @property
    def where(self) -> str:
        return f"alert rule {self.rule['uid']} {self.data['refId']}"


def alert_rules() -> list[dict[str, Any]]:
    document = load_yaml("alerting/tracescore.yaml")
    return [rule for group in document["groups"] for rule in group["rules"]]


def alert_queries(datasource_uid: str) -> list[AlertQuery]:
    return [
        AlertQuery(rule, data)
        for rule in alert_rules()
        for data in rule["data"]
        if data["datasourceUid"] == datasource_uid
    ]


# --- PromQL ----------------------------------------------------------------------------------------

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*$")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def promql_metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (ours all start with ``tracescore_``)."""
    bare = _RANGES.sub("", _STRINGS.sub('""', expr))
    return {name for name in _IDENTIFIER.findall(bare) if name.startswith("tracescore_")}


def promql_label_names(expr: str) -> set[str]:
    """The label names an expression matches on or groups by."""
    labels: set[str] = set()
    for group in _GROUPING.findall(expr):
        labels.update(part.strip() for part in group.split(",") if part.strip())
    for selector in re.findall(r"\{([^}]*)\}", _STRINGS.sub('""', expr)):
        for part in selector.split(","):
            matched = _MATCHER.search(part.split('""')[0]) if '""' in part else None
            if matched:
                labels.add(matched.group(1))
    return labels
