"""Lenient reading of span attribute values that may hold JSON.

Instrumentations store structured values as JSON strings (SDKs cannot store maps), sometimes
double-encoded, sometimes truncated by ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, sometimes as plain
text (``gen_ai.tool.call.result = "rainy, 57°F"``), and decoders may already hand over lists and
dicts. Every helper here accepts any value and never raises.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TypeAlias, TypeVar

from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import AttributeValue, JsonValue

_Value = TypeVar("_Value")

AttributeMap: TypeAlias = dict[str, AttributeValue] | dict[str, JsonValue]
"""A map an attribute value holds: a kvlist value, or a JSON object decoded from text."""

# A JSON document that itself encodes JSON starts with one of these after the first decode.
_JSON_STARTS = ("{", "[", '"')
# Deeper structures than this are kept as text rather than walked (json itself stops near 1000).
_MAX_DEPTH = 200
# What json.loads skips before a value, and every character a value can start with (objects, arrays,
# strings, numbers, true/false/null, and Python's NaN/Infinity/-Infinity). The empty string is not one.
_JSON_WHITESPACE = " \t\n\r"
_JSON_VALUE_STARTS = frozenset('{["-0123456789tfnNI')
# A default decoder's value scan, which json.loads ends in (see _loads).
_RAW_DECODE = json.JSONDecoder().raw_decode
# Values plain_json returns as they are, with None (bool is an int).
_JSON_SCALARS = (str, int, float)


def _loads(text: str) -> tuple[bool, JsonValue]:
    """``(True, json.loads(text))``, or ``(False, None)`` when that raises."""
    # Plain text ("rainy, 57°F") is common: refuse it without building a JSONDecodeError when its
    # first character (after JSON's whitespace) can start no JSON value.
    start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    if text[start : start + 1] not in _JSON_VALUE_STARTS:
        return False, None
    # json.loads wraps this scan in about 1 us of Python (a BOM check, two whitespace regex matches,
    # another method call), most of a short value's cost, and a request's spans hold hundreds of
    # JSON values. Whitespace is skipped as it does, and trailing data refused as it does.
    try:
        decoded, end = _RAW_DECODE(text, start)
    # RecursionError: pathologically nested input must not escape either.
    except (ValueError, RecursionError):
        return False, None
    if end != len(text) and text[end:].strip(_JSON_WHITESPACE):
        return False, None
    return True, decoded


def parse_json_value(value: _Value) -> _Value | JsonValue:
    """Decode ``value`` if it is JSON text (once, or twice when double-encoded); else return it as is.

    >>> parse_json_value('{"location": "Paris"}')
    {'location': 'Paris'}
    >>> parse_json_value('rainy, 57°F')
    'rainy, 57°F'
    >>> parse_json_value('"\\\\"result1\\\\""')
    'result1'
    """
    text: str
    if isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", errors="replace")
    else:
        return value
    ok, decoded = _loads(text)
    if not ok:
        return text
    if isinstance(decoded, str) and decoded.strip().startswith(_JSON_STARTS):
        ok, twice = _loads(decoded)
        if ok:
            return twice
    return decoded


def plain_json(value: object, _depth: int = 0) -> JsonValue:
    """The value with only JSON types left (bytes decoded, tuples as lists, keys as strings).

    Attribute arrays can hold OTLP bytes values; AgentRuns must serialise as JSON whatever came in.
    """
    if value is None or isinstance(value, _JSON_SCALARS):
        return value
    if _depth > _MAX_DEPTH:
        return as_text(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): plain_json(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain_json(v, _depth + 1) for v in value]
    return str(value)


def as_list(value: AttributeValue) -> Sequence[AttributeValue]:
    """The value's items: JSON arrays decoded, a single object wrapped, anything else empty."""
    parsed = parse_json_value(value)
    if isinstance(parsed, list):
        return parsed
    if isinstance(parsed, dict):
        return [parsed]
    return []


def as_str(value: object) -> str | None:
    """Non-empty strings pass; anything else is None (ids, names, models are strings or absent)."""
    return value if isinstance(value, str) and value else None


def as_int(value: object) -> int:
    """Token counts and the like: ints, integral floats and digit strings; anything else is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return 0
    return 0


def as_text(value: object) -> str:
    """A human-readable string for any value: strings as is, everything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return str(value)


def clean_text(value: object) -> str:
    """Text of a content value (``as_text``); a redaction placeholder is no content: empty text, so a run
    of placeholders reads as content-less."""
    text = as_text(value)
    return "" if is_placeholder(text) else text
