"""The benchmark report (``bench.report``): each row's ratio to its same-run baseline, whether it met
its goal, and ``bench/report.json`` in the shape ``make bench`` promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import performance_page
from bench.report import Metric, machine, write_report


def test_a_goal_on_the_ratio_is_judged_on_value_over_baseline() -> None:
    faster = Metric("e2e_scored", 1_300.0, "traces/s", 1_200.0, ">= 1.0")
    slower = Metric("e2e_scored", 1_100.0, "traces/s", 1_200.0, ">= 1.0")

    assert faster.ratio == pytest.approx(1_300 / 1_200)
    assert (faster.met, slower.met) == (True, False)
    assert Metric("judge_efficiency", 5.8, "s", 5.6, "<= 1.05").met is True  # 1.036
    assert Metric("judge_efficiency", 6.0, "s", 5.6, "<= 1.05").met is False  # 1.071


def test_a_goal_on_the_value_ignores_the_baseline() -> None:
    under = Metric("e2e_rss", 750e6, "bytes", 900e6, "value <= 1073741824")
    over = Metric("e2e_rss", 1.2e9, "bytes", 400e6, "value <= 1073741824")

    assert (under.met, over.met) == (True, False)
    assert over.ratio == pytest.approx(3.0)  # still reported


def test_without_a_baseline_or_a_bound_nothing_is_claimed() -> None:
    assert Metric("x", 1.0, "s", None, ">= 1").ratio is None
    assert Metric("x", 1.0, "s", None, ">= 1").met is None
    assert Metric("x", 1.0, "s", 0.0, ">= 1").met is None  # no division by zero
    assert Metric("judge_vs_ideal", 5.8, "s", 1.6, "none: an explanation").met is None


def test_the_report_file_has_every_row_with_its_baseline_ratio_goal_and_peer(tmp_path: Path) -> None:
    rows = [
        Metric("e2e_ingest", 400.0, "requests/s", 10_000.0, ">= 0.5", baseline_label="bare sink"),
        Metric(
            "peer_phoenix",
            4.0,
            "s",
            14.0,
            "<= 1.0",
            peer={"name": "Arize Phoenix 20.26.1", "value": 14.0},
            detail={"load": "16 clients"},
        ),
    ]
    path = tmp_path / "report.json"
    write_report(rows, machine(), path)
    report = json.loads(path.read_text())

    assert report["machine"]["cpus"] >= 1
    assert len(report["machine"]["load_average_1m_5m_15m"]) == 3
    assert len(report["machine"]["load_average_at_end"]) == 3
    assert list(report["metrics"]) == ["e2e_ingest", "peer_phoenix"]
    ingest, peer = report["metrics"]["e2e_ingest"], report["metrics"]["peer_phoenix"]
    assert {"value", "unit", "baseline", "ratio", "goal", "met", "peer"} <= set(ingest)
    assert (ingest["value"], ingest["baseline"], ingest["ratio"], ingest["met"]) == (
        400.0,
        10_000.0,
        0.04,
        False,
    )
    assert (peer["peer"]["name"], peer["met"], peer["detail"]) == (
        "Arize Phoenix 20.26.1",
        True,
        {"load": "16 clients"},
    )


def test_a_whole_run_rewrites_the_performance_pages_table_and_nothing_else(tmp_path: Path) -> None:
    rows = [
        Metric("span_store", 9_000.0, "spans/CPU-s", 10_000.0, ">= 0.9", baseline_label="bare inserts"),
        Metric("watch: full drift pass (window 1h)", 0.8, "s", 0.3, "value <= 1", baseline_label="FINAL"),
        Metric("watch: full drift pass, cold (window 1h)", 1.2, "s", 0.3, "value <= 1.6", baseline_label="F"),
        Metric("watch: agreement pass (window 7d)", 1.7, "s", 0.3, "value <= 2", baseline_label="F"),
        Metric("watch: panel a", 1.5, "s", 0.25, "value <= 2", baseline_label="FINAL"),
    ]
    report_path, page_path = tmp_path / "report.json", tmp_path / "performance.md"
    write_report(rows, machine(), report_path)
    old_table = f"{performance_page.START}\nan old table\n{performance_page.END}"
    page_path.write_text(f"# Performance\n\nBefore.\n\n{old_table}\n\nAfter.\n")

    performance_page.update(report_path, page_path)

    page = page_path.read_text()
    assert page.startswith("# Performance\n\nBefore.\n\n") and page.endswith("\n\nAfter.\n")
    assert "an old table" not in page
    table = page.split(performance_page.START)[1].split(performance_page.END)[0]
    lines = [line for line in table.splitlines() if line.startswith("| `")]
    assert lines[0].startswith("| `span_store` |") and "| 0.9 | >= 0.9 | yes |" in lines[0]
    # The watch rows are one line: each pass, the slowest panel (not a pass), the cheapest baseline.
    assert len(lines) == 2 and lines[1].startswith("| `watch: …` (4 rows) |")
    assert "| drift pass 0.80 s (goal value <= 1), cold drift pass 1.20 s (goal value <= 1.6)" in lines[1]
    assert "agreement pass 1.70 s (goal value <= 2), slowest panel 1.50 s |" in lines[1]
    assert "`FINAL` count of the week: 0.25 s" in lines[1] and lines[1].endswith("| yes |")


def test_the_performance_page_has_the_markers_a_whole_run_writes_between() -> None:
    page = performance_page.PAGE.read_text()
    assert page.count(performance_page.START) == 1 and page.count(performance_page.END) == 1
    assert page.index(performance_page.START) < page.index(performance_page.END)
