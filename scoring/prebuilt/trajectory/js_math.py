"""JavaScript arithmetic the unified trajectory scorer reproduces, so its floats match Mastra's exactly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def is_measurement(value: Any) -> bool:
    """JavaScript's ``typeof value === 'number' && Number.isFinite(value) && value >= 0``."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


def js_sum(values: Sequence[float]) -> float:
    """Left-to-right sum from 0, as ``reduce((a, b) => a + b, 0)``; Python 3.12's ``sum`` compensates
    float rounding, which would part from Mastra's floats in the last bit."""
    total: float = 0
    for value in values:
        total += value
    return total


def js_round_hundredths(value: float) -> float:
    """``Math.round(value * 100) / 100`` (halves round up; no epsilon, unlike ``roundToTwoDecimals``)."""
    scaled = value * 100
    rounded = math.floor(scaled)
    return (rounded + 1 if scaled - rounded >= 0.5 else rounded) / 100
