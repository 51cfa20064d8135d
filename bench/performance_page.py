"""docs/performance.md's "latest run" table, written from ``bench/report.json``.

``make bench`` ends by rewriting the part of the page between the two markers below, so the numbers a
reader sees are the numbers the last full run measured, never hand-copied; ``python -m
bench.performance_page`` does it again from the report on disk. The prose around the table (why a row
misses its goal, what one replica handles) is written by people and stays as it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.report import REPORT

PAGE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
START = "<!-- latest run: written by make bench from bench/report.json -->"
END = "<!-- end of the latest run -->"
WATCH_PREFIX = "watch: "
DRIFT_ROW = WATCH_PREFIX + "full drift pass"
AGREEMENT_ROW = WATCH_PREFIX + "agreement pass"

# What each row measures, as a reader needs it in the table (the bench modules' docstrings say more).
MEASURED = {
    "e2e_ingest": "acknowledged requests/s, 16 clients × one 3-span trace per request",
    "e2e_scored": "traces scored/s, 4 clients × 100 traces per request, 30 s steady state",
    "e2e_latency_p99": "root span's end → its scores stored, OTel SDK `BatchSpanProcessor` at 600 traces/s",
    "e2e_rss": "peak resident memory of `serve` under that load",
    "held_traces_latency_p99": "p99 of ending traces while 200,000 others stay open, against none open",
    "held_traces_rss": "peak resident memory of `serve` meanwhile, `memory_limit` 1 GiB",
    "decode_transform": "OTLP protobuf → spans → agent runs, per CPU-second",
    "span_store": "spans through the span sink into chDB, per CPU-second",
    "heuristics_vs_autoevals": "exact match, Levenshtein, JSON diff, list contains, numeric diff; 2 lengths",
    "heuristics_vs_autoevals_min": "the slowest of those cells",
    "heuristics_vs_mastra": "textual difference, content similarity, keyword coverage, completeness, tone",
    "heuristics_vs_mastra_min": "the slowest of those cells",
    "judge_efficiency": "1,000 toxicity runs at concurrency 64, local judge answering in 50 ms",
    "judge_throughput": "judge calls/s at concurrency 256, local judge answering in 50 ms",
    "kafka_path": "spans/s consumed from the broker and stored, 256-span messages, 4 partitions",
    "kafka_scored": "runs scored/s against traces stored/s on that path",
    "store_floor": "the Kafka path's spans per CPU-second (decode, store, assemble, score)",
    "store_parts_60": "part directories the embedded store writes per second, 60 one-trace requests/s",
    "store_kept_60": "most bytes of merged-away parts on its disk meanwhile",
    "store_per_hour_60": "what its disk needs per hour of that load: live data's growth and the parts kept",
    "store_parts_600": "the same at 600 traces/s, 10 traces per request",
    "store_kept_600": "most bytes of merged-away parts meanwhile",
    "store_per_hour_600": "what the disk needs per hour of that load",
    "peer_phoenix": "16 clients × 1 trace per request, 1,000 traces: seconds to all scored / queryable",
    "peer_phoenix_batched": "4 clients × 100 traces per request, 10,000 traces: traces scored / queryable/s",
}


def number(value: float) -> str:
    """A figure as the table shows it: thousands separated above 100, three significant digits below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _met(met: bool | None) -> str:
    return {True: "yes", False: "no", None: ""}[met]


def _row(name: str, row: dict[str, Any]) -> str:
    baseline = "" if row["baseline"] is None else f"{row['baseline_label']}: {number(row['baseline'])}"
    ratio = "" if row["ratio"] is None else f"{row['ratio']:.3g}"
    ours = f"{number(row['value'])} {row['unit']}"
    cells = (f"`{name}`", MEASURED.get(name, ""), ours, baseline, ratio, row["goal"], _met(row["met"]))
    return "| " + " | ".join(cells) + " |"


def _pass_label(name: str) -> str:
    """How the table names a pass row: the drift pass (steady), the cold drift pass, the agreement pass."""
    if name.startswith(AGREEMENT_ROW):
        return "agreement pass"
    return "cold drift pass" if name.startswith(DRIFT_ROW + ", cold") else "drift pass"


def _watch_row(rows: dict[str, dict[str, Any]]) -> str:
    """The watch rows as one line: the drift pass, the slowest panel, and whether all met their goal."""
    passes = {name: row for name, row in rows.items() if name.startswith((DRIFT_ROW, AGREEMENT_ROW))}
    panels = {name: row for name, row in rows.items() if name not in passes}
    parts = [f"{_pass_label(name)} {row['value']:.2f} s (goal {row['goal']})" for name, row in passes.items()]
    if panels:
        parts.append(f"slowest panel {max(row['value'] for row in panels.values()):.2f} s")
    baseline = min(row["baseline"] for row in rows.values() if row["baseline"] is not None)
    met = all(row["met"] for row in rows.values())
    what = (
        "every Grafana panel and alert query over 7 days of 10 million score rows, a drift pass (steady and"
        " cold) and an agreement pass"
    )
    cells = (
        f"`watch: …` ({len(rows)} rows)",
        what,
        ", ".join(parts),
        f"`FINAL` count of the week: {baseline:.2f} s",
    )
    return "| " + " | ".join((*cells, "", "each row's own", _met(met))) + " |"


def table(report: dict[str, Any]) -> str:
    """The machine line and the table of every row of a report."""
    machine = report["machine"]
    start, end = machine["load_average_1m_5m_15m"][0], machine["load_average_at_end"][0]
    lines = [
        f"The latest run ({machine['time']}; {machine['cpus']} cores, Python {machine['python']}, "
        f"load average {start} at the start, {end} at the end):",
        "",
        "| row | what is measured | tracescore | same-run baseline | ratio | goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    metrics: dict[str, dict[str, Any]] = report["metrics"]
    watch = {name: row for name, row in metrics.items() if name.startswith(WATCH_PREFIX)}
    lines += [_row(name, row) for name, row in metrics.items() if name not in watch]
    if watch:
        lines.append(_watch_row(watch))
    return "\n".join(lines)


def rewrite(page: str, report: dict[str, Any]) -> str:
    """The page with the text between the markers replaced by the report's table."""
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(page):
        raise ValueError(f"the page has no {START!r} ... {END!r} markers")
    return pattern.sub(lambda _: f"{START}\n{table(report)}\n{END}", page, count=1)


def update(report_path: Path = REPORT, page_path: Path = PAGE) -> None:
    report = json.loads(report_path.read_text())
    page_path.write_text(rewrite(page_path.read_text(), report))


if __name__ == "__main__":
    update()
