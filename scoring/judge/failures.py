"""Judge failures, classified once: retriable (rate limits, 5xx, timeouts) or permanent (the rest).

The judge client retries only what ``classify`` marks ``retriable``; a permanent error (bad request,
authentication, a missing key, unknown model, context window exceeded, an answer that stays invalid)
fails at once. Each error also has a ``kind`` (``auth``, ``not_found``, ...): what the failure log
groups repeats by, and what ``explain`` turns into a message that says what to fix.
"""

from __future__ import annotations

import asyncio
import re
from typing import Literal

from tracescore.schemas.errors import TracescoreError, is_retriable_status
from tracescore.schemas.secrets import scrub

MAX_TEXT_CHARS = 500  # of the provider's message kept in the error

Kind = Literal[
    "auth",  # 401, or no key at all (the client refused to send the request)
    "permission",  # 403
    "not_found",  # 404: an unknown model or a wrong api_base path
    "bad_request",  # 400, 422: the request itself (context window, parameters)
    "rate_limit",
    "unavailable",  # 5xx, connection refused
    "timeout",
    "invalid_answer",  # the answer did not validate, twice
    "circuit_open",
    "other",
]

# What litellm and the provider SDKs raise, before sending anything, when no key is set:
# openai "Missing credentials. Please pass an `api_key`..." (as a 500), anthropic "Missing Anthropic
# API Key", gemini "Missing Gemini API key", older openai "The api_key client option must be set".
_MISSING_KEY = re.compile(r"missing credentials|missing \w+ api key|api_key client option must be set", re.I)
# litellm opens its messages with the type again, twice: "litellm.AuthenticationError: AuthenticationError:".
_REPEATED_TYPE = re.compile(r"^(?:(?:litellm\.)?\w+Error: )+")
_STATUS_KINDS: dict[int, Kind] = {400: "bad_request", 401: "auth", 403: "permission", 404: "not_found"}


class JudgeError(TracescoreError):
    """A judge call failed. ``retriable`` says whether trying again later could succeed."""

    def __init__(
        self,
        message: str,
        *,
        retriable: bool,
        attempts: int = 0,
        retry_after_s: float | None = None,
        kind: Kind = "other",
        status: int | None = None,
    ) -> None:
        super().__init__(scrub(message), retriable=retriable)  # providers echo keys in their errors
        self.attempts = attempts
        self.retry_after_s = retry_after_s
        self.kind: Kind = kind
        self.status = status  # the provider's HTTP status, when it answered one


def _retry_after(exc: BaseException) -> float | None:
    """The server's Retry-After (seconds) when the error carries one."""
    headers = getattr(exc, "litellm_response_headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: not worth parsing for a judge call
        return None


def is_timeout(exc: BaseException) -> bool:
    """The call got no answer in time (our own deadline, or the HTTP client's)."""
    import openai  # litellm's dependency; litellm.Timeout is an openai.APITimeoutError

    return isinstance(exc, TimeoutError | openai.APITimeoutError)


def classify(exc: BaseException) -> JudgeError:
    """The ``JudgeError`` for an exception raised by a litellm call."""
    if isinstance(exc, JudgeError):
        return exc
    import litellm  # already imported by the judge client; here only for the exception types
    import openai  # litellm's dependency: its client raises these where litellm does not map them

    text = _REPEATED_TYPE.sub("", str(exc).strip().split("\n", 1)[0])  # not litellm's traceback
    text = text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "…"
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if _MISSING_KEY.search(str(exc)):
        # Raised before any request left (litellm maps it to a 500 or a connection error): a key
        # appears only when someone sets one, so trying again is of no use.
        return JudgeError(message, retriable=False, kind="auth")
    retriable_types: tuple[type[BaseException], ...] = (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.APIConnectionError,  # includes litellm.Timeout
        litellm.Timeout,
        asyncio.TimeoutError,
        openai.APIConnectionError,  # includes openai.APITimeoutError
    )
    permanent_types: tuple[type[BaseException], ...] = (
        litellm.BadRequestError,  # includes ContextWindowExceededError
        litellm.AuthenticationError,
        litellm.PermissionDeniedError,
        litellm.NotFoundError,
        litellm.UnprocessableEntityError,
    )
    if isinstance(exc, permanent_types):
        retriable = False
    elif isinstance(exc, retriable_types):
        retriable = True
    else:
        retriable = status is not None and is_retriable_status(status)
    return JudgeError(
        message,
        retriable=retriable,
        retry_after_s=_retry_after(exc),
        kind=_kind(exc, status),
        status=status,
    )


def _kind(exc: BaseException, status: int | None) -> Kind:
    import litellm

    kinds: tuple[tuple[type[BaseException], Kind], ...] = (
        (litellm.AuthenticationError, "auth"),
        (litellm.PermissionDeniedError, "permission"),
        (litellm.NotFoundError, "not_found"),
        (litellm.BadRequestError, "bad_request"),
        (litellm.UnprocessableEntityError, "bad_request"),
        (litellm.RateLimitError, "rate_limit"),
    )
    for kind_type, kind in kinds:
        if isinstance(exc, kind_type):
            return kind
    if is_timeout(exc):
        return "timeout"
    if status is not None and status in _STATUS_KINDS:
        return _STATUS_KINDS[status]
    if status == 429:
        return "rate_limit"
    if (status is not None and status >= 500) or isinstance(exc, litellm.APIConnectionError):
        return "unavailable"
    return "other"


def explain(error: JudgeError, model: str, *, sent_key: bool) -> str:
    """What a permanent failure means and what to set, e.g. ``401 authentication failed — set
    TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY``; ``sent_key``: the call carried a configured key.
    Empty for kinds that have nothing to add to the provider's own message."""
    from tracescore.scoring.judge.api_keys import set_key_hint

    if error.kind == "auth":
        if error.status is None:  # refused before sending: no key anywhere
            return f"no API key — {set_key_hint(model)}"
        what = "" if sent_key else " (no API key was configured)"
        return f"{error.status} authentication failed{what} — {set_key_hint(model)}"
    if error.kind == "permission":
        return f"{error.status or 403} permission denied — check that the judge's key may use {model}"
    if error.kind == "not_found":
        return f"{error.status or 404} not found — check the model name {model!r} and the judge's api_base"
    if error.kind == "bad_request":
        return f"{error.status or 400} bad request"
    return ""
