"""``tracescore report``: one self-contained HTML page of what the store holds (``ingest.reporting``),
written to a file that opens offline in any browser.

Where it reads, as ``scores`` and ``drift`` do (``ingest.cli.store_access``): the store itself, or,
while ``tracescore serve`` holds it, the service's ``GET /report``, which serves the same page.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime

from tracescore.ingest.cli.store_access import (
    Failed,
    ServiceApi,
    add_store_arguments,
    on_store,
    service_api,
    store_config,
    through_front_door,
)
from tracescore.ingest.reporting.report_page import build_report, write_page
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.durations import parse_time
from tracescore.scoring.runtime.rule_routing import build_rules

REPORT_PATH = "/report"
DEFAULT_SINCE = "24h"
DEFAULT_OUT = "report.html"
REPORT_TIMEOUT_SECONDS = 300.0  # a long period on a large store, read by the service


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "report",
        help="write one self-contained HTML page of the scores (opens offline, no Grafana needed)",
        description=(
            "Write one HTML page of the runs started in a period: each scorer's scores over time with "
            "drift findings and version changes marked, score distributions, the decision mix and why "
            "units were not scored, the lowest scores with what their scorer saw, judge cost, and "
            "agreement with human labels. The page holds its charts' code (plotly.js) and makes no "
            "request: it opens offline. While 'tracescore serve' holds the embedded store, the page "
            "comes from that service's GET /report (at --url, with TRACESCORE_AUTH_TOKEN)."
        ),
    )
    parser.add_argument(
        "--since", default=DEFAULT_SINCE, help=f"start: an ISO time or an age (default {DEFAULT_SINCE})"
    )
    parser.add_argument("--until", default="now", help="end: an ISO time or an age (default now)")
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"the file to write (default {DEFAULT_OUT}); - for stdout"
    )
    add_store_arguments(parser, "YAML or JSON config file (its store, receiver and scoring settings)")
    parser.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    since, until = parse_time(args.since, now), parse_time(args.until, now)
    if since >= until:
        raise ValueError(f"--since ({args.since}) must be before --until ({args.until})")
    config = store_config(args)

    async def direct() -> str:
        groups = build_rules(config.scoring.rules, judge=config.scoring.judge)
        links = service_api(config, args).url

        async def build(store: Store) -> str:
            max_items = config.assembly.max_spans_per_trace
            return await build_report(
                store,
                groups,
                since,
                until,
                max_items=max_items,
                service_url=links,
                agreement_config=config.agreement,
            )

        return await on_store(config, build)

    async def remote(api: ServiceApi) -> str:
        params = {"since": since.isoformat(), "until": until.isoformat()}
        return await api.page(REPORT_PATH, params, timeout_s=REPORT_TIMEOUT_SECONDS)

    try:
        page = asyncio.run(through_front_door(config, args, direct, remote))
    except Failed as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return exc.status
    if args.out == "-":
        sys.stdout.write(page)
    else:
        print(write_page(args.out, page))
    return 0
