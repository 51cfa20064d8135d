"""The scoring rules of a config, checked when it loads: every rule's scorer and options, each error
at its key, so the config's loader (``ingest.configuration.config_loader``) reports them with the
model's own errors, each with its ``file:line`` -- one pass, not one round per kind of mistake.

It reads the raw settings, so a rule is checked even when another part of the config (or another key
of the same rule) is invalid; what the model reports already (a rule without a scorer, options that
are not a mapping) is left to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.config_source import Location
from tracescore.scoring.framework.build_errors import ScorerConfigError
from tracescore.scoring.prebuilt.registry import build_scorer, snake_case
from tracescore.scoring.runtime.cascades import CascadeError
from tracescore.scoring.runtime.rule_routing import build_rules


def rule_errors(data: Mapping[str, Any], config: ServiceConfig | None) -> list[tuple[Location, str]]:
    """Each rule's scorer built with its options; (key, why) for what fails. With ``config`` (the model
    validated the settings) and every scorer built, the rules together too (two rules storing under
    one id, for the same runs; a cascade's ``when.rule`` naming no rule it can wait for)."""
    scoring = data.get("scoring")
    rules = scoring.get("rules") if isinstance(scoring, Mapping) else None
    if not isinstance(scoring, Mapping) or not isinstance(rules, list):
        return []
    judge = _default_judge(scoring, config)
    errors: list[tuple[Location, str]] = []
    for index, rule in enumerate(rules):
        if isinstance(rule, Mapping):
            errors.extend(_rule_errors(("scoring", "rules", index), rule, judge))
    if not errors and config is not None:
        try:
            build_rules(config.scoring.rules, judge=config.scoring.judge)
        except CascadeError as exc:
            errors.extend((("scoring", "rules", index, "when", "rule"), why) for index, why in exc.problems)
        except ValueError as exc:
            errors.append((("scoring", "rules"), str(exc)))
    return errors


def _rule_errors(where: Location, rule: Mapping[str, Any], judge: Any) -> list[tuple[Location, str]]:
    part = "use" if isinstance(rule.get("use"), str) else "scorer"
    reference, options = rule.get(part), rule.get("options", {})
    if not isinstance(reference, str) or not isinstance(options, Mapping):
        return []  # the model says what is wrong
    given_options = (*where, "options") if "options" in rule else (*where, part)
    try:
        build_scorer(reference, options, default_judge=judge)
    except ScorerConfigError as exc:
        if exc.part == "scorer":
            return [((*where, part), why) for _, why in exc.problems]
        keys = {snake_case(key): key for key in options} | {key: key for key in options}
        return [
            ((*given_options, keys[option]) if option is not None and option in keys else given_options, why)
            for option, why in exc.problems
        ]
    except ValueError as exc:  # e.g. judge settings that are not a judge's
        return [(given_options, str(exc))]
    return []


def _default_judge(scoring: Mapping[str, Any], config: ServiceConfig | None) -> Any:
    """The judge of LLM rules that name none: the configured one, or, when the config is invalid, the
    model its judge section names (so those rules are not also reported as lacking a judge)."""
    if config is not None:
        return config.scoring.judge.judge_settings() if config.scoring.judge is not None else None
    judge = scoring.get("judge")
    if isinstance(judge, Mapping) and isinstance(judge.get("model"), str):
        return {"model": judge["model"]}
    return None
