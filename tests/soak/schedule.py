"""The soak's fault schedule: a pure function of the seed and the length, so a run that found something
can be run again with the same faults at the same moments.

For 20 minutes the schedule holds 4 SIGKILLs, 2 disk fills of 30-60 s, 1 request of about 20 MB,
1,200 slow-header clients for 1-2 minutes, a judge answering 500 for a while and then hanging for a
while, a flood of about 30 s and a burst of malformed input. Longer soaks get proportionally more
faults; shorter ones fewer (at least one of each kind) and shorter ones (durations scaled down to a
quarter at most). Faults start after a lead-in and end before a quiet tail, in which the service
catches up before the soak stops; otherwise they fall where the seed puts them, overlapping or not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

REFERENCE_MINUTES = 20.0  # the length the counts and durations below are given for
MIN_DURATION_SCALE = 0.25


class FaultKind(StrEnum):
    SIGKILL = "sigkill"
    DISK_FILL = "disk_fill"
    BIG_REQUEST = "big_request"
    SLOW_CLIENTS = "slow_clients"
    JUDGE_ERRORS = "judge_errors"
    JUDGE_HANGS = "judge_hangs"
    FLOOD = "flood"
    MALFORMED = "malformed"


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: what, when (seconds after the load starts) and for how long (0: at once)."""

    kind: FaultKind
    at_s: float
    duration_s: float = 0.0

    @property
    def end_s(self) -> float:
        return self.at_s + self.duration_s


@dataclass(frozen=True)
class _Plan:
    count: int  # at REFERENCE_MINUTES
    duration_s: tuple[float, float]  # at REFERENCE_MINUTES, drawn uniformly


# The judge's two outages are one plan: errors first, then hangs right after (see fault_schedule).
PLANS: dict[FaultKind, _Plan] = {
    FaultKind.SIGKILL: _Plan(4, (0.0, 0.0)),
    FaultKind.DISK_FILL: _Plan(2, (30.0, 60.0)),
    FaultKind.BIG_REQUEST: _Plan(1, (0.0, 0.0)),
    FaultKind.SLOW_CLIENTS: _Plan(1, (60.0, 120.0)),
    FaultKind.JUDGE_ERRORS: _Plan(1, (45.0, 90.0)),
    FaultKind.JUDGE_HANGS: _Plan(1, (45.0, 90.0)),
    FaultKind.FLOOD: _Plan(1, (25.0, 35.0)),
    FaultKind.MALFORMED: _Plan(1, (0.0, 0.0)),
}


def lead_in_s(minutes: float) -> float:
    """No fault before this: the service is up and the load steady."""
    return max(10.0, 0.05 * minutes * 60)


def quiet_tail_s(minutes: float) -> float:
    """Every fault has ended this long before the load stops."""
    return max(15.0, 0.1 * minutes * 60)


def fault_count(kind: FaultKind, minutes: float) -> int:
    return max(1, round(PLANS[kind].count * minutes / REFERENCE_MINUTES))


def duration_scale(minutes: float) -> float:
    return min(1.0, max(MIN_DURATION_SCALE, minutes / REFERENCE_MINUTES))


def fault_schedule(seed: int, minutes: float) -> list[Fault]:
    """The faults of a soak of ``minutes`` with ``seed``, in the order they start.

    Faults of a kind are spread over the window, one in each of as many equal stretches, at a random
    place inside it (never at its edges), so two SIGKILLs or two fills never fall on top of each other.
    Each kind draws from a generator of its own: the faults of one kind do not move when another kind's
    plan changes."""
    if minutes <= 0:
        raise ValueError(f"a soak lasts a positive number of minutes, not {minutes}")
    first, last = lead_in_s(minutes), minutes * 60 - quiet_tail_s(minutes)
    scale = duration_scale(minutes)
    faults: list[Fault] = []
    for kind in PLANS:
        if kind is FaultKind.JUDGE_HANGS:
            continue  # placed with the errors
        rng = random.Random(f"tracescore-soak:{seed}:{kind.value}")
        count = fault_count(kind, minutes)
        for index in range(count):
            durations = [_draw(rng, PLANS[kind].duration_s) * scale]
            if kind is FaultKind.JUDGE_ERRORS:
                durations.append(_draw(rng, PLANS[FaultKind.JUDGE_HANGS].duration_s) * scale)
            room = max(0.0, last - first - sum(durations))
            stretch = room / count
            at = first + stretch * (index + rng.uniform(0.15, 0.85))
            fault = Fault(kind, round(at, 1), round(durations[0], 1))
            faults.append(fault)
            if kind is FaultKind.JUDGE_ERRORS:
                faults.append(Fault(FaultKind.JUDGE_HANGS, round(fault.end_s, 1), round(durations[1], 1)))
    return sorted(faults, key=lambda fault: (fault.at_s, fault.kind.value))


def _draw(rng: random.Random, bounds: tuple[float, float]) -> float:
    low, high = bounds
    return rng.uniform(low, high) if high > low else low
