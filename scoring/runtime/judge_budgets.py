"""Judge budgets: calls and US dollars per UTC clock hour and per UTC day, per rule and for all rules.

Before each judge call its cost is estimated (the prompt's tokens and litellm's price map) and
reserved in every budget that applies; a call that would pass a limit is not made
(``BudgetExceeded``, and the run's decision is ``budget_exceeded``). After the call the reservation is
settled with what the provider reported. Spend is kept per hour, so the day is the sum of its hours.

Budgets hold across restarts and replicas: ``BudgetBook.sync`` writes this replica's spend per hour to
the store (``judge_spend``) and reads the others', every few seconds. Between two syncs replicas do not
see each other's new spend, so with several replicas a budget can be passed by what they spend in
one sync interval.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from tracescore.schemas.consumers import SpendRow, SpendStore
from tracescore.schemas.errors import TracescoreError
from tracescore.schemas.rules import BudgetLimits

logger = logging.getLogger(__name__)

HOUR = 3600
DAY = 24 * HOUR
GLOBAL = "*"  # the name of the budget of all rules (scoring.budget)
Window = Literal["hour", "day"]
Unit = Literal["calls", "usd"]


class BudgetExceeded(TracescoreError):
    """A judge call was not made: it would pass a budget. Final for the run (never retried)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


@dataclass
class Spend:
    calls: int = 0
    usd: float = 0.0


@dataclass(frozen=True)
class BudgetReservation:
    budget: Budget
    hour: int
    usd: float


