"""Lenient reading of attribute values that may hold JSON, double-encoded JSON or plain text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracescore.ingest.transform.jsonvalue import as_int, as_list, as_text, parse_json_value


def test_parse_json_value_is_lenient() -> None:
    assert parse_json_value('{"a": [1, 2]}') == {"a": [1, 2]}
    assert parse_json_value('"{\\"a\\": 1}"') == {"a": 1}  # double-encoded
    assert parse_json_value('"result1"') == "result1"
    assert parse_json_value("rainy, 57°F") == "rainy, 57°F"
    assert parse_json_value('[{"role": "us') == '[{"role": "us'
    assert parse_json_value(b'{"b": true}') == {"b": True}
    assert parse_json_value([1, "x"]) == [1, "x"]
    assert parse_json_value("[" * 100_000) == "[" * 100_000
    assert as_list('{"k": 1}') == [{"k": 1}]
    assert as_list("plain") == []
    assert as_int("47") == 47 and as_int(True) == 0 and as_int("x") == 0 and as_int(float("nan")) == 0
    assert as_text({"a": "é"}) == '{"a": "é"}' and as_text(None) == ""


def _json_loads_or_text(text: str) -> object:
    """What parse_json_value gives a string that is not double-encoded: json.loads', else the text."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


_JSONISH = st.text(alphabet='{}[]",:0123456789 \t\n\r-eE.tfnNaIulr\\xé', max_size=12).filter(
    lambda t: not t.strip(" \t\n\r").startswith('"')  # a decoded string may be JSON again
)


@given(_JSONISH)
def test_parse_json_value_accepts_and_refuses_what_json_loads_does(text: str) -> None:
    assert repr(parse_json_value(text)) == repr(_json_loads_or_text(text))


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        " {} ",
        "{} x",
        "[1, 2]\n\t",
        "1 2",
        "NaN",
        "-Infinity",
        "\ufeff{}",
        "{}\u00a0",
        "1e400",
        "[1,]",
    ],
)
def test_parse_json_value_edges_match_json_loads(text: str) -> None:
    assert repr(parse_json_value(text)) == repr(_json_loads_or_text(text))
