"""One retry policy for every wait-and-try-again: how long to wait before the next try, and whether to
try at all.

Modelled on the OpenTelemetry Collector's one backoff config (``configretry.BackOffConfig``, read by
every exporter's retry sender): a first wait multiplied after each failure up to a cap, partly drawn
at random. Two differences, both so that ``max_s`` is a bound a log line can promise: jitter only
shortens a wait (the collector's ``randomization_factor`` spreads it both ways, past
``max_interval``), and a server's hint (Retry-After, a circuit's cooldown) is waited at least, but
not beyond the cap. When to give up stays with each site, as it differs: a count of tries (the
judge, webhooks), an age (runs pending for their judge), never (the Kafka consumer, score writes).

Whether an error is worth another try is not decided here: the error says so itself
(``schemas.errors.is_retriable``).

::

    policy = RetryPolicy(initial_s=0.5, max_s=30.0, jitter=0.5)
    policy.delay(0)  # between 0.25 and 0.5 s
    policy.delay(9)  # between 15 and 30 s: 0.5 * 2 ** 9 is past the cap
"""

from __future__ import annotations

import math
import random

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tracescore.schemas.errors import is_retriable

DEFAULT_MULTIPLIER = 2.0


class RetryPolicy(BaseModel):
    """How one site waits between tries.

    ``initial_s`` after the first failure, times ``multiplier`` after each further one, never more
    than ``max_s``. ``jitter`` is the fraction of each wait drawn at random: 0 waits exactly, 0.5
    between half and all of it, 1 anywhere up to it ("full jitter").
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    initial_s: float = Field(ge=0, allow_inf_nan=False)
    max_s: float = Field(ge=0, allow_inf_nan=False)
    multiplier: float = Field(default=DEFAULT_MULTIPLIER, ge=1, allow_inf_nan=False)
    jitter: float = Field(default=0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _initial_within_the_cap(self) -> RetryPolicy:
        if self.initial_s > self.max_s:
            raise ValueError(f"initial_s ({self.initial_s:g}) must not be more than max_s ({self.max_s:g})")
        return self

    def backoff(self, attempt: int) -> float:
        """The wait after ``attempt + 1`` failures in a row, before jitter: ``initial_s`` times
        ``multiplier ** attempt``, at most ``max_s``."""
        if attempt < 0:
            raise ValueError(f"attempt counts failures from 0, got {attempt}")
        if self.initial_s == 0 or self.multiplier == 1:
            return self.initial_s
        # Past this many doublings the cap holds; the power is never taken further (a float overflows
        # after about a thousand doublings, and a consumer retrying for days counts that far).
        to_cap = math.ceil(math.log(self.max_s / self.initial_s, self.multiplier)) + 1
        return min(self.max_s, self.initial_s * self.multiplier ** min(attempt, to_cap))

    def delay(self, attempt: int, *, at_least: float | None = None) -> float:
        """The wait after ``attempt + 1`` failures in a row: the backoff less a random part of up to
        ``jitter`` of it; at least ``at_least`` (a server's Retry-After, a circuit's cooldown) when
        given, but never more than ``max_s``."""
        full = self.backoff(attempt)
        wait = full - random.uniform(0.0, full * self.jitter)
        if at_least is not None:
            wait = max(wait, min(at_least, self.max_s))
        return wait

    @staticmethod
    def retries(error: BaseException) -> bool:
        """Whether ``error`` is worth another try: the error's own answer (``schemas.errors.is_retriable``),
        never decided again here."""
        return is_retriable(error)
