"""Where each config value came from, so an error names it: a flag, an environment variable, or a line
of the config file.

    invalid configuration (3 errors):
      tracescore.yaml:7: scoring.rules[0] (tone): samplerate: unknown key; did you mean 'sample_rate'?
      environment variable TRACESCORE_GRPC_PORT: receiver.grpc_port: Input should be a valid integer (got 'x')
      flag --memory-limit: memory_limit: Input should be greater than or equal to 268435456 (got '1MB')
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tracescore.schemas.suggest import did_you_mean

Location = tuple[str | int, ...]

# Values of keys named like these are never repeated in an error message.
_SECRET_WORDS = ("password", "key", "token", "secret", "headers")


class ConfigError(ValueError):
    """The configuration is invalid; the message names each wrong key, its source, and why."""


@dataclass
class ConfigFile:
    """A config file's mapping and the line of each key in it (1-based), from its YAML node tree
    (``root``; JSON is YAML too). The config loader reads and parses the file."""

    path: str
    data: dict[str, Any]
    root: yaml.Node | None = None

    def line(self, location: Location) -> int | None:
        """The line of the deepest part of ``location`` the file holds."""
        node, found = self.root, None
        for part in location:
            if isinstance(node, yaml.MappingNode):
                match = next((pair for pair in node.value if getattr(pair[0], "value", None) == part), None)
                if match is None:
                    break
                found, node = match[0].start_mark.line + 1, match[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                found = node.start_mark.line + 1
            else:
                break
        return found


@dataclass
class Sources:
    """Dotted key -> where its value came from (flags and environment variables; the rest is the file)."""

    file: ConfigFile | None = None
    given: dict[str, str] = field(default_factory=dict)

    def describe(self, location: Location) -> str:
        given = self._given(location)
        if given is not None:
            return given
        if self.file is None:
            return ""
        line = self.file.line(location)
        return f"{self.file.path}:{line}" if line else self.file.path

    def order(self, location: Location) -> int:
        """Where an error at ``location`` is listed: flags and variables first, then by file line."""
        if self._given(location) is not None or self.file is None:
            return 0
        return self.file.line(location) or 0

    def _given(self, location: Location) -> str | None:
        dotted = ".".join(str(part) for part in location)
        for key, source in self.given.items():
            if dotted == key or dotted.startswith(key + "."):
                return source
        return None


def explain(
    exc: ValidationError | None,
    model: type[BaseModel],
    data: Mapping[str, Any],
    sources: Sources,
    more: Sequence[tuple[Location, str]] = (),
) -> str:
    """One line per error, ordered as the settings are (flags and variables, then the file's lines):
    its source, the dotted key (a rule by index and name), why, and for an unknown key the closest
    known one. ``more``: errors found by other checks than the model's (a rule's unknown scorer or
    options), each at its key."""
    found: list[tuple[Location, str]] = []
    for error in exc.errors() if exc is not None else ():
        location: Location = tuple(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden" and location:
            known = _fields_at(model, location[:-1])
            message = f"unknown key{did_you_mean(str(location[-1]), known)}"
        elif (
            error["type"] != "missing"
            and _shows_input(location, error.get("input"))
            and repr(error.get("input")) not in message
        ):
            message = f"{message} (got {error['input']!r})"
        found.append((location, message))
    lines = []
    for location, message in [*found, *more]:
        source = sources.describe(location)
        key = _key(location, data)
        lines.append(
            (sources.order(location), f"{source}: {key}: {message}" if source else f"{key}: {message}")
        )
    lines.sort(key=lambda numbered: numbered[0])  # stable: a line's errors keep their order
    count = f"{len(lines)} errors" if len(lines) > 1 else "1 error"
    return f"invalid configuration ({count}):\n  " + "\n  ".join(text for _, text in lines)


def _key(location: Location, data: Mapping[str, Any]) -> str:
    """``scoring.rules[1] (tone): sample_rate``: a rule named by its index and its name or scorer."""
    parts = list(location)
    prefix = ""
    if parts[:2] == ["scoring", "rules"] and len(parts) > 2 and isinstance(parts[2], int):
        index = parts[2]
        rules = (data.get("scoring") or {}).get("rules") or []
        rule = rules[index] if index < len(rules) and isinstance(rules[index], dict) else {}
        label = rule.get("name") or rule.get("scorer") or rule.get("use")
        prefix = f"scoring.rules[{index}]" + (f" ({label})" if label else "")
        parts = parts[3:]
    key = ".".join(str(part) for part in parts)
    if prefix:
        return f"{prefix}: {key}" if key else prefix
    return key or "config"


def _shows_input(location: Location, value: object) -> bool:
    secret = any(word in str(part).lower() for part in location for word in _SECRET_WORDS)
    return not secret and isinstance(value, str | int | float | bool) and len(repr(value)) <= 80


def _fields_at(model: type[BaseModel], location: Location) -> list[str]:
    """The keys the model accepts at ``location`` (``("scoring", "rules", 0)`` -> a rule's keys)."""
    current: Any = model
    for part in location:
        current = _model_in(current)
        if current is None:
            return []
        if isinstance(part, int):
            continue  # a list item: the list's own type was unwrapped already
        found = current.model_fields.get(part)
        if found is None:
            return []
        current = found.annotation
    current = _model_in(current)
    if current is None:
        return []
    return [info.alias or name for name, info in current.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds: itself, or in ``X | None``, ``list[X]``, ``dict[str, X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, Sequence, dict, Mapping, typing.Annotated):
        for argument in typing.get_args(annotation):
            found = _model_in(argument)
            if found is not None:
                return found
    return None
