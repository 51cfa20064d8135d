""" "Did you mean …?": the closest known name to a mistyped one (scorers, options, config keys)."""

from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz import fuzz, process, utils

# Below this similarity (0-100, rapidfuzz's normalised Indel ratio) a guess is more noise than help.
MIN_SIMILARITY = 70.0


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The known name most like ``word`` when one is close enough, else None (case and ``-``/``_``
    ignored: ``Textual_Diference`` finds ``textual-difference``)."""
    found = process.extractOne(
        word, list(choices), scorer=fuzz.ratio, processor=_normalise, score_cutoff=MIN_SIMILARITY
    )
    return None if found is None else str(found[0])


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, or ``""`` when none is close."""
    guess = closest(word, choices)
    return f"; did you mean {guess!r}?" if guess is not None else ""


def _normalise(text: str) -> str:
    return utils.default_process(text.replace("-", " ").replace("_", " "))
