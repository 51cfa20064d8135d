"""Scorers by name: what a rule or the CLI names (``textual-difference``) -> a built ``Scorer``.

A prebuilt scorer declares itself once, beside its factory::

    TEXTUAL_DIFFERENCE = ScorerSpec(
        name="textual-difference",          # what rules, the CLI, the store and filters call it
        title="Textual Difference Scorer",
        former_id="textual-difference-scorer",  # what the store called it before (Mastra's id)
        description="Calculate textual difference between input and output ...",
    )

    @register(TEXTUAL_DIFFERENCE)
    def create_textual_difference_scorer() -> Scorer:
        return TEXTUAL_DIFFERENCE.create_scorer().preprocess(...).generate_score(...)

The registry is derived from those declarations, lazily: the first lookup imports the modules of
``scoring.prebuilt``, so ``from tracescore.scoring import create_scorer`` stays light. A team's own scorer is
named ``"package.module:factory"``; its options are validated the same way as a built-in's.

One name per scorer: the name a rule gives is the scorer's id, the ``scorer_id`` of its rows and what
``tracescore scores --scorer`` and ``/api/scores?scorer=`` take. Earlier releases stored the prebuilt
scorers under Mastra's and autoevals' ids (``content-similarity-scorer``, ``exactMatch``): each spec
keeps that ``former_id``, which rules still accept and reads still match (``stored_ids``,
``canonical_id``), so stored rows and dashboards go on working.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pydantic import ValidationError, validate_call

from tracescore.schemas.suggest import did_you_mean
from tracescore.scoring.framework.build_errors import Problem, ScorerConfigError, option_problems
from tracescore.scoring.framework.scorer import LabelFn, Scorer, create_scorer
from tracescore.scoring.framework.steps import DEFAULT_NEEDS, Need
from tracescore.scoring.judge import Judge

ScorerFactory = Callable[..., Scorer]
F = TypeVar("F", bound=ScorerFactory)

PREBUILT_PACKAGE = "tracescore.scoring.prebuilt"


@dataclass(frozen=True)
class ScorerSpec:
    """What a prebuilt scorer is called and says about itself, declared once beside its factory."""

    name: str  # what rules, the CLI, the store and filters call it
    title: str  # the human-readable name
    description: str
    # Options that build a working scorer when some are required (``tracescore scorers`` shows them).
    example: dict[str, Any] = field(default_factory=dict, hash=False)
    # The id earlier releases stored its rows under (Mastra's, autoevals' or VoltAgent's), when not the
    # name: still accepted by rules and matched by reads.
    former_id: str | None = None
    # The version of its code: bump it when a change of the factory's code changes its scores (its
    # prompts, options and judge model are in its derived version anyway: ``scorer_version``).
    version: str = "1"

    @property
    def id(self) -> str:
        """The scorer id written to the store: the name."""
        return self.name

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the scorer answers to: its name, and its former id if it had one."""
        return (self.name, self.former_id) if self.former_id else (self.name,)

    def create_scorer(
        self,
        *,
        description: str | None = None,
        needs: frozenset[Need] | set[Need] | tuple[Need, ...] = DEFAULT_NEEDS,
        judge: Judge | None = None,
        scale: float = 1.0,
        label: LabelFn | None = None,
    ) -> Scorer:
        """``create_scorer`` with this spec's id, title and description (``description`` may say more)."""
        return create_scorer(
            id=self.id,
            name=self.title,
            description=description or self.description,
            needs=needs,
            judge=judge,
            scale=scale,
            label=label,
            version=self.version,
        )


@dataclass(frozen=True)
class Registered:
    spec: ScorerSpec
    factory: ScorerFactory


_DECLARED: dict[str, Registered] = {}


def register(spec: ScorerSpec) -> Callable[[F], F]:
    """Register ``factory`` under ``spec`` (a decorator); the factory's keyword parameters are its options."""

    def decorator(factory: F) -> F:
        for other in _DECLARED.values():
            # An equal spec is the same module imported again; another one may not take its names.
            if other.spec != spec and set(spec.names) & set(other.spec.names):
                raise ValueError(f"scorer {spec.name!r} {spec.names} clashes with {other.spec.name!r}")
        _DECLARED[spec.name] = Registered(spec, factory)
        return factory

    return decorator


@functools.cache
def _load_prebuilt() -> None:
    """Import every module of ``scoring.prebuilt`` once, so their ``register`` calls have run."""
    package = importlib.import_module(PREBUILT_PACKAGE)
    for module in pkgutil.walk_packages(package.__path__, prefix=f"{PREBUILT_PACKAGE}."):
        importlib.import_module(module.name)


def registered() -> dict[str, Registered]:
    """Every prebuilt scorer by short name, in registration order (imports them on first use)."""
    _load_prebuilt()
    return dict(_DECLARED)


