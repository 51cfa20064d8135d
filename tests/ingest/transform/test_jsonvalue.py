"""Lenient reading of attribute values that may hold JSON, double-encoded JSON or plain text."""

from __future__ import annotations

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
