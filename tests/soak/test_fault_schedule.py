"""The soak's fault schedule: a pure function of the seed and the length, with the faults an operator's
twenty minutes should hold, spread out, inside the window, and a compressed one for short soaks."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.soak.schedule import Fault, FaultKind, fault_schedule, lead_in_s, quiet_tail_s


def kinds(faults: list[Fault]) -> Counter[FaultKind]:
    return Counter(fault.kind for fault in faults)


def of(faults: list[Fault], kind: FaultKind) -> list[Fault]:
    return [fault for fault in faults if fault.kind is kind]


def test_the_same_seed_and_length_give_the_same_schedule_and_another_seed_another() -> None:
    assert fault_schedule(1, 20) == fault_schedule(1, 20)
    assert fault_schedule(1, 20) != fault_schedule(2, 20)
    assert [f.at_s for f in fault_schedule(1, 20)] != [f.at_s for f in fault_schedule(1, 30)]


@pytest.mark.parametrize("seed", range(6))
def test_twenty_minutes_hold_the_faults_of_the_plan(seed: int) -> None:
    faults = fault_schedule(seed, 20)
    assert kinds(faults) == {
        FaultKind.SIGKILL: 4,
        FaultKind.DISK_FILL: 2,
        FaultKind.BIG_REQUEST: 1,
        FaultKind.SLOW_CLIENTS: 1,
        FaultKind.JUDGE_ERRORS: 1,
        FaultKind.JUDGE_HANGS: 1,
        FaultKind.FLOOD: 1,
        FaultKind.MALFORMED: 1,
    }
    assert all(30 <= fill.duration_s <= 60 for fill in of(faults, FaultKind.DISK_FILL))
    assert all(60 <= slow.duration_s <= 120 for slow in of(faults, FaultKind.SLOW_CLIENTS))
    assert all(25 <= flood.duration_s <= 35 for flood in of(faults, FaultKind.FLOOD))
    assert all(fault.duration_s == 0 for fault in of(faults, FaultKind.SIGKILL))
    [errors], [hangs] = of(faults, FaultKind.JUDGE_ERRORS), of(faults, FaultKind.JUDGE_HANGS)
    assert errors.duration_s > 0 and hangs.duration_s > 0
    assert hangs.at_s == pytest.approx(errors.end_s, abs=0.15)  # the judge hangs once it stops failing


@pytest.mark.parametrize("minutes", [2, 3, 20, 45])
@pytest.mark.parametrize("seed", range(4))
def test_faults_fall_between_the_lead_in_and_the_quiet_tail_in_order(minutes: int, seed: int) -> None:
    faults = fault_schedule(seed, minutes)
    assert faults == sorted(faults, key=lambda fault: fault.at_s)
    assert all(fault.at_s >= lead_in_s(minutes) for fault in faults)
    assert all(fault.end_s <= minutes * 60 - quiet_tail_s(minutes) + 0.2 for fault in faults)


@pytest.mark.parametrize("seed", range(6))
def test_faults_of_one_kind_do_not_fall_on_top_of_each_other(seed: int) -> None:
    faults = fault_schedule(seed, 20)
    kills = [fault.at_s for fault in of(faults, FaultKind.SIGKILL)]
    assert min(b - a for a, b in zip(kills, kills[1:], strict=False)) > 60
    first, second = of(faults, FaultKind.DISK_FILL)
    assert second.at_s > first.end_s  # the disk is given back before it is taken again


@pytest.mark.parametrize("seed", range(6))
def test_two_minutes_hold_one_of_each_kind_shorter(seed: int) -> None:
    faults = fault_schedule(seed, 2)
    assert set(kinds(faults)) == set(FaultKind)
    assert all(count == 1 for count in kinds(faults).values())
    [fill] = of(faults, FaultKind.DISK_FILL)
    assert 7 <= fill.duration_s <= 15  # a quarter of 30-60 s
    assert sum(fault.duration_s for fault in faults) < 2 * 60


def test_longer_soaks_get_proportionally_more_faults_of_the_same_length() -> None:
    faults = fault_schedule(1, 40)
    assert kinds(faults)[FaultKind.SIGKILL] == 8 and kinds(faults)[FaultKind.DISK_FILL] == 4
    assert all(30 <= fill.duration_s <= 60 for fill in of(faults, FaultKind.DISK_FILL))


def test_a_soak_of_no_time_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        fault_schedule(1, 0)
