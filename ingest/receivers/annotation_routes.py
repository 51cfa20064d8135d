"""The API of human labels and judge agreement, behind the receiver's bearer token like every
``/api/*`` route (docs/http-api.md, docs/agreement.md).

- ``POST /api/annotations``: one label (a JSON object) or a list of them. A label without
  ``span_id`` judges the trace's root span (``ingest.store.annotation_rows.root_spans``). All or
  nothing: when any item is wrong, the answer is a 400 listing every wrong item by its index and field,
  and nothing is stored; otherwise every item is stored before the 200 (acknowledged = stored), whose
  body lists the rows as stored, with their ids.
- ``GET /api/annotations?trace_id=…[&name=…]``: a trace's labels as stored (each person's latest).
- ``POST /api/agreement`` (JSON: ``window``, ``until``, ``record``, ``notify``): one agreement pass
  with the service's settings, for ``tracescore agreement``.
- ``GET /api/annotate?pick=…&scorer=…&other=…&limit=…&since=…``: units to label, for
  ``tracescore annotate``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracescore.ingest.alerting.agreement_monitor import AgreementMonitor
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.commands import BadRequest, body_as, store_failed
from tracescore.ingest.store.annotation_rows import insert_annotations, root_spans, stored_annotations
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.label_candidates import Pick, pick_units
from tracescore.schemas.annotations import Annotation, AnnotationRequest
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.drift_config import Duration
from tracescore.schemas.durations import parse_time
from tracescore.schemas.errors import StoreError
from tracescore.schemas.score_queries import QueryError, parse_query

ANNOTATIONS_PATH = "/api/annotations"
AGREEMENT_PATH = "/api/agreement"
ANNOTATE_PATH = "/api/annotate"
MAX_ANNOTATIONS_PER_REQUEST = 1_000
MAX_PICKS = 200


class AgreementRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    window: Duration | None = None  # default: the service's agreement.window
    until: datetime | None = None  # default: now
    record: bool = True
    notify: bool = False


class PickRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pick: Pick = "random"
    scorer: str = Field(min_length=1)
    other: str | None = None
    limit: int = Field(default=5, ge=1, le=MAX_PICKS)
    since: str = "7d"


class AnnotationRoutes:
    """The routes above, over the service's store and configuration."""

    def __init__(self, store: Store, config: ServiceConfig, metrics: Metrics) -> None:
        self._store = store
        self._config = config
        self._metrics = metrics

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post(ANNOTATIONS_PATH, self._answering(self._annotate))
        router.add_get(ANNOTATIONS_PATH, self._answering(self._labels))
        router.add_post(AGREEMENT_PATH, self._answering(self._agreement))
        router.add_get(ANNOTATE_PATH, self._answering(self._pick))

    def _answering(
        self, handler: Callable[[web.Request], Awaitable[web.Response]]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            try:
                return await handler(request)
            except BadRequest as exc:
                return web.json_response({"error": str(exc)}, status=400)
            except StoreError as exc:
                return store_failed(request, exc)

        return handle

    async def _annotate(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            raise BadRequest("the body is not JSON: give one annotation object or a list of them") from None
        items = body if isinstance(body, list) else [body]
        if not items:
            raise BadRequest("the list is empty: give at least one annotation")
        if len(items) > MAX_ANNOTATIONS_PER_REQUEST:
            raise BadRequest(f"{len(items)} annotations: send at most {MAX_ANNOTATIONS_PER_REQUEST} at once")
        requests, errors = _validated(items, single=not isinstance(body, list))
        if errors:
            return _refused(errors)
        annotations, errors = await self._placed(requests, single=not isinstance(body, list))
        if errors:
            return _refused(errors)
        await insert_annotations(self._store, annotations)
        self._metrics.annotations_stored.labels("api").inc(len(annotations))
        return web.json_response(
            {"stored": len(annotations), "annotations": [a.as_json() for a in annotations]}
        )

    async def _placed(
        self, requests: list[AnnotationRequest], *, single: bool
    ) -> tuple[list[Annotation], list[dict[str, Any]]]:
        """The rows, each label without a span on its trace's root span; an error for each whose trace
        has no root span stored."""
        unplaced = [r.trace_id for r in requests if r.span_id is None]
        roots = await root_spans(self._store, unplaced) if unplaced else {}
        received = datetime.now(UTC)
        annotations: list[Annotation] = []
        errors: list[dict[str, Any]] = []
        for index, item in enumerate(requests):
            span_id = item.span_id or roots.get(item.trace_id)
            if span_id is None:
                why = f"trace {item.trace_id} has no root span stored (yet): give span_id"
                errors.append(_error(index, "span_id", why, single))
                continue
            annotations.append(Annotation.of_request(item, span_id, received))
        return annotations, errors

    async def _labels(self, request: web.Request) -> web.Response:
        unknown = sorted(set(request.query) - {"trace_id", "name"})
        if unknown:
            raise BadRequest(f"{unknown[0]}: unknown parameter; give trace_id (and name)")
        try:
            trace_id = parse_query({"trace_id": request.query.get("trace_id", "")}, decisions=False).trace_id
        except QueryError as exc:
            raise BadRequest(str(exc)) from None
        if trace_id is None:
            raise BadRequest("trace_id: give the trace id (32 hex characters)")
        found = await stored_annotations(self._store, trace_id, request.query.get("name"))
        return web.json_response([annotation.as_json() for annotation in found])

    async def _agreement(self, request: web.Request) -> web.Response:
        asked = await body_as(request, AgreementRequest)
        config = self._config.agreement
        if asked.window is not None:
            config = config.model_copy(update={"window": asked.window})
        monitor = AgreementMonitor(self._store, config, self._config.drift, metrics=self._metrics.agreement)
        notify = asked.notify and asked.record
        report = await monitor.run_pass(asked.until, record=asked.record, notify=notify)
        return web.json_response(report.as_json())

    async def _pick(self, request: web.Request) -> web.Response:
        try:
            asked = PickRequest.model_validate(dict(request.query))
            since = parse_time(asked.since, datetime.now(UTC))
        except ValidationError as exc:
            error = exc.errors()[0]
            raise BadRequest(f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}") from None
        except ValueError as exc:
            raise BadRequest(f"since: {exc}") from None
        try:
            found = await pick_units(self._store, asked.pick, asked.scorer, asked.limit, since, asked.other)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return web.json_response([candidate.model_dump() for candidate in found])


def _validated(items: list[Any], *, single: bool) -> tuple[list[AnnotationRequest], list[dict[str, Any]]]:
    """Each item as an ``AnnotationRequest``; an error for each field of each item that is wrong."""
    valid: list[AnnotationRequest] = []
    errors: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            valid.append(AnnotationRequest.model_validate(item))
        except ValidationError as exc:
            for error in exc.errors():
                # An object whose every field is fine can still say nothing: it wants a value (or label).
                field = ".".join(str(part) for part in error["loc"]) or (
                    "value" if isinstance(item, dict) else "body"
                )
                errors.append(_error(index, field, error["msg"], single))
    return valid, errors


def _error(index: int, field: str, message: str, single: bool) -> dict[str, Any]:
    where = field if single else f"[{index}].{field}"
    return {"index": index, "field": field, "error": f"{where}: {message}"}


def _refused(errors: list[dict[str, Any]]) -> web.Response:
    """400: every wrong item named, nothing stored."""
    summary = errors[0]["error"] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    return web.json_response({"error": summary, "errors": errors, "stored": 0}, status=400)
