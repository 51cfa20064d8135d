"""What the service wraps around every judge call of a scorer run: budgets, circuit breakers,
redaction, and a span that marks the call as tracescore's own (the loop guard).

The executor sets a ``JudgeGuard`` for each scorer run (``guarded``); the judge client asks it before
and after each request it sends. Outside the service (the Python API, ``tracescore score``) there is
none, and calls go out unguarded.

Loop guard: each judge request runs inside an OpenTelemetry span (``chat <model>``) carrying
``tracescore.judge = true``. It is recorded only when the process has an OpenTelemetry SDK set up
(``opentelemetry-instrument``, say); then an instrumented HTTP or LLM client's spans of the request
are its children. If those spans come back to tracescore, the router recognises them and scores
nothing of them (``scoring.runtime.rule_routing.is_own_judge_call``) -- a judge judging its own calls would
never end.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, MutableMapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

from tracescore.scoring.judge.breaker import Breakers
from tracescore.scoring.judge.redact import Redactor
from tracescore.scoring.runtime.judge_budgets import Budget, BudgetReservation

logger = logging.getLogger(__name__)

JUDGE_SPAN_ATTRIBUTE = "tracescore.judge"
ANSWER_RATIO_WEIGHT = 0.2  # of the newest call in a model's answer ratio
_tracer = trace.get_tracer("tracescore.judge")


@dataclass(frozen=True)
class JudgeGuard:
    budgets: tuple[Budget, ...] = ()
    breakers: Breakers | None = None
    redact: Redactor | None = None
    # Answer tokens assumed when a call's cost is estimated before it is made.
    estimated_output_tokens: int = 200
    # Answer tokens per prompt token, by model, from what the judge answered before (learnt from
    # this process's calls, or read from the scores table); a model without any gets
    # ``estimated_output_tokens``.
    answer_ratios: MutableMapping[str, float] = field(default_factory=dict)
    # Meter each call without sending it (``scoring.judge.dry``): backfill --dry-run.
    dry_run: bool = False

    def answer_tokens(self, model: str, prompt_tokens: int) -> int:
        ratio = self.answer_ratios.get(model)
        return round(ratio * prompt_tokens) if ratio is not None else self.estimated_output_tokens

    def learn(self, model: str, prompt_tokens: int, answer_tokens: int) -> None:
        """Fold an answered call into the model's answer ratio (a moving average)."""
        if prompt_tokens <= 0:
            return
        ratio = answer_tokens / prompt_tokens
        known = self.answer_ratios.get(model)
        self.answer_ratios[model] = ratio if known is None else known + ANSWER_RATIO_WEIGHT * (ratio - known)

    def estimate(self, litellm: Any, model: str, messages: Sequence[dict[str, Any]]) -> float:
        """What a completion with these messages would cost: its prompt's tokens, the answer's as
        this model has answered so far."""
        try:
            prompt_tokens = int(litellm.token_counter(model=model, messages=list(messages)))
        except Exception:
            return 0.0
        answer = self.answer_tokens(model, prompt_tokens)
        return estimate_cost(litellm, model, prompt_tokens=prompt_tokens, output_tokens=answer)


_GUARD: ContextVar[JudgeGuard | None] = ContextVar("tracescore_judge_guard", default=None)


@contextlib.contextmanager
def guarded(guard: JudgeGuard) -> Iterator[JudgeGuard]:
    """Guard the judge calls made in this context (and in tasks and threads started from it)."""
    token = _GUARD.set(guard)
    try:
        yield guard
    finally:
        _GUARD.reset(token)


def current_guard() -> JudgeGuard | None:
    return _GUARD.get()


def redact_text(text: str) -> str:
    guard = _GUARD.get()
    return guard.redact(text) if guard is not None and guard.redact is not None else text


def redact_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    guard = _GUARD.get()
    if guard is None or guard.redact is None:
        return list(messages)
    redact = guard.redact
    return [
        {**message, "content": redact(message["content"])}
        if isinstance(message.get("content"), str)
        else message
        for message in messages
    ]


def estimate_cost(
    litellm: Any,
    model: str,
    *,
    texts: Sequence[str] = (),
    prompt_tokens: int | None = None,
    output_tokens: int = 0,
) -> float:
    """The US dollars a call would cost: its prompt's tokens (``prompt_tokens``, or those of
    ``texts`` counted with litellm's tokenizer for the model) and ``output_tokens`` answer tokens, at
    litellm's prices. 0 for a model without a published price."""
    try:
        if prompt_tokens is None:
            prompt_tokens = sum(litellm.token_counter(model=model, text=text) for text in texts)
        prompt_cost, answer_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=output_tokens
        )
        return float(prompt_cost) + float(answer_cost)
    except Exception:
        return 0.0


class GuardedCall:
    """One request to a judge's provider under the current guard: reserve, let through, settle."""

    def __init__(self, guard: JudgeGuard | None, model: str) -> None:
        self._guard = guard
        self._model = model
        self._reservations: list[BudgetReservation] = []

    def begin(self, estimate: float) -> None:
        """Reserve the call in every budget and ask the model's breaker; raises ``BudgetExceeded``
        or (circuit open) a retriable ``JudgeError``, and then nothing is counted."""
        guard = self._guard
        if guard is None:
            return
        try:
            for budget in guard.budgets:
                self._reservations.append(budget.reserve(estimate))
            if guard.breakers is not None:
                guard.breakers(self._model).before_call()
        except BaseException:
            for reservation in self._reservations:
                reservation.budget.cancel(reservation)
            self._reservations.clear()
            raise

    def answered(self, cost_usd: float, prompt_tokens: int, answer_tokens: int) -> None:
        for reservation in self._reservations:
            reservation.budget.settle(reservation, cost_usd)
        if self._guard is not None:
            self._guard.learn(self._model, prompt_tokens, answer_tokens)
            if self._guard.breakers is not None:
                self._guard.breakers(self._model).succeeded()

    def failed(self, retriable: bool) -> None:
        for reservation in self._reservations:  # a failed request is counted, but costs nothing
            reservation.budget.settle(reservation, 0.0)
        if self._guard is not None and self._guard.breakers is not None:
            self._guard.breakers(self._model).failed(retriable)


def judge_span(model: str, operation: str) -> contextlib.AbstractContextManager[trace.Span]:
    """The span of one judge request, marked as tracescore's own (see the module docstring).

    Without an OpenTelemetry SDK (no tracer provider set) nothing would record it and nothing
    could read its context, so no span is started: ``with`` gives ``INVALID_SPAN``, which is what
    the API's no-op tracer would give, without its context switch and objects on every call."""
    if isinstance(trace.get_tracer_provider(), _NO_SDK):
        return _NO_SPAN
    attributes: dict[str, str | bool] = {
        JUDGE_SPAN_ATTRIBUTE: True,
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": model,
    }
    return _tracer.start_as_current_span(
        f"{operation} {model}", kind=trace.SpanKind.CLIENT, attributes=attributes
    )


_NO_SDK = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
_NO_SPAN = contextlib.nullcontext(trace.INVALID_SPAN)
