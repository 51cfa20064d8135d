"""``make bench``: every benchmark as a ratio to a baseline measured in the same run, written to
``bench/report.json`` and printed as a table (see ``bench.report``); a whole run also rewrites the
table of docs/performance.md (``bench.performance_page``). ``python -m bench --peers`` adds the
peer rows (``make bench-peers`` installs the peers first).

Each module below measures its rows and returns them as ``Metric``s; run one alone with
``python -m bench --only e2e``.
"""

from __future__ import annotations

import argparse
import importlib

from rich.console import Console

from bench import performance_page
from bench.report import Metric, machine, print_report, write_report

PARTS = (
    "micro",
    "judge",
    "e2e",
    "recovery",
    "held_traces",
    "kafka_path",
    "watch",
    "store_path",
    "store_disk",
)
PEER_PARTS = ("peers",)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--only", action="append", choices=PARTS + PEER_PARTS, help="run only these parts")
    parser.add_argument("--peers", action="store_true", help="also measure the peers (make bench-peers)")
    args = parser.parse_args()
    parts = args.only or list(PARTS) + (list(PEER_PARTS) if args.peers else [])
    console = Console()
    if not console.is_terminal:  # a log file or a pipe: wide enough for the table
        console = Console(width=180)
    start = machine()
    console.print(f"machine: {start}")
    metrics: list[Metric] = []
    for part in parts:
        module = importlib.import_module(f"bench.{part}")
        found = module.metrics()
        print_report(found, console)
        metrics.extend(found)
    write_report(metrics, start)
    print_report(metrics, console)
    if not args.only:  # a whole run: the performance page shows it
        performance_page.update()
        console.print(f"written: {performance_page.PAGE.relative_to(performance_page.PAGE.parents[1])}")


if __name__ == "__main__":
    main()
