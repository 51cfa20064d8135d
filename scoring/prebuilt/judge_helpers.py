"""Shared pieces of the LLM-judge prebuilt scorers: verdict labels, Mastra's rounding and its share
of verdicts, JavaScript's numbers, JSON and truthiness, and the run text a judge reads.

A judge's label is data checked by its schema: ``Label`` accepts exactly the allowed words (after
trimming and lower-casing, as Mastra compares them); anything else fails validation, so the judge
gets a repair round and then the scorer fails -- an unknown label never turns into a score.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

from tracescore.schemas import AgentRun
from tracescore.scoring.judge import delimit
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input


def _normalise(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


YesNoUnsure = Annotated[Literal["yes", "no", "unsure"], BeforeValidator(_normalise)]
YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_normalise)]
# The share of verdicts most judges count: each "yes" counts 1, any other label 0.
YES_COUNTS: Mapping[str, float] = {"yes": 1.0}


class Claims(BaseModel):
    """A judge's list of atomic claims (the preprocess answer of the claim-based scorers)."""

    claims: list[str]


class MastraOptions(BaseModel):
    """A Mastra option given as an object: keys in snake_case or camelCase, unknown keys refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def round_to_two_decimals(num: float) -> float:
    """Mastra's ``roundToTwoDecimals``: ``Math.round((num + Number.EPSILON) * 100) / 100``."""
    # JavaScript's Math.round rounds halves up (towards +infinity), unlike Python's round().
    return math.floor((num + sys.float_info.epsilon) * 100 + 0.5) / 100


def verdict_share(
    labels: Sequence[str], *, scale: float, counts: Mapping[str, float] = YES_COUNTS, empty: float = 0.0
) -> float:
    """What the verdicts' labels count (``counts``, others 0) / verdicts x ``scale``, rounded as
    Mastra rounds; ``empty`` when there is no verdict.

    >>> verdict_share(["yes", "unsure", "no"], scale=1, counts={"yes": 1, "unsure": 0.3})
    0.43
    """
    if not labels:
        return empty
    return round_to_two_decimals(sum(counts.get(label, 0.0) for label in labels) / len(labels) * scale)


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


def js_pretty_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)``."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def js_truthy(value: object) -> bool:
    """JavaScript's truthiness of a JSON value: null, false, "", 0 and NaN are falsy (an empty list
    or object is truthy)."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and value == value  # 0 and NaN are falsy
    return True


def js_text(value: object) -> str:
    """A value as Mastra puts it in a prompt: a string as it is, anything else as its JSON."""
    return value if isinstance(value, str) else js_json(value)


def normalize_text(value: Any) -> str:
    """VoltAgent's ``normalizeText``: None is empty, a string stays, anything else is its JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else js_json(value)


def user_text(run: AgentRun) -> str:
    """The user's message of the run ("" without one), as Mastra's judges read it."""
    return get_user_message_from_run_input(run) or ""


def answer_text(run: AgentRun) -> str:
    """The agent's answer: the run's last assistant text ("" without one)."""
    return get_assistant_message_from_run_output(run) or ""


def delimited_lines(label: str, lines: Sequence[str]) -> str:
    """``lines``, one a line, inside data markers labelled ``label``."""
    return delimit(label, "\n".join(lines))


def delimited_answers(label: str, answers: Sequence[BaseModel]) -> str:
    """The judge's own earlier answers, back in a prompt as data: their ``JSON.stringify``."""
    return delimit(label, js_json([answer.model_dump() for answer in answers]))
