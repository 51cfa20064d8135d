"""A scorer's version, derived: ``<code>+<config>`` (``1+3fa9c2d1``), so that an edit of a judge
prompt, an option or the judge model changes the version without anyone bumping it, and a tracescore
upgrade that leaves a scorer's behaviour alone leaves its version alone (and drift's baselines with it).

- ``<code>`` is the scorer's declared version: a prebuilt scorer's ``ScorerSpec.version``, a team's
  own scorer's ``create_scorer(version=...)``. A team's scorer that declares none gets
  ``src-<hash>``, the first 8 hex digits of the SHA-256 of its factory's module source: an edit of
  that module changes it (a helper in another module does not: declare a version for that).
- ``<config>`` is the first 8 hex digits of the SHA-256 of what configures the built scorer: every
  option of its factory (with the defaults of those left out, so spelling out a default changes
  nothing), the text of its judge prompt templates and instructions, each prompt step's description
  and answer schema, and its judges' models and temperatures. Keys, endpoints, timeouts and retries
  are left out: they change where and how a judge is reached, not what it says.

It is computed once per rule, when the rules are built, and is the same in every process (no
per-process randomness: no ids, no addresses of objects).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import inspect
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from tracescore.schemas.rules import ScorerRule
from tracescore.scoring.framework.prompt_step import PromptStep
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.registry import ScorerFactory, resolve_factory, snake_case

HASH_CHARS = 8
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def scorer_version(
    rule: ScorerRule, scorer: Scorer, registry: Mapping[str, ScorerFactory] | None = None
) -> str:
    """The version of ``scorer``, built from ``rule`` (see the module docstring)."""
    _, factory = resolve_factory(rule.reference, registry)
    code = scorer.version or f"src-{source_hash(factory)}"
    return f"{code}+{_digest(configuration(factory, rule.options, scorer))}"


def source_hash(factory: ScorerFactory) -> str:
    """The hash of the source of the module that defines ``factory`` (of its qualified name when the
    source cannot be read, e.g. a factory defined in an interactive session)."""
    module = sys.modules.get(factory.__module__)
    try:
        text = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        text = ""
    return _digest(text or f"{factory.__module__}:{factory.__qualname__}")


def configuration(factory: ScorerFactory, options: Mapping[str, Any], scorer: Scorer) -> dict[str, Any]:
    """What the config part of the version is the hash of."""
    return {
        "options": factory_arguments(factory, options),
        "scale": scorer.scale,
        "needs": sorted(scorer.needs),
        "judge": _judge(scorer.judge),
        "steps": [_step(step) for step in scorer.steps],
        "prompts": list(scorer.prompts),
    }


def factory_arguments(factory: ScorerFactory, options: Mapping[str, Any]) -> dict[str, Any]:
    """Every argument of ``factory`` but the judge (its model is in the steps): the options given,
    in snake_case, and the defaults of those left out."""
    given = {snake_case(key): value for key, value in options.items() if snake_case(key) != "judge"}
    try:
        bound = inspect.signature(factory).bind_partial(**given)
    except (TypeError, ValueError):  # no signature to read: the options as given
        return given
    bound.apply_defaults()
    return {key: value for key, value in bound.arguments.items() if key != "judge"}


def _step(step: object) -> dict[str, Any]:
    """A step as far as it configures the scorer (a function step's code is in the code part)."""
    if not isinstance(step, PromptStep):
        return {"name": getattr(step, "name", type(step).__name__)}
    schema = step.definition.output_schema
    return {
        "name": step.name,
        "description": step.definition.description,
        "schema": schema.model_json_schema() if schema is not None else None,
        "judge": _judge(step.judge),
    }


def _judge(judge: Judge | None) -> dict[str, Any] | None:
    """What of a judge changes its answers: its model, instructions and temperature."""
    if judge is None:
        return None
    return {"model": judge.model, "instructions": judge.instructions, "temperature": judge.temperature}


def _stable(value: object) -> Any:
    """``value`` as JSON that is the same in every process (``json.dumps``' default)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, type):
        if issubclass(value, BaseModel):
            return value.model_json_schema()
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, Judge):
        return _judge(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return sorted(json.dumps(item, sort_keys=True, default=_stable) for item in value)
    if dataclasses.is_dataclass(value):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return _ADDRESS.sub("", repr(value))


def _numbers_alike(value: object) -> object:
    """``value`` with a whole float as its int: an option of 1 and the factory's default of 1.0 are
    the same option (the factory's own validation makes the one the other)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _numbers_alike(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_alike(item) for item in value]
    return value


def _digest(value: object) -> str:
    """The first ``HASH_CHARS`` hex digits of the SHA-256 of ``value`` as canonical JSON."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(_numbers_alike(value), sort_keys=True, default=_stable)
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]
