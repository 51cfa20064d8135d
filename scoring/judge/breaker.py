"""A circuit breaker per judge model: stop calling a provider that keeps failing, probe it later.

Closed: calls go through; ``failures`` retriable failures in a row (429, 5xx, timeouts) open it.
Open: calls are refused at once for ``cooldown_seconds`` with a retriable ``JudgeError`` (the run
waits, pending, as in a judge outage, instead of spending its retries on a provider that is down).
Half-open: after the cooldown one call at a time is let through as a probe; its success closes the
circuit, its failure opens it again for another cooldown. A permanent error (bad request, 401/403, a
missing key) shows that the provider answers, or that no request left: it opens nothing, and the run
fails at once without waiting for the circuit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tracescore.schemas.rules import CircuitBreakerConfig
from tracescore.scoring.judge.failures import JudgeError

logger = logging.getLogger(__name__)

State = Literal["closed", "open", "half_open"]
STATE_VALUES: dict[State, int] = {"closed": 0, "half_open": 1, "open": 2}


@dataclass
class CircuitBreaker:
    model: str
    config: CircuitBreakerConfig
    clock: Callable[[], float] = time.monotonic
    on_change: Callable[[str, State], None] | None = None
    state: State = "closed"
    failures: int = 0
    opened_at: float = 0.0
    probing: bool = False

    def before_call(self) -> None:
        """Let a call through, or raise a retriable ``JudgeError`` while the circuit is open."""
        if not self.config.enabled or self.state == "closed":
            return
        now = self.clock()
        if self.state == "open":
            wait = self.opened_at + self.config.cooldown_seconds - now
            if wait > 0:
                raise self._refused(wait)
            self._set("half_open")
        if self.probing:  # one probe at a time
            raise self._refused(self.config.cooldown_seconds)
        self.probing = True

    def succeeded(self) -> None:
        self.probing = False
        self.failures = 0
        if self.state != "closed":
            self._set("closed")

    def failed(self, retriable: bool) -> None:
        if not retriable:  # the provider answered: it is up
            self.succeeded()
            return
        self.probing = False
        self.failures += 1
        if self.state == "half_open" or (self.state == "closed" and self.failures >= self.config.failures):
            self.opened_at = self.clock()
            self._set("open")

    def _refused(self, wait: float) -> JudgeError:
        return JudgeError(
            f"judge {self.model!r}: circuit open after {self.failures} failure(s) in a row; "
            f"next probe in {max(wait, 0.0):.1f} s",
            retriable=True,
            retry_after_s=max(wait, 0.0),
            kind="circuit_open",
        )

    def _set(self, state: State) -> None:
        if state == self.state:
            return
        self.state = state
        log = logger.warning if state == "open" else logger.info
        log("judge %r: circuit %s", self.model, state.replace("_", "-"))
        if self.on_change is not None:
            self.on_change(self.model, state)


@dataclass
class Breakers:
    """The breakers of one executor, one per judge model, made on first use."""

    default: CircuitBreakerConfig
    per_model: Mapping[str, CircuitBreakerConfig] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    on_change: Callable[[str, State], None] | None = None
    _breakers: dict[str, CircuitBreaker] = field(default_factory=dict)

    def __call__(self, model: str) -> CircuitBreaker:
        breaker = self._breakers.get(model)
        if breaker is None:
            config = self.per_model.get(model, self.default)
            breaker = CircuitBreaker(model, config, self.clock, self.on_change)
            self._breakers[model] = breaker
        return breaker