class _Factories(Mapping[str, ScorerFactory]):
    """Short name -> factory of every prebuilt scorer, loaded on first use."""

    def __getitem__(self, name: str) -> ScorerFactory:
        return registered()[name].factory

    def __iter__(self) -> Iterator[str]:
        return iter(registered())

    def __len__(self) -> int:
        return len(registered())


SCORERS: Mapping[str, ScorerFactory] = _Factories()


def former_ids() -> dict[str, str]:
    """Former id -> name, for the prebuilt scorers stored under another id by earlier releases."""
    return {entry.spec.former_id: name for name, entry in registered().items() if entry.spec.former_id}


def canonical_id(stored: str) -> str:
    """The scorer id a stored one means today: a former id's name, any other id unchanged."""
    return former_ids().get(stored, stored)


def read_as(stored: str, renamed: Mapping[str, str]) -> tuple[str, ...]:
    """The ids a stored row counts under when a run's earlier outcomes are read back: its own, and
    the name of today of a former id (``renamed``: ``former_ids()``), so a rule decided before the
    rename is not decided twice."""
    now = renamed.get(stored)
    return (stored,) if now is None else (stored, now)


def stored_ids(scorer: str) -> list[str]:
    """Every scorer id rows of ``scorer`` (a name or a former id) may be stored under: the name
    first, then its former id (``content-similarity`` -> ``content-similarity``,
    ``content-similarity-scorer``); an id of no prebuilt scorer (a rule's own name) alone."""
    name = canonical_id(scorer)
    entry = registered().get(name)
    return list(entry.spec.names) if entry is not None else [scorer]


def find_factory(function_name: str) -> ScorerFactory | None:
    """The prebuilt factory whose function is called ``function_name`` (``scoring.prebuilt``'s names)."""
    for entry in registered().values():
        if entry.factory.__name__ == function_name:
            return entry.factory
    return None


_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(option: str) -> str:
    """``expectedToolOrder`` -> ``expected_tool_order``; snake_case names pass unchanged."""
    return _CAMEL_HUMP.sub("_", option).lower()


def as_judge(
    spec: Judge | str | Mapping[str, Any], default: Judge | str | Mapping[str, Any] | None = None
) -> Judge:
    """The ``judge`` option of an LLM scorer: a Judge, a model string, or a dict of Judge fields
    (``{"model": ..., "api_base": ...}``, camelCase accepted).

    A string or dict without a key of its own takes ``default``'s (the configured judge's) when both
    talk to the same endpoint: the same ``api_base``, or neither has one and the models are of the
    same provider (or ``default`` names no model)."""
    if isinstance(spec, Judge):
        return spec
    if isinstance(spec, str):
        return _with_default_key(Judge(spec), default)
    if isinstance(spec, Mapping):
        try:
            judge = Judge(**{snake_case(key): value for key, value in spec.items()})
        except TypeError as exc:  # an unknown or missing Judge field
            raise ValueError(f"invalid judge fields {sorted(spec)}: {exc}") from exc
        return _with_default_key(judge, default)
    raise ValueError(f"judge must be a Judge, a model string or a dict, not {type(spec).__name__}")


def _with_default_key(judge: Judge, default: Judge | str | Mapping[str, Any] | None) -> Judge:
    if default is None or judge.api_key is not None:
        return judge
    settings = _judge_settings(default)
    key, api_base, model = settings.get("api_key"), settings.get("api_base"), settings.get("model")
    if not key or judge.api_base != api_base:
        return judge
    if api_base is None and model:
        from tracescore.scoring.judge.api_keys import provider_of

        if provider_of(judge.model) != provider_of(str(model)):
            return judge  # another provider's key would be refused (and shadow its own variable)
    return replace(judge, api_key=str(key))


