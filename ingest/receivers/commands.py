"""The service's HTTP API for the commands that work on the store, so that they work while the service
holds it (chDB allows one process per data directory): ``tracescore runs``, ``drift`` and
``backfill`` ask these routes then, and print what they would print on the store itself; ``GET /report``
serves the page ``tracescore report`` writes.

- ``GET /api/runs?trace_id=…``: the units the scorers saw of a stored trace, with each rule's
  decision (``ingest.replay.scorer_inputs``); 404 with the trace's status when the store holds nothing of it.
- ``POST /api/drift`` (JSON: ``window``, ``baseline``, ``until``, ``record``, ``notify``): one drift
  pass with the service's drift settings and thresholds; ``notify`` posts to the service's webhooks.
- ``POST /api/backfill`` (JSON: ``since``, ``until``, ``rules``, ``dry_run``, ``rate``): a backfill
  with the service's scoring rules and judge, in the service. The answer streams JSON lines: progress
  (``{"progress": {"done": n, "total": m}}``, repeated at least every ``HEARTBEAT_SECONDS``), then
  ``{"report": {…}}`` or ``{"error": "…"}``. One at a time (409 while one runs); a client that goes
  away stops it (a backfill resumes where it stopped when run again).
- ``GET /report?since=24h&until=now``: the report page of the runs started in the period
  (``ingest.reporting``), its run links absolute to the address the request was sent to. A store that
  cannot answer is a 503 or 500 with a JSON error, never a page.

They sit behind the receiver's bearer token like every ``/api/*`` route. A body or parameter that is
wrong is a 400 naming it; a store that cannot answer is a 503 (retriable) or 500, as for the reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracescore.ingest.alerting.drift_monitor import DriftMonitor
from tracescore.ingest.receivers.disclosure import API_STORE_FAILED, STORE_UNAVAILABLE
from tracescore.ingest.replay.backfill import PROGRESS_EVERY_SECONDS as HEARTBEAT_SECONDS
from tracescore.ingest.replay.backfill import Backfill
from tracescore.ingest.replay.scorer_inputs import scored_units
from tracescore.ingest.reporting.report_page import build_report
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.drift_config import Duration
from tracescore.schemas.durations import parse_time
from tracescore.schemas.errors import StoreError
from tracescore.schemas.score_queries import QueryError, TraceStatus, parse_query
from tracescore.scoring.runtime.rule_routing import RuleGroup

log = logging.getLogger(__name__)

RUNS_PATH = "/api/runs"
DRIFT_PATH = "/api/drift"
BACKFILL_PATH = "/api/backfill"
REPORT_PATH = "/report"
REPORT_DEFAULT_SINCE = "24h"
RETRY_AFTER_SECONDS = 5
NDJSON = "application/x-ndjson"
_dumps = partial(json.dumps, default=str)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DriftRequest(_Body):
    window: Duration | None = None  # default: the service's drift.window
    baseline: Duration | None = None
    until: datetime | None = None  # default: now
    record: bool = True
    notify: bool = False


class BackfillRequest(_Body):
    since: datetime
    until: datetime
    rules: list[str] = Field(default_factory=list)
    dry_run: bool = False
    rate: float | None = Field(default=None, gt=0)


B = TypeVar("B", bound=BaseModel)


class BadRequest(Exception):
    """A request the command cannot run: said in a 400."""


class StoreCommands:
    """The routes above, over the service's store and configuration."""

    def __init__(
        self,
        store: Store,
        config: ServiceConfig,
        rule_groups: Sequence[RuleGroup],
        thresholds: Mapping[str, tuple[float, str]],
    ) -> None:
        self._store = store
        self._config = config
        self._groups = tuple(rule_groups)
        self._thresholds = dict(thresholds)
        self._backfill: asyncio.Task[Any] | None = None

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get(RUNS_PATH, self._answering(self._runs))
        router.add_post(DRIFT_PATH, self._answering(self._drift))
        router.add_post(BACKFILL_PATH, self._answering(self._start_backfill))
        router.add_get(REPORT_PATH, self._answering(self._report))

    def _answering(
        self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """The handler, with a wrong request a 400 and a failing store a 503 or 500."""

        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                return await handler(request)
            except BadRequest as exc:
                return web.json_response({"error": str(exc)}, status=400)
            except QueryError as exc:
                return web.json_response({"error": str(exc), "parameter": exc.parameter}, status=400)
            except StoreError as exc:
                return store_failed(request, exc)

        return handle

    async def _runs(self, request: web.Request) -> web.StreamResponse:
        unknown = sorted(set(request.query) - {"trace_id"})
        if unknown:
            raise QueryError(unknown[0], "unknown parameter; give trace_id")
        query = parse_query(request.query, decisions=False)
        if query.trace_id is None:
            raise QueryError("trace_id", "give the trace id (32 hex characters)")
        max_items = self._config.assembly.max_spans_per_trace
        found = await scored_units(self._store, self._groups, query.trace_id, max_items)
        if isinstance(found, TraceStatus):
            return web.json_response(found.model_dump(exclude_none=True), status=404)
        return web.json_response(found, dumps=_dumps)

    async def _report(self, request: web.Request) -> web.StreamResponse:
        unknown = sorted(set(request.query) - {"since", "until"})
        if unknown:
            raise QueryError(unknown[0], "unknown parameter; give since and until")
        now = datetime.now(UTC)
        period = {"since": REPORT_DEFAULT_SINCE, "until": "now", **request.query}
        since, until = (_time(name, period[name], now) for name in ("since", "until"))
        if since >= until:
            raise QueryError("until", "must be after since")
        page = await build_report(
            self._store,
            self._groups,
            since,
            until,
            max_items=self._config.assembly.max_spans_per_trace,
            service_url=str(request.url.origin()),
            agreement_config=self._config.agreement,
        )
        response = web.Response(text=page, content_type="text/html")
        response.enable_compression()  # most of the page is plotly.js: about a third of it gzipped
        return response

    async def _drift(self, request: web.Request) -> web.StreamResponse:
        asked = await body_as(request, DriftRequest)
        given = {"window": asked.window, "baseline": asked.baseline}
        drift = self._config.drift.model_copy(update={k: v for k, v in given.items() if v is not None})
        monitor = DriftMonitor(self._store, drift, self._thresholds)
        until = asked.until or datetime.now(UTC)
        report = await monitor.run_pass(until, record=asked.record, notify=asked.notify and asked.record)
        w = report.windows
        return web.json_response(
            {
                "windows": {
                    "baseline_start": w.baseline_start.isoformat(),
                    "baseline_end": w.baseline_end.isoformat(),
                    "window_start": w.window_start.isoformat(),
                    "window_end": w.window_end.isoformat(),
                },
                "findings": [finding.as_json() for finding in report.findings],
                "seconds": report.seconds,
            },
            dumps=_dumps,
        )

    async def _start_backfill(self, request: web.Request) -> web.StreamResponse:
        asked = await body_as(request, BackfillRequest)
        if asked.since >= asked.until:
            raise BadRequest("since must be before until")
        if self._backfill is not None and not self._backfill.done():
            return web.json_response({"error": "a backfill is running in this service already"}, status=409)
        progress: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
        try:
            backfill = Backfill(
                self._config,
                rules=asked.rules,
                rate=asked.rate,
                progress=lambda done, total: progress.put_nowait((done, total)),
                store=self._store,
            )
        except ValueError as exc:  # a --rule that names no rule
            raise BadRequest(str(exc)) from None
        task = asyncio.create_task(backfill.run(asked.since, asked.until, dry_run=asked.dry_run))
        self._backfill = task
        response = web.StreamResponse(headers={"Content-Type": NDJSON})
        try:
            await response.prepare(request)
            await _stream(response, task, progress)
        finally:
            if not task.done():  # the client went away: stop; a later backfill resumes
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        return response


async def _stream(
    response: web.StreamResponse, task: asyncio.Task[Any], progress: asyncio.Queue[tuple[int, int]]
) -> None:
    """Progress lines while ``task`` runs (the last one again every ``HEARTBEAT_SECONDS``), then its
    report or its error."""
    last = (0, 0)
    while not task.done():
        getter = asyncio.ensure_future(progress.get())
        done, _ = await asyncio.wait(
            {getter, task}, timeout=HEARTBEAT_SECONDS, return_when=asyncio.FIRST_COMPLETED
        )
        if getter in done:
            last = getter.result()
            while not progress.empty():
                last = progress.get_nowait()
        else:
            getter.cancel()
        await _line(response, {"progress": {"done": last[0], "total": last[1]}})
    try:
        report = task.result()
    except StoreError as exc:
        log.warning("%s failed: %s", BACKFILL_PATH, exc)
        await _line(response, {"error": STORE_UNAVAILABLE if exc.retriable else API_STORE_FAILED})
    except Exception as exc:
        log.exception("%s failed", BACKFILL_PATH)
        await _line(response, {"error": f"the backfill failed: {type(exc).__name__}: {exc}"})
    else:
        await _line(response, {"report": dataclasses.asdict(report)})
    await response.write_eof()


async def _line(response: web.StreamResponse, value: dict[str, Any]) -> None:
    await response.write((_dumps(value) + "\n").encode())


def _time(parameter: str, value: str, now: datetime) -> datetime:
    try:
        return parse_time(value, now)
    except ValueError as exc:
        raise QueryError(parameter, str(exc)) from None


async def body_as(request: web.Request, model: type[B]) -> B:
    """The JSON body as ``model``; a ``BadRequest`` naming the field that is wrong."""
    try:
        data = await request.json()
    except ValueError:
        raise BadRequest("the body is not JSON") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "body"
        raise BadRequest(f"{where}: {error['msg']}") from None


def store_failed(request: web.Request, exc: StoreError) -> web.Response:
    log.warning("%s failed: %s", request.path, exc)
    if exc.retriable:
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return web.json_response({"error": STORE_UNAVAILABLE}, status=503, headers=headers)
    return web.json_response({"error": API_STORE_FAILED}, status=500)
