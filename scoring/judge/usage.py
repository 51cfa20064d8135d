"""Judge usage metering: every judge call made inside ``with metered() as usage:`` (also in tasks and
threads started from it) adds its model, tokens and cost to ``usage``. ``Scorer.run`` meters each
run, so a score row counts every call its scorer made, including calls from its own code.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any


@dataclass
class JudgeUsage:
    """Usage summed over the judge calls made while it was metering (see ``metered``)."""

    models: list[str] = field(default_factory=list)  # distinct, in first-use order
    calls: int = 0  # answered HTTP calls
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    parent: JudgeUsage | None = field(default=None, repr=False)

    def add(self, model: str, input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        meter: JudgeUsage | None = self
        while meter is not None:  # an enclosing meter counts the calls of the ones inside it too
            if model not in meter.models:
                meter.models.append(model)
            meter.calls += 1
            meter.input_tokens += input_tokens
            meter.output_tokens += output_tokens
            meter.cost_usd += cost_usd
            meter = meter.parent


_METER: ContextVar[JudgeUsage | None] = ContextVar("tracescore_judge_usage", default=None)


def current_meter() -> JudgeUsage | None:
    return _METER.get()


class metered:  # noqa: N801 -- used as a function: ``with metered() as usage:``
    """Count the model, tokens and cost of every judge call made in this context.

    A class rather than a ``contextlib.contextmanager`` generator: ``Scorer.run`` meters every run,
    and the generator's machinery cost more than a heuristic scorer's own work (1.8 µs vs 0.5 µs).
    """

    __slots__ = ("_token", "usage")
    usage: JudgeUsage
    _token: Token[JudgeUsage | None]

    def __enter__(self) -> JudgeUsage:
        self.usage = JudgeUsage(parent=_METER.get())
        self._token = _METER.set(self.usage)
        return self.usage

    def __exit__(self, *exc_info: object) -> None:
        _METER.reset(self._token)


@dataclass
class Tally:
    """Usage summed over the calls of one judge request (local to the request, never shared)."""

    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, model: str, response: Any, litellm: ModuleType) -> float:
        """Count one answered call; returns its cost in US dollars."""
        usage = getattr(response, "usage", None)
        input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost_usd = _cost(litellm, response)
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost_usd += cost_usd
        meter = _METER.get()
        if meter is not None:
            meter.add(model, input_tokens, output_tokens, cost_usd)
        return cost_usd


def _cost(litellm: ModuleType, response: Any) -> float:
    """The response's price in US dollars; 0 for a model without a published price.

    litellm prices every response it returns and keeps the figure in its hidden params
    (``response_cost``: None without a price), so it is read from there rather than computed a
    second time with ``completion_cost`` (6% of a scorer run's CPU time under ``bench/judge.py``;
    the two figures agree on every chat, embedding and moderation call of the judge tests). A
    response without the figure is priced with ``completion_cost``."""
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
        return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # a model without a published price costs nothing we can know
        return 0.0
