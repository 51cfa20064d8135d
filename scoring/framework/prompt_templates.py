"""The one renderer of judge prompts: template files beside their scorer, ``{{name}}`` placeholders.

A prebuilt judge keeps each prompt as a text file in the ``prompts/`` folder of its family package
and loads it once, at import::

    EXTRACT = load_prompt(__package__, "faithfulness/extract")  # prompts/faithfulness/extract.txt
    ...
    EXTRACT.render(output=delimit("output", text))

Syntax (a subset of mustache, which autoevals' templates use too):

- ``{{name}}`` (or ``{{{name}}}``) is replaced by the value of ``name``, a string the scorer formats
  (JavaScript numbers, JSON, data wrapped by ``delimit``); the text around it is kept byte for byte.
- ``{{> other/part}}`` includes the template ``prompts/other/part.txt`` of the same package, so text
  that two judges share is written once.

Anything else, including a lone ``{{`` of a JSON example, is plain text. Rendering is strict: every
placeholder needs a value and every value given must be used, so a renamed variable fails loudly in
the tests instead of sending a different prompt. One trailing newline of a file is not part of the
prompt (editors add it); end the file with an empty line to keep one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import NoReturn

PROMPTS_FOLDER = "prompts"
SUFFIX = ".txt"

_VARIABLE = re.compile(r"\{\{\{\s*([A-Za-z_]\w*)\s*\}\}\}|\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_INCLUDE = re.compile(r"\{\{>\s*([\w./-]+)\s*\}\}")


class PromptError(ValueError):
    """A template cannot be loaded, or was rendered with missing or unused values."""


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template (includes resolved); ``variables`` are the placeholders it needs."""

    name: str
    text: str

    @functools.cached_property
    def variables(self) -> frozenset[str]:
        return frozenset(self._pieces[1::2])

    @functools.cached_property
    def _pieces(self) -> tuple[str, ...]:
        """The text split at its placeholders: literal text at even indices, a placeholder's name at
        odd ones. Split once, so that rendering is a join rather than a regex pass with a Python
        callback per placeholder (a third of a judge prompt's rendering time)."""
        split = _VARIABLE.split(self.text)  # literal, triple-brace name, double-brace name, literal, ...
        pieces = [split[0]]
        for at in range(1, len(split), 3):
            pieces += [split[at] or split[at + 1], split[at + 2]]
        return tuple(pieces)

    def render(self, **values: str) -> str:
        """The prompt with every placeholder replaced by its value."""
        if values.keys() != self.variables:
            self._unmatched(values)
        for name, value in values.items():
            if not isinstance(value, str):
                raise PromptError(f"prompt {self.name!r}: {name} is {type(value).__name__}, not a string")
        pieces = self._pieces
        return "".join(values[piece] if at % 2 else piece for at, piece in enumerate(pieces))

    def _unmatched(self, values: dict[str, str]) -> NoReturn:
        """Raise the error saying which placeholders ``values`` leaves out and which it adds."""
        missing = self.variables - values.keys()
        unused = values.keys() - self.variables
        raise PromptError(
            f"prompt {self.name!r}: "
            + "; ".join(
                part
                for part in (
                    f"no value for {sorted(missing)}" if missing else "",
                    f"values {sorted(unused)} are not in the template" if unused else "",
                )
                if part
            )
        )


def template(name: str, text: str) -> PromptTemplate:
    """A template from text (e.g. read from a YAML file); includes are not resolved here."""
    if _INCLUDE.search(text):
        raise PromptError(f"prompt {name!r}: includes need a template file (load_prompt)")
    return PromptTemplate(name, text)


@functools.cache
def load_prompt(package: str | None, name: str) -> PromptTemplate:
    """The template ``prompts/<name>.txt`` of ``package`` (a scorer module's ``__package__``)."""
    if not package:
        raise PromptError(f"prompt {name!r}: load it from a module inside a package")
    return PromptTemplate(f"{package}:{name}", _read(package, name, ()))


def _read(package: str, name: str, including: tuple[str, ...]) -> str:
    if name in including:
        raise PromptError(f"prompt {name!r} includes itself: {' -> '.join((*including, name))}")
    path = resources.files(package).joinpath(PROMPTS_FOLDER, *f"{name}{SUFFIX}".split("/"))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"no prompt {name!r} in {package} ({PROMPTS_FOLDER}/{name}{SUFFIX})") from None
    text = text.removesuffix("\n")
    return _INCLUDE.sub(lambda match: _read(package, match.group(1), (*including, name)), text)
