"""The judge guards of one executor, built from its rules: budgets, circuit breakers, redaction.

``Guards.for_rule`` gives the ``JudgeGuard`` a scorer run of a rule runs under (see
``scoring.judge.call_guard``); ``refusal`` says whether the rule's budget is already spent; ``sync`` shares
the budgets' spend with the other replicas through the store (``scoring.budget``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from functools import partial

from tracescore.schemas.config import ScoringConfig
from tracescore.schemas.consumers import SpendStore
from tracescore.schemas.rules import CircuitBreakerConfig
from tracescore.scoring.judge.breaker import STATE_VALUES, Breakers, State
from tracescore.scoring.judge.call_guard import JudgeGuard
from tracescore.scoring.judge.redact import Redactor
from tracescore.scoring.runtime.judge_budgets import GLOBAL, Budget, BudgetBook, Unit, Window
from tracescore.scoring.runtime.rule_routing import Rule, RuleGroup
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

logger = logging.getLogger(__name__)

SPEND_SYNC_SECONDS = 5.0  # how often budgets write this replica's spend and read the others'


class Guards:
    def __init__(
        self,
        config: ScoringConfig,
        groups: Sequence[RuleGroup],
        metrics: ScoringMetrics,
        *,
        spend: SpendStore | None = None,
        replica_id: str = "",
    ) -> None:
        limits = {
            rule.scorer_id: rule.budget for group in groups for rule in group if rule.budget is not None
        }
        if config.budget is not None:
            limits[GLOBAL] = config.budget
        self.budgets = BudgetBook(limits)
        self.breakers = Breakers(config.circuit_breaker, _breaker_settings(groups))
        redact = config.redact
        self.redactor = (
            Redactor(redact.emails, redact.api_keys, tuple(redact.patterns)) if redact.active else None
        )
        self._estimated_output_tokens = config.estimated_output_tokens
        self._answer_ratios: dict[str, float] = {}  # learnt from the calls answered, by model
        self._spend = spend
        self._replica_id = replica_id
        self._last_sync = 0.0
        self._register_metrics(metrics)

    def for_rule(self, rule: Rule) -> JudgeGuard:
        return JudgeGuard(
            self.budgets.for_rule(rule.scorer_id),
            self.breakers,
            self.redactor,
            self._estimated_output_tokens,
            self._answer_ratios,
        )

    def refusal(self, rule: Rule) -> str | None:
        """Why a judge scorer of this rule should not start: a budget it counts against is spent."""
        if not rule.scorer.judge_models:
            return None
        return next(
            (why for b in self.budgets.for_rule(rule.scorer_id) if (why := b.refusal()) is not None), None
        )

    async def sync(self, now: bool = False) -> None:
        """Write this replica's judge spend and read the others' (at most every few seconds unless
        ``now``); a store that fails is logged, and the budgets go on with what they know."""
        if self._spend is None or not self.budgets:
            return
        if not now and time.monotonic() - self._last_sync < SPEND_SYNC_SECONDS:
            return
        self._last_sync = time.monotonic()
        try:
            await self.budgets.sync(self._spend, self._replica_id)
        except Exception as exc:
            logger.warning("judge budgets: the spend of other replicas could not be read or written: %s", exc)

    def _register_metrics(self, metrics: ScoringMetrics) -> None:
        windows: tuple[Window, ...] = ("hour", "day")
        units: tuple[Unit, ...] = ("calls", "usd")
        for budget in self.budgets.budgets.values():
            for window in windows:
                for unit in units:
                    if budget.remaining(window, unit) is not None:
                        gauge = metrics.budget_remaining.labels(budget=budget.name, window=window, unit=unit)
                        gauge.set_function(partial(_remaining, budget, window, unit))

        def changed(model: str, state: State) -> None:
            metrics.circuit_state.labels(model=model).set(STATE_VALUES[state])
            metrics.circuit_transitions.labels(model=model, state=state).inc()

        self.breakers.on_change = changed


def _remaining(budget: Budget, window: Window, unit: Unit) -> float:
    return budget.remaining(window, unit) or 0.0


def _breaker_settings(groups: Sequence[RuleGroup]) -> dict[str, CircuitBreakerConfig]:
    """The circuit breaker settings rules give their judge models (two rules may not disagree)."""
    settings: dict[str, CircuitBreakerConfig] = {}
    for group in groups:
        for rule in group:
            if rule.circuit_breaker is None:
                continue
            for model in rule.scorer.judge_models:
                known = settings.setdefault(model, rule.circuit_breaker)
                if known != rule.circuit_breaker:
                    raise ValueError(
                        f"rule {rule.scorer_id!r}: judge model {model!r} has another circuit_breaker "
                        "in an earlier rule; give it once (or the same in both)"
                    )
    return settings
