"""``python -m tests.soak [--minutes N] [--seed S] [--out DIR] [--store-floor SIZE]``: the chaos soak
(``make soak``). Prints one line per criterion and a summary, writes ``report.json`` to the output
directory, and exits 0 only when every criterion holds (1 otherwise, 130 when interrupted)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.soak import report
from tests.soak.run import Options, parse_size, soak


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=20.0, help="how long the load runs (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="the fault schedule's seed (default 1)")
    parser.add_argument("--out", type=Path, help="where the report and the logs go (default: a new temp dir)")
    parser.add_argument(
        "--store-floor",
        help="the store's free-space floor, e.g. 128MiB (TRACESCORE_STORE_MIN_FREE_BYTES; "
        "default: the service's own)",
    )
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    if args.store_floor is not None:
        try:
            parse_size(args.store_floor)
        except ValueError:
            parser.error(f"--store-floor {args.store_floor!r} is not a size (e.g. 128MiB)")
    out = args.out or Path(tempfile.mkdtemp(prefix="tracescore-soak-report-"))
    return Options(minutes=args.minutes, seed=args.seed, out=out, store_floor=args.store_floor)


async def _main(options: Options) -> int:
    # SIGTERM ends the soak as Ctrl-C does: every process it started is stopped on the way out.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    result = await soak(options)
    for line in report.lines(result):
        print(line)
    path = report.write(result, options.out / "report.json")
    print(f"\nreport: {path}\nserve's log: {result.serve_log}")
    return 0 if all(verdict.passed for verdict in result.verdicts) else 1


def main(argv: Sequence[str] | None = None) -> int:
    options = parse(argv)
    try:
        return asyncio.run(_main(options))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("soak: interrupted; every process it started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
