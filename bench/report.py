"""The benchmark report: every row a measurement, its baseline measured in the same run, their ratio and
the goal it is held to; written to ``bench/report.json`` and printed as a table.

    {"machine": {...}, "metrics": {"e2e_ingest": {"value": 250.0, "unit": "requests/s",
     "baseline": 410.0, "ratio": 0.61, "goal": ">= 0.5", "met": true, "peer": null, "detail": {...}}}}

``ratio`` is value / baseline. ``goal`` is a bound on the ratio (``>= 0.5``, ``<= 1.05``) or on the value
(``value <= 1 GiB``); ``met`` says whether this run met it. Machines here are noisy: each side is the
best (or median, as the row says) of several repeats, measured back to back, and the load average at the
start and end of the run is part of the report.
"""

from __future__ import annotations

import json
import operator
import os
import platform
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

REPORT = Path(__file__).resolve().parent / "report.json"

_BOUND = re.compile(r"^(value\s*)?(>=|<=)\s*([0-9.eE+-]+)$")
_OPERATORS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le}


@dataclass
class Metric:
    """One row of the report."""

    name: str
    value: float
    unit: str
    baseline: float | None  # the same quantity for the baseline, measured in the same run
    goal: str  # ">= 0.5" on the ratio, or "value <= 1073741824" on the value
    baseline_label: str = ""  # what the baseline is, e.g. "bare aiohttp OTLP sink"
    peer: dict[str, Any] | None = None  # a peer's figure, e.g. {"name": "Arize Phoenix 20.26", ...}
    detail: dict[str, Any] = field(default_factory=dict)  # per-scorer ratios, repeats, ...

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        """Whether this run met the goal (None when the goal cannot be judged)."""
        match = _BOUND.match(self.goal.strip())
        if match is None:
            return None
        on_value, op, bound = match.group(1), match.group(2), float(match.group(3))
        measured = self.value if on_value else self.ratio
        return None if measured is None else _OPERATORS[op](measured, bound)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["name"]
        return {**data, "ratio": self.ratio, "met": self.met}


def machine() -> dict[str, Any]:
    """What the numbers were measured on, and how busy it was."""
    load = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_1m_5m_15m": [round(x, 2) for x in load],
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_report(metrics: Iterable[Metric], start: dict[str, Any], path: Path = REPORT) -> dict[str, Any]:
    """``bench/report.json``: the machine at the start and the end of the run, and every row."""
    report = {
        "machine": {**start, "load_average_at_end": machine()["load_average_1m_5m_15m"]},
        "metrics": {metric.name: metric.as_json() for metric in metrics},
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def print_report(metrics: Iterable[Metric], console: Console | None = None) -> None:
    table = Table(title="tracescore benchmarks (ratio = ours / same-run baseline)")
    for column in ("metric", "ours", "baseline", "ratio", "goal", "met", "peer"):
        table.add_column(column, justify="left" if column in ("metric", "goal", "peer") else "right")
    for metric in metrics:
        baseline = "" if metric.baseline is None else f"{_number(metric.baseline)} ({metric.baseline_label})"
        ratio = "" if metric.ratio is None else f"{metric.ratio:.3g}"
        met = {True: "yes", False: "[red]NO[/red]", None: ""}[metric.met]
        peer = "" if metric.peer is None else f"{metric.peer.get('name', '')}: {metric.peer.get('value', '')}"
        table.add_row(
            metric.name, f"{_number(metric.value)} {metric.unit}", baseline, ratio, metric.goal, met, peer
        )
    (console or Console()).print(table)


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"
