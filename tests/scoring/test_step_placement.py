"""Where a sync step runs, from its measured cost: the mean per size of run and the places it picks."""

from __future__ import annotations

import math

from tracescore.scoring.framework.step_placement import (
    LONGEST_COUNTED_SECONDS,
    LOOP_BUDGET_SECONDS,
    SAMPLE_EVERY,
    Place,
    StepCost,
    size_class,
)


def test_size_classes_double() -> None:
    assert [size_class(chars) for chars in (0, 1, 2, 3, 4, 63, 64, 127, 128)] == [0, 1, 2, 2, 3, 6, 7, 7, 8]


def test_the_mean_weighs_the_newest_measurement_a_quarter() -> None:
    cost = StepCost()
    cost.record(7, 0.004)
    assert cost.seconds(7) == 0.004  # the first measurement is the mean
    cost.record(7, 0.0)
    assert cost.seconds(7) == 0.003  # 0.004 + (0 - 0.004) / 4
    cost.record(7, 0.007)
    assert math.isclose(cost.seconds(7) or 0, 0.004)  # 0.003 + (0.007 - 0.003) / 4
    assert cost.seconds(8) is None


def test_unmeasured_sizes_are_tried_in_a_thread() -> None:
    assert StepCost().place(9) is Place.THREAD


def test_cheap_steps_run_on_the_loop_and_slow_ones_in_a_worker() -> None:
    cost = StepCost()
    cost.record(7, LOOP_BUDGET_SECONDS / 2)
    cost.record(10, LOOP_BUDGET_SECONDS)
    assert (cost.place(7), cost.place(10)) == (Place.LOOP, Place.WORKER)


def test_a_step_slow_on_smaller_runs_goes_to_a_worker_on_larger_unmeasured_ones() -> None:
    cost = StepCost()
    cost.record(10, 0.01)
    # Larger runs: a worker without a try in a thread; smaller ones are not judged by it.
    assert (cost.place(17), cost.place(4)) == (Place.WORKER, Place.THREAD)


def test_a_step_measured_cheap_again_comes_back_to_the_loop() -> None:
    cost = StepCost()
    cost.record(7, 0.002)
    runs_off_the_loop = 0
    while cost.place(7) is Place.WORKER:
        runs_off_the_loop += 1
        cost.record(7, 0.0001)
    # 2 ms -> 1.525 -> 1.169 -> 0.902 ms (each step a quarter of the way to 0.1 ms)
    assert runs_off_the_loop == 3


def test_one_slow_run_of_a_cheap_step_waits_for_the_next_to_count() -> None:
    cost = StepCost()
    assert cost.sampled()  # timed; the next SAMPLE_EVERY - 1 runs are not
    cost.record(7, 0.000_002)
    assert not cost.sampled()
    cost.record(7, 0.005)  # preempted mid-step, say: held back, and the next run is timed
    assert (cost.place(7), cost.seconds(7), cost.sampled()) == (Place.LOOP, 0.000_002, True)
    cost.record(7, 0.000_002)  # cheap again: the slow run is forgotten
    cost.record(7, 0.005)
    assert cost.place(7) is Place.LOOP
    cost.record(7, 0.005)  # slow twice running: it is slow now
    assert cost.place(7) is Place.WORKER


def test_a_run_counts_as_at_most_the_longest_counted_time() -> None:
    cost = StepCost()
    cost.record(7, 0.4)  # a library imported on first use
    assert cost.seconds(7) == LONGEST_COUNTED_SECONDS
    runs_off_the_loop = 0
    while cost.place(7) is Place.WORKER:
        runs_off_the_loop += 1
        cost.record(7, 0.000_002)
    assert runs_off_the_loop == 9  # 10 ms a quarter of the way down each time, under 1 ms


def test_one_run_on_the_loop_in_sample_every_is_timed() -> None:
    cost = StepCost()
    timed = [cost.sampled() for _ in range(3 * SAMPLE_EVERY)]
    assert timed.count(True) == 3
    assert timed[0] and timed[SAMPLE_EVERY] and timed[2 * SAMPLE_EVERY]
