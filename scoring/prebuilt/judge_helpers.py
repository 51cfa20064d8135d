"""Shared pieces of the LLM-judge prebuilt scorers: verdict labels, Mastra's rounding, JS numbers.

A judge's label is data checked by its schema: ``Label`` accepts exactly the allowed words (after
trimming and lower-casing, as Mastra compares them); anything else fails validation, so the judge
gets a repair round and then the scorer fails -- an unknown label never turns into a score.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator


def _normalise(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


YesNoUnsure = Annotated[Literal["yes", "no", "unsure"], BeforeValidator(_normalise)]
YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_normalise)]


def round_to_two_decimals(num: float) -> float:
    """Mastra's ``roundToTwoDecimals``: ``Math.round((num + Number.EPSILON) * 100) / 100``."""
    # JavaScript's Math.round rounds halves up (towards +infinity), unlike Python's round().
    return math.floor((num + sys.float_info.epsilon) * 100 + 0.5) / 100


def js_number(value: float | None) -> str:
    """A number as JavaScript's template literal prints it (``1`` not ``1.0``, ``0.85``)."""
    if value is None:
        return "undefined"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact separators, non-ASCII characters kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def normalize_text(value: Any) -> str:
    """VoltAgent's ``normalizeText``: None is empty, a string stays, anything else is its JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else js_json(value)


class Claims(BaseModel):
    """A judge's list of atomic claims (the preprocess answer of the claim-based scorers)."""

    claims: list[str]
