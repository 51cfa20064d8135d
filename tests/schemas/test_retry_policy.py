"""The one retry policy: waits grow by the multiplier up to the cap, jitter only shortens them by at most
its fraction, a server's hint is waited at least (up to the cap), and whether to retry is the error's."""

from itertools import pairwise

import pytest
from pydantic import ValidationError

from tracescore.schemas.errors import StoreError, TracescoreError, is_retriable_status
from tracescore.schemas.retry_policy import RetryPolicy

DRAWS = 2_000


def test_without_jitter_waits_double_from_the_first_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_s=0.5, max_s=5.0)
    assert [policy.delay(attempt) for attempt in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_without_jitter_waits_never_shrink_and_stop_at_the_cap() -> None:
    policy = RetryPolicy(initial_s=0.2, max_s=30.0, multiplier=1.5)
    waits = [policy.delay(attempt) for attempt in range(40)]
    assert all(earlier <= later for earlier, later in pairwise(waits))
    assert waits[0] == 0.2 and waits[-1] == 30.0
    assert waits[8] == pytest.approx(0.2 * 1.5**8)  # 5.13 s: still growing, under the cap


def test_a_retry_counted_for_days_stays_at_the_cap() -> None:
    # 2.0 ** 5000 overflows a float; a consumer retrying a broker for as long as the service runs
    # counts that far.
    policy = RetryPolicy(initial_s=0.5, max_s=30.0, jitter=0.5)
    assert policy.backoff(5_000) == 30.0
    assert 15.0 <= policy.delay(1_000_000) <= 30.0


@pytest.mark.parametrize(
    ("jitter", "attempt", "full"), [(0.5, 0, 0.5), (0.5, 3, 4.0), (1.0, 2, 2.0), (0.2, 9, 10.0)]
)
def test_jitter_draws_from_the_fraction_below_the_backoff(jitter: float, attempt: int, full: float) -> None:
    policy = RetryPolicy(initial_s=0.5, max_s=10.0, jitter=jitter)
    waits = [policy.delay(attempt) for _ in range(DRAWS)]
    lowest = full * (1 - jitter)
    assert lowest <= min(waits) and max(waits) <= full
    assert max(waits) - min(waits) > (full - lowest) * 0.9  # the random part really is random


def test_no_wait_passes_the_cap_whatever_the_jitter_or_the_hint() -> None:
    policy = RetryPolicy(initial_s=1.0, max_s=8.0, jitter=1.0)
    assert max(policy.delay(attempt) for attempt in range(20) for _ in range(100)) <= 8.0
    assert policy.delay(0, at_least=600.0) == 8.0  # a Retry-After of ten minutes is cut to the cap


def test_a_hint_is_waited_at_least() -> None:
    policy = RetryPolicy(initial_s=0.1, max_s=8.0, jitter=0.5)
    assert min(policy.delay(0, at_least=0.7) for _ in range(DRAWS)) == 0.7
    # A hint shorter than the backoff leaves the backoff.
    assert min(policy.delay(5, at_least=0.7) for _ in range(DRAWS)) >= 1.6


def test_retries_only_what_the_error_says_is_retriable() -> None:
    policy = RetryPolicy(initial_s=1.0, max_s=60.0)
    assert policy.retries(StoreError("down", retriable=True)) and policy.retries(ConnectionResetError())
    assert policy.retries(TracescoreError("busy", retriable=True))
    assert not policy.retries(StoreError("no such table")) and not policy.retries(ValueError("a bug"))


def test_http_answers_worth_another_try() -> None:
    assert all(is_retriable_status(status) for status in (408, 409, 429, 500, 502, 503, 504))
    assert not any(is_retriable_status(status) for status in (200, 400, 401, 403, 404, 422, 501))


@pytest.mark.parametrize(
    "values",
    [
        {"initial_s": 5.0, "max_s": 1.0},  # a first wait past the cap
        {"initial_s": -1.0, "max_s": 1.0},
        {"initial_s": 1.0, "max_s": 2.0, "jitter": 1.5},
        {"initial_s": 1.0, "max_s": 2.0, "multiplier": 0.5},  # waits that shrink
        {"initial_s": 1.0, "max_s": float("inf")},
        {"initial_s": 1.0, "max_s": 2.0, "cap": 3.0},  # a misspelt field is not ignored
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(values: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        RetryPolicy.model_validate(values)


def test_a_policy_is_a_frozen_value() -> None:
    policy = RetryPolicy(initial_s=0.5, max_s=30.0)
    with pytest.raises(ValidationError):
        policy.max_s = 60.0  # type: ignore[misc]
    assert policy == RetryPolicy(initial_s=0.5, max_s=30.0, multiplier=2.0, jitter=0.0)


def test_a_negative_attempt_is_a_bug() -> None:
    with pytest.raises(ValueError, match="from 0"):
        RetryPolicy(initial_s=0.5, max_s=30.0).delay(-1)
