"""Deterministic sampling: whether a (run, scorer) pair is scored at a given rate.

A pure function of a salted hash, so every replica and every replay makes the same choice, and
sampling nests: a run sampled at rate r is sampled at every rate above r (the hash is compared
with the rate, never re-drawn). After Langfuse's ``deterministicSampling``.
"""

from __future__ import annotations

import hashlib
import math

_HASH_SPACE = 2**64


def sample_point(run_id: str, salt: str) -> float:
    """Where the id falls in [0, 1): the first 8 bytes of sha256("salt:run_id"), big-endian."""
    digest = hashlib.sha256(f"{salt}:{run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _HASH_SPACE


def is_sampled(run_id: str, rate: float, salt: str) -> bool:
    """True when ``run_id`` is in the sample at ``rate`` (0 never, 1 always).

    >>> is_sampled("trace:span:textual-difference-scorer", 1.0, "tracescore")
    True
    """
    if math.isnan(rate) or not 0.0 <= rate <= 1.0:
        raise ValueError(f"sample rate must lie in [0, 1], got {rate!r}")
    # Explicit ends: the float division can round a hash just below 2**64 up to 1.0.
    if rate == 0.0:
        return False
    if rate == 1.0:
        return True
    return sample_point(run_id, salt) < rate
