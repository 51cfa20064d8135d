"""Why a scorer cannot be built as configured, each wrong thing on its own, so the config check can
name the line of each (``tracescore serve`` reports every rule's errors at once, with ``file:line``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import ValidationError

# What a problem is about: the rule's scorer (``scorer:`` or ``use:``), or its options.
Part = Literal["scorer", "options"]
# One wrong thing: the option it is about (None: the scorer, or the options as a whole), and why.
Problem = tuple[str | None, str]


class ScorerConfigError(ValueError):
    """A scorer that cannot be built as configured. ``problems``: (option or None, why) for each wrong
    thing; ``part``: whether the scorer itself or its options are wrong."""

    def __init__(self, message: str, part: Part, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message)
        self.part = part
        self.problems = list(problems) or [(None, message)]


def option_problems(exc: ValidationError, *, missing: bool = True) -> list[Problem]:
    """A factory's option errors, each as (option, ``'x': why (got …)``), without pydantic's function
    name, URLs and input types; ``missing``: with the options left out that it requires."""
    found: list[Problem] = []
    for error in exc.errors():
        location = [str(part) for part in error["loc"]]
        option = ".".join(location)
        if error["type"] == "missing_argument" or error["type"] == "missing":
            if missing:
                found.append((location[0] if location else None, f"{option!r} is required"))
            continue
        message = error["msg"].removeprefix("Value error, ")
        found.append((location[0] if location else None, f"{option!r}: {message} (got {error['input']!r})"))
    return found