def _hour(now: float) -> int:
    return int(now // HOUR * HOUR)


def _day(now: float) -> int:
    return int(now // DAY * DAY)


@dataclass(eq=False)
class Budget:
    """One budget's spend by hour: this process's own, and the other replicas' as last read."""

    name: str  # the rule's scorer id, or GLOBAL
    limits: BudgetLimits
    clock: Callable[[], float] = time.time
    _own: dict[int, Spend] = field(default_factory=dict)
    _others: dict[int, Spend] = field(default_factory=dict)
    _dirty: set[int] = field(default_factory=set)

    @property
    def label(self) -> str:
        return "all rules (scoring.budget)" if self.name == GLOBAL else f"rule {self.name!r}"

    def spent(self, window: Window, now: float | None = None) -> Spend:
        now = self.clock() if now is None else now
        first = _hour(now) if window == "hour" else _day(now)
        total = Spend()
        for spends in (self._own, self._others):
            for hour, spend in spends.items():
                if first <= hour <= now:
                    total.calls += spend.calls
                    total.usd += spend.usd
        return total

    def refusal(self, usd: float = 0.0, calls: int = 1, now: float | None = None) -> str | None:
        """Why ``calls`` more calls costing ``usd`` would pass a limit (None: they fit)."""
        now = self.clock() if now is None else now
        limits = self.limits
        checks: tuple[tuple[Window, int | None, float | None], ...] = (
            ("hour", limits.max_calls_per_hour, limits.max_usd_per_hour),
            ("day", limits.max_calls_per_day, limits.max_usd_per_day),
        )
        for window, max_calls, max_usd in checks:
            spent = self.spent(window, now)
            resets = _hour(now) + HOUR if window == "hour" else _day(now) + DAY
            at = datetime.fromtimestamp(resets, UTC).strftime("%Y-%m-%d %H:%M UTC")
            if max_calls is not None and spent.calls + calls > max_calls:
                return f"{self.label}: {max_calls} judge call(s) per {window} reached (resets {at})"
            if max_usd is not None and usd > 0 and spent.usd + usd > max_usd:
                return (
                    f"{self.label}: ${max_usd:g} per {window} would be passed (spent ${spent.usd:.4f}, "
                    f"this call ~${usd:.4f}; resets {at})"
                )
            if max_usd is not None and spent.usd >= max_usd:
                return f"{self.label}: ${max_usd:g} per {window} spent (resets {at})"
        return None

    def reserve(self, usd: float) -> BudgetReservation:
        """Count one call costing about ``usd`` now, or raise ``BudgetExceeded``."""
        now = self.clock()
        why = self.refusal(usd, now=now)
        if why is not None:
            raise BudgetExceeded(why)
        hour = _hour(now)
        spend = self._own.setdefault(hour, Spend())
        spend.calls += 1
        spend.usd += usd
        self._dirty.add(hour)
        return BudgetReservation(self, hour, usd)

    def settle(self, reservation: BudgetReservation, usd: float) -> None:
        """Replace the reservation's estimate with the call's real cost."""
        spend = self._own.setdefault(reservation.hour, Spend())
        spend.usd = max(0.0, spend.usd + usd - reservation.usd)
        self._dirty.add(reservation.hour)

    def cancel(self, reservation: BudgetReservation) -> None:
        """Take back a reservation whose call was not made."""
        spend = self._own.setdefault(reservation.hour, Spend())
        spend.calls = max(0, spend.calls - 1)
        spend.usd = max(0.0, spend.usd - reservation.usd)
        self._dirty.add(reservation.hour)

    def remaining(self, window: Window, unit: Unit) -> float | None:
        """What is left in the current window (None: no such limit)."""
        limits = self.limits
        limit: float | None
        if unit == "calls":
            limit = limits.max_calls_per_hour if window == "hour" else limits.max_calls_per_day
        else:
            limit = limits.max_usd_per_hour if window == "hour" else limits.max_usd_per_day
        if limit is None:
            return None
        spent = self.spent(window)
        return max(0.0, limit - (spent.calls if unit == "calls" else spent.usd))

    def take_unsynced(self) -> list[tuple[int, Spend]]:
        """This process's hours changed since the last sync, with their totals."""
        rows = [(hour, Spend(self._own[hour].calls, self._own[hour].usd)) for hour in sorted(self._dirty)]
        self._dirty.clear()
        return rows

    def forget_before(self, hour: int) -> None:
        for spends in (self._own, self._others):
            for old in [h for h in spends if h < hour]:
                del spends[old]


class BudgetBook:
    """The budgets of one executor: one per rule that has one, and the global one."""

    def __init__(
        self,
        limits: Mapping[str, BudgetLimits],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self.budgets = {name: Budget(name, lim, clock) for name, lim in limits.items() if lim.limited}
        self._loaded = False

    def for_rule(self, scorer_id: str) -> tuple[Budget, ...]:
        """The budgets a rule's judge calls count against: its own and the global one."""
        return tuple(b for name in (scorer_id, GLOBAL) if (b := self.budgets.get(name)) is not None)

    def __bool__(self) -> bool:
        return bool(self.budgets)

    async def sync(self, store: SpendStore, replica: str) -> None:
        """Write this replica's changed hours, then read every replica's spend of the last day.

        The first sync also takes this replica's own earlier rows (a restart resumes its spend)."""
        if not self.budgets:
            return
        now = self._clock()
        rows: list[SpendRow] = []
        taken: list[tuple[Budget, list[tuple[int, Spend]]]] = []
        for budget in self.budgets.values():
            changed = budget.take_unsynced()
            taken.append((budget, changed))
            rows.extend(SpendRow(budget.name, replica, hour, s.calls, s.usd) for hour, s in changed)
        try:
            if rows:
                await store.save_spend(rows)
            stored = await store.load_spend(_day(now) - DAY)
        except BaseException:
            for budget, changed in taken:  # written next time
                budget._dirty.update(hour for hour, _ in changed)
            raise
        self._absorb(stored, replica)
        for budget in self.budgets.values():
            budget.forget_before(_day(now) - DAY)

    def _absorb(self, rows: Iterable[SpendRow], replica: str) -> None:
        others: dict[str, dict[int, Spend]] = {name: {} for name in self.budgets}
        for row in rows:
            budget = self.budgets.get(row.budget)
            if budget is None:
                continue
            if row.replica == replica:
                if not self._loaded:  # this replica's spend before a restart
                    own = budget._own.setdefault(row.hour, Spend())
                    own.calls = max(own.calls, row.calls)
                    own.usd = max(own.usd, row.usd)
                continue
            spend = others[row.budget].setdefault(row.hour, Spend())
            spend.calls += row.calls
            spend.usd += row.usd
        for name, spends in others.items():
            self.budgets[name]._others = spends
        self._loaded = True
