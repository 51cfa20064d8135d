"""What a caller is told about failures: a fixed sentence per category, never the internals.

Store errors carry the database's own text, and chDB's names its data directory; answers to
unauthenticated callers (OTLP error bodies, gRPC status details, ``/healthz``, ``/readyz``) must not
map the host's filesystem or quote the database. The receivers answer with the sentences below and
log the detail (the log handlers scrub secrets from it). ``/healthz`` and ``/readyz`` keep every status
and number; their error texts are shown only to a caller with the bearer token when a token is
configured, and without a token they are shown with filesystem paths taken out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tracescore.schemas.redaction_placeholders import HIDDEN, PATH
from tracescore.schemas.secrets import scrub

STORE_UNAVAILABLE = "the store is unavailable; retry later"
STORE_REFUSED = "the store refused them; do not retry (the service log has the detail)"
API_STORE_FAILED = "the store could not answer (the service log has the detail)"
INTERNAL_ERROR = "internal error (the service log has the detail)"

# Keys of the health body whose values are error texts.
ERROR_KEYS = frozenset({"error", "last_error"})

# An absolute path: after a scheme's "//" (chdb:///data, file:///x) or where a word cannot go on
# (start, space, quote, bracket, "=", ","), so URLs' "//host" and ratios like "3/4" stay as they are.
_PATH = re.compile(r"(?:(?<=://)|(?<![^\s'\"(\[=,]))/(?!/)[^\s'\"()\[\],;]+")


def without_paths(text: str) -> str:
    """``text`` with absolute filesystem paths replaced by ``[path]``."""
    return _PATH.sub(PATH, text)


def public_health(body: dict[str, Any], *, authenticated: bool, token_configured: bool) -> dict[str, Any]:
    """The health body as this caller may see it (statuses and numbers always kept).

    With a token configured, a caller who sent it sees everything; one who did not sees no error
    texts and no paths. Without a token, error texts are shown with paths taken out.
    """
    shown = (_everything if authenticated else _no_errors) if token_configured else _no_paths
    return {key: _walk(item, shown, key in ERROR_KEYS) for key, item in body.items()}


def _everything(text: str, is_error: bool) -> str:
    return scrub(text)


def _no_errors(text: str, is_error: bool) -> str:
    return HIDDEN if is_error else without_paths(scrub(text))


def _no_paths(text: str, is_error: bool) -> str:
    return without_paths(scrub(text))


def _walk(value: Any, shown: Callable[[str, bool], str], is_error: bool = False) -> Any:
    if isinstance(value, dict):
        return {key: _walk(item, shown, key in ERROR_KEYS) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, shown, is_error) for item in value]
    if isinstance(value, str):
        return shown(value, is_error)
    return value
