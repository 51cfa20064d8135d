"""The checks' options: Mastra's camelCase or snake_case, validated when the check is built."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.scoring.prebuilt.checks.registered_checks import REGISTRY
from tracescore.scoring.prebuilt.registry import build_scorer


def test_snake_and_camel_case_options_build_the_same_check() -> None:
    camel = build_scorer("check-called-tool", {"toolName": "search", "times": 2}, registry=REGISTRY)
    snake = build_scorer("check-called-tool", {"tool_name": "search", "times": 2}, registry=REGISTRY)
    assert camel.description == snake.description == 'Checks that "search" was called at least 2 times'
    flags = build_scorer("check-matches", {"pattern": "a", "flags": "ui"}, registry=REGISTRY)
    assert flags.description == "Checks if output matches pattern /a/iu"  # flags in JS's order


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("check-includes", {}, "expected"),  # the expected text is required
        ("check-includes", {"expected": "a", "caseSensitive": True}, "has no option 'caseSensitive'"),
        ("check-includes", {"expected": "a", "ignore_case": True, "ignoreCase": False}, "given twice"),
        ("check-equals", {"expected": "a", "ignoreCase": "sometimes"}, "invalid options"),
        ("check-did-not-call", {}, "tool_name"),
        ("check-called-tool", {"toolName": "a", "times": -1}, "times must be 0 or more"),
        ("check-called-tool", {"toolName": "a", "times": 1.5}, "invalid options"),
        ("check-max-tool-calls", {"max": -1}, "max must be 0 or more"),
        ("check-max-tool-calls", {}, "max"),
        ("check-tool-order", {"expectedOrder": "search"}, "invalid options"),
        ("check-similarity", {"expected": "a", "threshold": 1.5}, "threshold must be between 0 and 1"),
        ("check-similarity", {"expected": "a", "threshold": -0.1}, "threshold must be between 0 and 1"),
        ("check-used-no-tools", {"max": 1}, "its options: none"),
        ("check-matches", {"pattern": "a", "flags": "y"}, "'y' not supported"),
        ("check-matches", {"pattern": "a", "flags": "v"}, "'v' not supported"),
        ("check-matches", {"pattern": "a", "flags": "ii"}, "invalid regular expression flags"),
        ("check-matches", {"pattern": "a", "flags": "x"}, "invalid regular expression flags"),
        ("check-matches", {"pattern": "(a"}, "unsupported regular expression"),
        ("check-matches", {"pattern": "[a"}, "unterminated character class"),
        ("check-matches", {"pattern": "a\\"}, "lone backslash"),
        ("check-matches", {"pattern": "(?i)a"}, "not JavaScript's"),
        ("check-matches", {"pattern": "(?P<n>a)"}, "not JavaScript's"),
        ("check-matches", {"pattern": "\\Aa"}, "\\A is not a JavaScript regular expression escape"),
        ("check-matches", {"pattern": "[\\S]"}, "\\S inside a character class is not supported"),
        ("check-matches", {"pattern": "\\p{L}", "flags": "u"}, "Unicode property escapes"),
        ("check-matches", {"pattern": "(?<=a+)b"}, "unsupported regular expression"),  # variable lookbehind
        ("check-matches", {"pattern": "\\u{110000}", "flags": "u"}, "invalid code point"),
        ("check-matches", {"pattern": "\\u{41}"}, "unsupported regular expression"),  # \u{} needs u
    ],
)
def test_bad_options_are_refused_at_construction(name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        build_scorer(name, options, registry=REGISTRY)
