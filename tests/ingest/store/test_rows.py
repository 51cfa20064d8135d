"""Attribute values rendered as pdata's ``AsString()``, as the store writes them into its maps."""

from __future__ import annotations

import pytest

from tracescore.ingest.store.rows import attribute_string


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("plain \u2028 text", "plain \u2028 text"),
        (True, "true"),
        (-7, "-7"),
        (1.0, "1"),
        (0.1, "0.1"),
        (-0.0, "-0"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1e-6, "0.000001"),
        (2.5e-10, "2.5e-10"),
        (float("nan"), "json: unsupported value: NaN"),
        (float("-inf"), "json: unsupported value: -Inf"),
        (b"", ""),
        ({"b": [1.0, None], "a": "x"}, '{"a":"x","b":[1,null]}'),
        (["\u2028", b"\xff"], '["\\u2028","/w=="]'),
        ({"x": float("nan")}, ""),
        (None, ""),
    ],
)
def test_attribute_values_render_as_pdata_as_string(value: object, rendered: str) -> None:
    assert attribute_string(value) == rendered
