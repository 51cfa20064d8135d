"""Durations as people write them: ``30s``, ``15m``, ``1h``, ``7d``, ``2w`` (or a number of seconds)."""

from __future__ import annotations

import re
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def duration_seconds(text: str, *, unit_required: bool = False) -> float | None:
    """The seconds ``text`` names, or None when it is not a duration (or has no unit and one is
    required: a bare number is then something else, such as a year)."""
    match = _DURATION.match(text)
    if match is None or (unit_required and match.group(2) is None):
        return None
    return float(match.group(1)) * _SECONDS[match.group(2) or "s"]


def parse_duration(value: Any) -> Any:
    """A pydantic before-validator: seconds from a duration string; other values unchanged (pydantic
    then says what is wrong with them)."""
    if isinstance(value, str):
        seconds = duration_seconds(value)
        if seconds is None:
            raise ValueError(f"{value!r} is not a duration: give a number and a unit, e.g. 30m, 1h or 7d")
        return seconds
    return value
