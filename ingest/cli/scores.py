"""``tracescore scores``: the stored scores (or decisions), filtered, as a table or JSON.

Where it reads: a ClickHouse server store is queried directly. The embedded store is opened
directly when no process holds it; while ``tracescore serve`` holds it (chDB allows one process per
data directory) the command asks that service's HTTP API instead. Both give the same rows, and the
same answer for a trace without rows (``schemas.results.TraceStatus``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import aiohttp

from ingest.cli.score_table import print_rows, scorers_hint
from ingest.receivers.auth import configured_token
from ingest.store.clickhouse import Store
from ingest.store.dsn import resolve_dsn
from ingest.store.engine_open import held_by_another as _held
from ingest.store.results import ScoreResults
from schemas.config import ServiceConfig, load_config
from schemas.errors import StoreError, StoreInUse
from schemas.results import (
    DECISION_KINDS,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    QueryError,
    ResultQuery,
    TraceStatus,
    parse_query,
)

URL_VARIABLE = "TRACESCORE_URL"
HTTP_TIMEOUT_SECONDS = 30.0
EXIT_NOT_FOUND = 1  # the trace has no rows; the answer says why
EXIT_FAILED = 1  # the store or the service could not answer
EXIT_USAGE = 2

Rows = list[dict[str, Any]]


class _Failed(Exception):
    """The command cannot answer: one line for stderr, and the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.status = status


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
    parser.add_argument("--config", help="YAML or JSON config file (its store and receiver settings)")
    parser.add_argument(
        "--store", help="chDB data directory (default ./tracescore-data) or http(s)://clickhouse DSN"
    )
    parser.add_argument("--url", help=f"the running service's OTLP/HTTP address (or ${URL_VARIABLE})")
    parser.set_defaults(func=cmd_scores)


def cmd_scores(args: argparse.Namespace) -> int:
    decisions = bool(args.decisions or args.decision)
    flags = {
        "trace_id": args.trace_id,
        "scorer": args.scorer,
        "service": args.service,
        "agent": args.agent,
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
    config = load_config(args.config, overrides={"store": args.store})
    try:
        found = asyncio.run(_read(config, args, query, params, decisions))
    except _Failed as exc:
        return _fail(str(exc), exc.status)
    if isinstance(found, TraceStatus):
        if args.json:
            print(json.dumps(found.model_dump(exclude_none=True)))
        else:
            print(f"trace {found.trace_id}: {found.message}")
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
    except _Failed as exc:
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
    """The rows from the store, or from the service that holds it (see the module docstring)."""
    given_url = args.url or os.environ.get(URL_VARIABLE)
    api = _Api(
        (given_url or f"http://127.0.0.1:{config.receiver.http_port}").rstrip("/"),
        configured_token(config.receiver),
    )
    if given_url and not args.store:
        return await api.read(params, decisions)
    dsn = resolve_dsn(config.store)
    if not dsn.startswith("chdb://"):
        return await _read_store(config, query, decisions)
    path = dsn[len("chdb://") :]
    if not await asyncio.to_thread(os.path.isdir, path):  # never create a store only to read it
        why = f"there is no store at {path}"
        return await api.read(params, decisions, why=why, hint="give --store or the service's --url")
    held = f"the store {path} is held by another process (a running 'tracescore serve'?)"
    hint = "give the --url of the service that holds it"
    if await asyncio.to_thread(_held, path):
        return await api.read(params, decisions, why=held, hint=hint)
    try:
        return await _read_store(config, query, decisions)
    except StoreInUse:  # taken between the look and the open
        return await api.read(params, decisions, why=held, hint=hint)


async def _read_store(config: ServiceConfig, query: ResultQuery, decisions: bool) -> Rows | TraceStatus:
    store = Store.from_config(config)
    try:
        await store.start()
        results = ScoreResults(store)
        return await (results.decisions(query) if decisions else results.scores(query))
    except StoreInUse:
        raise
    except StoreError as exc:
        raise _Failed(str(exc)) from None
    finally:
        await store.shutdown()


@dataclass(frozen=True)
class _Api:
    """The service's ``/api/scores`` and ``/api/decisions``."""

    url: str
    token: str | None

    async def read(
        self, params: dict[str, str], decisions: bool, why: str = "", hint: str = ""
    ) -> Rows | TraceStatus:
        """``why``: why the store was not read directly, said (with ``hint``) when the service does
        not answer either."""
        path = "/api/decisions" if decisions else "/api/scores"
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        timeout = aiohttp.ClientTimeout(total=HTTP_TIMEOUT_SECONDS)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(self.url + path, params=params, headers=headers) as response,
            ):
                status = response.status
                try:
                    body = await response.json(content_type=None)
                except ValueError:
                    body = None
        except (aiohttp.ClientError, TimeoutError) as exc:
            message = f"no tracescore service answers at {self.url} ({_reason(exc)})"
            if why:
                message = f"{why}, and {message}; {hint}"
            raise _Failed(message) from None
        return self._answer(path, status, body)

    def _answer(self, path: str, status: int, body: Any) -> Rows | TraceStatus:
        if status == 200 and isinstance(body, list):
            return body
        if status == 404 and isinstance(body, dict) and "status" in body:
            return TraceStatus.model_validate(body)
        error = body.get("error") if isinstance(body, dict) else None
        if status == 401:
            hint = "refused the token of TRACESCORE_AUTH_TOKEN" if self.token else "wants a bearer token"
            raise _Failed(f"the service at {self.url} {hint}: set TRACESCORE_AUTH_TOKEN", EXIT_USAGE)
        if error:
            raise _Failed(f"the service at {self.url} answered {status}: {error}")
        raise _Failed(f"{self.url}{path} did not answer as tracescore does (HTTP {status})")


def _reason(exc: Exception) -> str:
    """Why a request got no answer, in a few words ("Connection refused", "timed out")."""
    if isinstance(exc, aiohttp.ClientConnectorError) and exc.os_error.errno:
        return os.strerror(exc.os_error.errno)
    if isinstance(exc, TimeoutError):
        return f"no answer within {HTTP_TIMEOUT_SECONDS:g} s"
    return str(exc) or type(exc).__name__
