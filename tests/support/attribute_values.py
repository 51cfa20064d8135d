"""Attribute values and log bodies read as the type a test knows they hold, asserted, not converted.

A decoded value is any ``AttributeValue``; a test that indexes it or parses it as JSON states which
one it expects, and fails on a value of another type instead of reading it leniently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracescore.schemas.spans import AttributeValue


def str_value(value: AttributeValue) -> str:
    assert isinstance(value, str), f"not a string: {value!r}"
    return value


def int_value(value: AttributeValue) -> int:
    assert isinstance(value, int) and not isinstance(value, bool), f"not an int: {value!r}"
    return value


def map_value(value: AttributeValue) -> Mapping[str, AttributeValue]:
    """A kvlist value (or a JSON object)."""
    assert isinstance(value, dict), f"not a map: {value!r}"
    return value


def list_value(value: AttributeValue) -> Sequence[AttributeValue]:
    """An array value (or a JSON array)."""
    assert isinstance(value, list), f"not a list: {value!r}"
    return value
