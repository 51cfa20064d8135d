"""Where a command that needs the store (``scores``, ``runs``, ``drift``, ``backfill``) does its work:
in the store itself, or through the running service that holds it.

A ClickHouse server store is used directly. The embedded store is opened directly when no process
holds it; while ``tracescore serve`` holds it (chDB allows one process per data directory) the
command asks that service's HTTP API instead, at ``--url`` (or ``$TRACESCORE_URL``, default
``http://127.0.0.1:<receiver.http_port>``), with the bearer token of ``TRACESCORE_AUTH_TOKEN`` when one
is configured; both give the same output. ``--url`` without ``--store`` asks that service only.

These commands never create a store: a path that holds none is a usage error (exit 2) naming the
absolute path and how to create one. Only for the default store, which the user did not name, is a
service at the URL asked first (it may hold its store elsewhere, e.g. in a container).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import aiohttp

from tracescore.ingest.cli.store_flags import add_database_argument, store_overrides
from tracescore.ingest.configuration.config_loader import ConfigCheck, load_config
from tracescore.ingest.receivers.auth import configured_token
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.dsn import resolve_dsn
from tracescore.ingest.store.engine_open import held_by_another
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.errors import StoreError, StoreInUse
from tracescore.schemas.score_queries import TraceStatus
from tracescore.schemas.store_config import LEGACY_STORE

URL_VARIABLE = "TRACESCORE_URL"
HTTP_TIMEOUT_SECONDS = 30.0
EXIT_FAILED = 1  # the store or the service could not answer
EXIT_USAGE = 2

T = TypeVar("T")


class Failed(Exception):
    """The command cannot do its work: one line for stderr, and the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.status = status


class Unreachable(Failed):
    """No service answers at the URL."""


def add_store_arguments(parser: argparse.ArgumentParser, config_help: str) -> None:
    parser.add_argument("--config", help=config_help)
    parser.add_argument(
        "--store",
        help="chDB data directory (default: the one 'tracescore serve' uses, see 'tracescore serve --help') "
        "or http(s)://clickhouse DSN",
    )
    add_database_argument(parser)
    parser.add_argument(
        "--url",
        help=f"the running service's OTLP/HTTP address, asked while it holds the store (or ${URL_VARIABLE})",
    )


def store_config(
    args: argparse.Namespace,
    overrides: dict[str, Any] | None = None,
    flags: dict[str, str] | None = None,
    checks: ConfigCheck | None = None,
) -> ServiceConfig:
    """The command's config: ``--config``, the environment, ``--store``/``--database`` and the command's
    own flags; ``checks`` adds errors of its own to the config's, reported in the same pass."""
    store, store_flags = store_overrides(args)
    return load_config(
        args.config,
        overrides={**store, **(overrides or {})},
        flags={**store_flags, **(flags or {})},
        checks=checks,
    )


def is_store(path: str) -> bool:
    """Whether ``path`` is a chDB data directory (opening anything else would create one there)."""
    return os.path.isdir(os.path.join(path, "metadata"))


def service_api(config: ServiceConfig, args: argparse.Namespace) -> ServiceApi:
    url = args.url or os.environ.get(URL_VARIABLE) or f"http://127.0.0.1:{config.receiver.http_port}"
    return ServiceApi(url.rstrip("/"), configured_token(config.receiver))


async def through_front_door(
    config: ServiceConfig,
    args: argparse.Namespace,
    direct: Callable[[], Awaitable[T]],
    remote: Callable[[ServiceApi], Awaitable[T]],
) -> T:
    """``direct()`` on the store, or ``remote(api)`` through the service that holds it (see the
    module docstring). Raises ``Failed``."""
    api = service_api(config, args)
    if (args.url or os.environ.get(URL_VARIABLE)) and not args.store:
        return await remote(api)
    dsn = resolve_dsn(config.store)
    if not dsn.startswith("chdb://"):
        return await direct()
    path = dsn[len("chdb://") :]
    if not is_store(path):
        if "store" in config.model_fields_set:
            how = f"'tracescore serve --store {path}' creates one there"
            raise Failed(f"{no_store(path, _source(args))}: {how}", EXIT_USAGE)
        why = no_store(path, "the default store")
        how = "'tracescore serve' creates it; or give --store, or the --url of a running service"
        return await _asking(api, remote, why, how + _legacy_note(path), EXIT_USAGE)
    held_hint = "give the --url of the service that holds it"
    if held_by_another(path):
        return await _asking(api, remote, _held_by_other(path), held_hint)
    try:
        return await direct()
    except StoreInUse:  # taken between the look and the open
        return await _asking(api, remote, _held_by_other(path), held_hint)


async def on_store(config: ServiceConfig, work: Callable[[Store], Awaitable[T]]) -> T:
    """``work`` on the store of ``config``, opened for it and closed after. A store that cannot be
    opened or answer is ``Failed``; ``StoreInUse`` passes, for the caller to ask the service."""
    store = Store.from_config(config)
    try:
        await store.start()
        return await work(store)
    except StoreInUse:
        raise
    except StoreError as exc:
        raise Failed(str(exc)) from None
    finally:
        await store.shutdown()


