"""``tracescore scores``: the stored scores (or decisions), filtered, as a table or JSON.

Where it reads: a ClickHouse server store is queried directly. The embedded store is opened
directly when no process holds it; while ``tracescore serve`` holds it (chDB allows one process per
data directory) the command asks that service's HTTP API instead. Both give the same rows, and the
same answer for a trace without rows (``schemas.score_queries.TraceStatus``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from tracescore.ingest.cli.score_table import print_rows, scorers_hint
from tracescore.ingest.cli.store_access import (
    EXIT_USAGE,
    URL_VARIABLE,
    Failed,
    ServiceApi,
    add_store_arguments,
    on_store,
    print_trace_status,
    through_front_door,
)
from tracescore.ingest.cli.store_flags import store_overrides
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.score_queries import (
    DECISION_KINDS,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    QueryError,
    ResultQuery,
    TraceStatus,
    parse_query,
)

EXIT_NOT_FOUND = 1  # the trace has no rows; the answer says why

Rows = list[dict[str, Any]]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "scores",
        help="list stored scores or decisions, filtered (from the store or the running service)",
        description=(
            "List score rows (or, with --decisions, decision rows), newest first. A ClickHouse server "
            "store (--store https://...) is queried directly. The embedded store is opened directly when "
            "no process holds it; while 'tracescore serve' holds it (chDB allows one process per data "
            f"directory), the query goes to that service's HTTP API at --url (or ${URL_VARIABLE}, default "
            "http://127.0.0.1:<receiver.http_port>), with the bearer token of TRACESCORE_AUTH_TOKEN when "
            "one is configured. --url without --store asks that service only. With --trace-id, a trace "
            "without rows exits with status 1 and says why: not received, received and not yet scored, "
            "nothing to score, or decided without a score."
        ),
    )
    parser.add_argument("--trace-id", help="only this trace (32 hex characters)")
    parser.add_argument("--scorer", help="only this scorer id (a rule's name, else the scorer's id)")
    parser.add_argument("--service", help="only runs of this service.name")
    parser.add_argument("--agent", help="only runs of this agent name")
    parser.add_argument("--session", help="only the session scores of this conversation (its session id)")
    parser.add_argument("--since", help="written at or after: an RFC 3339 time or an age (1h, 7d)")
    parser.add_argument("--until", help="written before: an RFC 3339 time or an age (1h, 7d)")
    parser.add_argument(
        "--limit", help=f"at most this many rows, the newest (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})"
    )
    parser.add_argument("--decisions", action="store_true", help="list decisions instead of scores")
    parser.add_argument(
        "--decision",
        choices=DECISION_KINDS,
        metavar="KIND",
        help=f"only decisions of this kind ({', '.join(DECISION_KINDS)}); implies --decisions",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    parser.add_argument(
        "--wide", action="store_true", help="full trace and span ids and every column, however wide"
    )
    add_store_arguments(parser, "YAML or JSON config file (its store and receiver settings)")
    parser.set_defaults(func=cmd_scores)


def cmd_scores(args: argparse.Namespace) -> int:
    decisions = bool(args.decisions or args.decision)
    flags = {
        "trace_id": args.trace_id,
        "scorer": args.scorer,
        "service": args.service,
        "agent": args.agent,
        "session": args.session,
        "since": args.since,
        "until": args.until,
        "limit": args.limit,
        "decision": args.decision,
    }
    params = {name: value for name, value in flags.items() if value is not None}
    try:
        query = parse_query(params, decisions=decisions)
    except QueryError as exc:
        return _fail(f"--{exc.parameter.replace('_', '-')}: {exc.reason}", EXIT_USAGE)
    overrides, flags = store_overrides(args)
    config = load_config(args.config, overrides=overrides, flags=flags)
    try:
        found = asyncio.run(_read(config, args, query, params, decisions))
    except Failed as exc:
        return _fail(str(exc), exc.status)
    if isinstance(found, TraceStatus):
        print_trace_status(found, args.json)
        return EXIT_NOT_FOUND
    if args.json:
        print(json.dumps(found, default=str))
    else:
        print_rows(found, decisions, query.limit, wide=args.wide)
    if not found and args.scorer:
        print(f"tracescore: {_scorers_with_rows(config, args, params, decisions)}", file=sys.stderr)
    return 0


def _scorers_with_rows(
    config: ServiceConfig, args: argparse.Namespace, params: dict[str, str], decisions: bool
) -> str:
    """Which scorers have rows under the other filters (among the newest MAX_LIMIT of them)."""
    others = {name: value for name, value in params.items() if name not in ("scorer", "limit")}
    widest = {**others, "limit": str(MAX_LIMIT)}
    kind = "decision" if decisions else "score"
    try:
        rows = asyncio.run(_read(config, args, parse_query(widest, decisions=decisions), widest, decisions))
    except Failed as exc:
        return f"no {kind} of scorer {args.scorer!r} (which scorers have {kind}s is unknown: {exc})"
    found = sorted({str(row.get("scorer_id")) for row in rows}) if isinstance(rows, list) else []
    return scorers_hint(args.scorer, found, kind, filtered=bool(others))


def _fail(message: str, status: int) -> int:
    print(f"tracescore: error: {message}", file=sys.stderr)
    return status


async def _read(
    config: ServiceConfig,
    args: argparse.Namespace,
    query: ResultQuery,
    params: dict[str, str],
    decisions: bool,
) -> Rows | TraceStatus:
    """The rows from the store, or from the service that holds it (``ingest.cli.store_access``)."""

    async def direct() -> Rows | TraceStatus:
        return await _read_store(config, query, decisions)

    async def remote(api: ServiceApi) -> Rows | TraceStatus:
        found = await api.get("/api/decisions" if decisions else "/api/scores", params)
        if not isinstance(found, list | TraceStatus):
            raise Failed(f"{api.url} did not answer as tracescore does (not a list of rows)")
        return found

    return await through_front_door(config, args, direct, remote)


async def _read_store(config: ServiceConfig, query: ResultQuery, decisions: bool) -> Rows | TraceStatus:
    async def read(store: Store) -> Rows | TraceStatus:
        results = ScoreResults(store)
        return await (results.decisions(query) if decisions else results.scores(query))

    return await on_store(config, read)