def _judge_settings(spec: Judge | str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(spec, Judge):
        return {"model": spec.model, "api_base": spec.api_base, "api_key": spec.api_key}
    if isinstance(spec, str):
        return {"model": spec}
    return {snake_case(key): value for key, value in spec.items()}


def load_factory(reference: str) -> ScorerFactory:
    """The factory a ``"package.module:factory"`` reference names (a team's own scorer)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute or not re.fullmatch(r"[\w.]+", module_name + attribute):
        raise ValueError(f"scorer reference {reference!r} must look like 'package.module:factory'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"scorer {reference!r}: cannot import {module_name!r}: {exc}") from exc
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ValueError(f"scorer {reference!r}: {module_name!r} has no {attribute!r}")
    if not callable(target):
        raise ValueError(f"scorer {reference!r} is not a function returning a Scorer")
    factory: ScorerFactory = target
    return factory


def resolve_factory(
    name_or_id: str, registry: Mapping[str, ScorerFactory] | None = None
) -> tuple[str, ScorerFactory]:
    """The short name and factory of a rule's ``scorer``: a short name, a scorer id, or module:factory."""
    if registry is not None:  # an embedding application's or a test's own table, by its keys only
        if name_or_id in registry:
            return name_or_id, registry[name_or_id]
        if ":" not in name_or_id:
            raise ScorerConfigError(
                f"unknown scorer {name_or_id!r}; available: {', '.join(registry)}", "scorer"
            )
    elif ":" not in name_or_id:
        entries = registered()
        for entry in entries.values():
            if name_or_id in entry.spec.names:
                return entry.spec.name, entry.factory
        names = [name for e in entries.values() for name in e.spec.names]
        raise ScorerConfigError(
            f"unknown scorer {name_or_id!r}{did_you_mean(name_or_id, names)} "
            f"('tracescore scorers' lists all {len(entries)})",
            "scorer",
        )
    try:
        return name_or_id, load_factory(name_or_id)
    except ValueError as exc:
        raise ScorerConfigError(str(exc), "scorer") from exc


def _invalid_values(short: str, factory: ScorerFactory, known: dict[str, Any]) -> list[Problem]:
    """The errors of the values of ``known`` options, the options left out not counted."""
    try:
        validate_call(factory)(**{k: v for k, v in known.items() if k != "judge"})
    except ValidationError as exc:
        invalid = f"scorer {short!r}: invalid options: "
        return [(option, invalid + why) for option, why in option_problems(exc, missing=False)]
    except (ValueError, TypeError):  # the factory's own checks need the options left out
        pass
    return []


def build_scorer(
    name_or_id: str,
    options: Mapping[str, Any] | None = None,
    *,
    registry: Mapping[str, ScorerFactory] | None = None,
    default_judge: Judge | str | Mapping[str, Any] | None = None,
) -> Scorer:
    """Build a scorer from its short name, its id, or ``"package.module:factory"``, with options in
    snake_case or Mastra camelCase.

    ``registry`` replaces the prebuilt scorers (looked up by its keys only), e.g. for an embedding
    application's own table or a test's. ``default_judge`` is the judge of an LLM scorer whose
    options name none (the service's ``scoring.judge``); its key also goes to a judge the options
    name without one (``as_judge``). A dict without a ``model`` gives only that key.

    Raises ``ScorerConfigError`` (a ValueError) naming every unknown option at once.
    """
    short, factory = resolve_factory(name_or_id, registry)
    parameters = inspect.signature(factory).parameters
    accepted = list(parameters)
    kwargs: dict[str, Any] = {}
    wrong: list[Problem] = []
    for option, value in (options or {}).items():
        key = snake_case(option)
        if key not in accepted:
            choices = ", ".join(accepted) or "none"
            guess = did_you_mean(key, accepted)
            wrong.append(
                (option, f"scorer {short!r} has no option {option!r}{guess} (its options: {choices})")
            )
        elif key in kwargs:
            wrong.append((option, f"scorer {short!r}: option {key!r} is given twice"))
        kwargs[key] = value
    if wrong:  # and the known options' own errors, so that one look finds them all
        wrong += _invalid_values(short, factory, {k: v for k, v in kwargs.items() if k in accepted})
        raise ScorerConfigError("; ".join(why for _, why in wrong), "options", wrong)
    has_default = default_judge is not None and bool(_judge_settings(default_judge).get("model"))
    if "judge" in accepted and "judge" not in kwargs:
        if not has_default and parameters["judge"].default is inspect.Parameter.empty:
            raise ScorerConfigError(
                f"scorer {short!r} asks an LLM judge: give it the option 'judge' (a model such as "
                "'openai/gpt-4o-mini', or a dict of judge settings), or configure scoring.judge.model",
                "options",
            )
        if has_default:
            kwargs["judge"] = default_judge
    try:
        if "judge" in kwargs:
            kwargs["judge"] = as_judge(kwargs["judge"], default_judge)
        scorer = validate_call(factory)(**kwargs)
    except ValidationError as exc:
        invalid, found = f"scorer {short!r}: invalid options: ", option_problems(exc)
        message = invalid + "; ".join(why for _, why in found)
        problems = [(option, invalid + why) for option, why in found]
        raise ScorerConfigError(message, "options", problems) from None
    except ValueError as exc:  # the factory's own check, e.g. a required option missing
        raise ScorerConfigError(f"scorer {short!r}: {exc}", "options") from exc
    if not isinstance(scorer, Scorer):
        raise ScorerConfigError(
            f"scorer {short!r}: the factory returned {type(scorer).__name__}, not a Scorer", "scorer"
        )
    return scorer
