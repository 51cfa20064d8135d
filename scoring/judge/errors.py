"""Judge failures, classified once: retriable (rate limits, 5xx, timeouts) or permanent (the rest).

The judge client retries only what ``classify`` marks ``retriable``; a permanent error (bad request,
authentication, unknown model, context window exceeded, an answer that stays invalid) fails at once.
"""

from __future__ import annotations

import asyncio

from schemas.errors import TracescoreError
from schemas.secrets import scrub

# HTTP statuses worth another try: request timeout, rate limit, and server-side trouble.
RETRIABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class JudgeError(TracescoreError):
    """A judge call failed. ``retriable`` says whether trying again later could succeed."""

    def __init__(
        self, message: str, *, retriable: bool, attempts: int = 0, retry_after_s: float | None = None
    ) -> None:
        super().__init__(scrub(message), retriable=retriable)  # providers echo keys in their errors
        self.attempts = attempts
        self.retry_after_s = retry_after_s


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

    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
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
        retriable = getattr(exc, "status_code", None) in RETRIABLE_STATUSES
    return JudgeError(message, retriable=retriable, retry_after_s=_retry_after(exc))
