"""Durations as people write them: ``30s``, ``15m``, ``1h``, ``7d``, ``2w`` (or a number of seconds),
points in time given as an ISO/RFC 3339 time or as an age (``24h``: a day ago), and points in time as
OpenTelemetry and the store write them (nanoseconds since the Unix epoch)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def parse_time(text: str, now: datetime) -> datetime:
    """An ISO 8601 / RFC 3339 time (UTC unless it says otherwise), ``now``, or an age such as ``24h``
    or ``7d`` before ``now``."""
    value = text.strip()
    if value == "now":
        return now
    if (age := duration_seconds(value, unit_required=True)) is not None:
        return now - timedelta(seconds=age)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: give an ISO time (2026-11-20T00:00Z) or an age (24h, 7d)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def unix_nanos(moment: datetime) -> int:
    """Nanoseconds since the epoch, exactly (a float of seconds loses the microseconds); naive is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1_000