def print_trace_status(status: TraceStatus, as_json: bool) -> None:
    """Why a trace has nothing to show, on stdout (the command then exits 1)."""
    if as_json:
        print(json.dumps(status.model_dump(exclude_none=True)))
    else:
        print(f"trace {status.trace_id}: {status.message}")


async def _asking(
    api: ServiceApi,
    remote: Callable[[ServiceApi], Awaitable[T]],
    why: str,
    hint: str,
    status: int = EXIT_FAILED,
) -> T:
    """``remote(api)``; when no service answers, one line saying why the store was not used either."""
    try:
        return await remote(api)
    except Unreachable as exc:
        raise Failed(f"{why}, and {exc}; {hint}", status) from None


def no_store(path: str, source: str) -> str:
    return f"there is no tracescore store at {path} ({source})"


def _legacy_note(path: str) -> str:
    """A store in ./tracescore-data, the default of earlier versions, is pointed out."""
    legacy = os.path.abspath(LEGACY_STORE)
    if legacy == path or not is_store(legacy):
        return ""
    earlier = "the default of earlier versions"
    return f"; {legacy} is a store ({earlier}): give --store {legacy}, or move it to {path}"


def _source(args: argparse.Namespace) -> str:
    if args.store:
        return "from --store"
    if os.environ.get("TRACESCORE_STORE"):
        return "from TRACESCORE_STORE"
    return "from the config file's store"


def _held_by_other(path: str) -> str:
    return f"the store {path} is held by another process (a running 'tracescore serve'?)"


@dataclass(frozen=True)
class ServiceApi:
    """The running service's HTTP API, with the bearer token when one is configured."""

    url: str
    token: str | None

    async def get(self, path: str, params: dict[str, str]) -> Any:
        """The JSON of a 200; a ``TraceStatus`` for a 404 that says why a trace has nothing."""
        return await self._request("GET", path, params=params)

    async def page(self, path: str, params: dict[str, str], timeout_s: float) -> str:
        """The text of a 200 (an HTML page); a refusal, as for the JSON routes."""
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(self.url + path, params=params, headers=self._headers()) as response,
            ):
                if response.status == 200:
                    return await response.text()
                self._refused(path, response.status, await _json(response))
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc, timeout_s) from None

    async def post(self, path: str, body: dict[str, Any], timeout_s: float) -> Any:
        return await self._request("POST", path, json_body=body, timeout_s=timeout_s)

    async def post_lines(
        self, path: str, body: dict[str, Any], on_line: Callable[[dict[str, Any]], None], idle_s: float
    ) -> None:
        """POST, then hand each JSON line of the streamed answer to ``on_line`` (no line for ``idle_s``
        ends it as a failure)."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=HTTP_TIMEOUT_SECONDS, sock_read=idle_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(self.url + path, json=body, headers=self._headers()) as response,
            ):
                if response.status != 200:
                    self._refused(path, response.status, await _json(response))
                async for raw in response.content:
                    if raw.strip():
                        on_line(json.loads(raw))
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc, idle_s) from None

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json_body: dict[str, Any] | None = None,
        timeout_s: float = HTTP_TIMEOUT_SECONDS,
    ) -> Any:
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.request(
                    method, self.url + path, params=params, json=json_body, headers=self._headers()
                ) as response,
            ):
                status, body = response.status, await _json(response)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc, timeout_s) from None
        if status == 200 and body is not None:
            return body
        if status == 404 and isinstance(body, dict) and "status" in body and "trace_id" in body:
            return TraceStatus.model_validate(body)
        self._refused(path, status, body)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _refused(self, path: str, status: int, body: Any) -> NoReturn:
        error = body.get("error") if isinstance(body, dict) else None
        if status == 401:
            hint = "refused the token of TRACESCORE_AUTH_TOKEN" if self.token else "wants a bearer token"
            raise Failed(f"the service at {self.url} {hint}: set TRACESCORE_AUTH_TOKEN", EXIT_USAGE)
        if status == 400 and error:
            raise Failed(f"the service at {self.url} refused the request: {error}", EXIT_USAGE)
        if error:
            raise Failed(f"the service at {self.url} answered {status}: {error}")
        raise Failed(f"{self.url}{path} did not answer as tracescore does (HTTP {status})")

    def _unreachable(self, exc: Exception, timeout_s: float) -> Unreachable:
        return Unreachable(f"no tracescore service answers at {self.url} ({_reason(exc, timeout_s)})")


async def _json(response: aiohttp.ClientResponse) -> Any:
    try:
        return await response.json(content_type=None)
    except ValueError:
        return None


def _reason(exc: Exception, timeout_s: float) -> str:
    """Why a request got no answer, in a few words ("Connection refused", "timed out")."""
    if isinstance(exc, aiohttp.ClientConnectorError) and exc.os_error.errno:
        return os.strerror(exc.os_error.errno)
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout_s:g} s"
    return str(exc) or type(exc).__name__
