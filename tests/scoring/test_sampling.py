"""Deterministic sampling: golden values, the nesting property, rate accuracy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracescore.scoring.runtime.sampling import is_sampled, sample_point

# Golden values derived by hand: `printf 'SALT:RUN_ID' | sha256sum` (coreutils), first 16 hex digits
# read as a big-endian 64-bit integer, divided by 2**64 in a Python shell.
GOLDEN = [
    # (run_id, salt, first 8 bytes of the digest, point in [0, 1))
    ("run-1", "tracescore", "71442d5547623af6", 0.4424465497207927),
    ("run-1", "salt-b", "c485bdcb6c0c53e2", 0.7676657315860649),
    ("run-2", "tracescore", "bd20514cdf911ba6", 0.7387743771246885),
    (
        "0af7651916cd43dd8448eb211c80319c:b7ad6b7169203331:textual-difference-scorer",
        "tracescore",
        "bbde3fee9a1a4353",
        0.7338600118183445,
    ),
]


@pytest.mark.parametrize(("run_id", "salt", "prefix", "point"), GOLDEN)
def test_golden_points(run_id: str, salt: str, prefix: str, point: float) -> None:
    assert int(prefix, 16) / 2**64 == point  # the table is self-consistent
    assert sample_point(run_id, salt) == point


@pytest.mark.parametrize(("run_id", "salt", "prefix", "point"), GOLDEN)
def test_golden_decisions_around_the_point(run_id: str, salt: str, prefix: str, point: float) -> None:
    assert is_sampled(run_id, point + 1e-9, salt)
    assert not is_sampled(run_id, point, salt)  # strictly below the rate
    assert not is_sampled(run_id, point - 1e-9, salt)


def test_salt_changes_the_choice() -> None:
    # run-1 sits at 0.44 under "tracescore" and at 0.77 under "salt-b" (golden values above).
    assert is_sampled("run-1", 0.5, "tracescore")
    assert not is_sampled("run-1", 0.5, "salt-b")


@given(st.text(), st.text())
def test_rate_zero_never_and_one_always(run_id: str, salt: str) -> None:
    assert not is_sampled(run_id, 0.0, salt)
    assert is_sampled(run_id, 1.0, salt)


@given(
    st.text(max_size=64),
    st.text(max_size=16),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_nesting(run_id: str, salt: str, rate_a: float, rate_b: float) -> None:
    low, high = sorted((rate_a, rate_b))
    if is_sampled(run_id, low, salt):
        assert is_sampled(run_id, high, salt)


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5, 0.9])
def test_rate_accuracy_over_20k_ids(rate: float) -> None:
    n = 20_000
    chosen = sum(
        is_sampled(f"{i:032x}:{i:016x}:content-similarity-scorer", rate, "tracescore") for i in range(n)
    )
    # Binomial sd at 20k ids is at most 0.0036; 0.015 is over four sd.
    assert abs(chosen / n - rate) < 0.015


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_rate_outside_unit_interval_is_rejected(rate: float) -> None:
    with pytest.raises(ValueError, match="sample rate"):
        is_sampled("run-1", rate, "tracescore")
