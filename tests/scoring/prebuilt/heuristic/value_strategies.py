"""Hypothesis strategies of the values the autoevals heuristics compare: text, numbers, JSON values."""

from __future__ import annotations

from hypothesis import strategies as st

# Unicode text including astral characters, combining marks and whitespace.
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=24) | st.sampled_from(
    ["", "hello", "hello world", "Hello World", "héllo", "🍕 pizza", "e\u0301", "  ", "{}", "[1, 2]"]
)
numbers = st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
