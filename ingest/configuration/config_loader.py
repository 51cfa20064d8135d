"""The loader of the service config: the one place that reads the config file, the ``TRACESCORE_*``
variables and the flags, and the files the config names for the judge's key.

Precedence, highest first: command-line flags, environment variables, the config file (YAML or JSON),
then the models' defaults (``schemas.config``). Every error names its source: the flag, the variable,
or the file and line of the bad value (``schemas.config_source``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import SecretStr, ValidationError

from tracescore.ingest.configuration.service_secrets import read_secret_file
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.config_source import ConfigError, ConfigFile, Location, Sources, explain
from tracescore.schemas.environment import ENV_KEYS

# A check of the whole config beyond the model's: (raw settings, the config if the model validated
# them) -> (key, why) for each error.
ConfigCheck = Callable[[Mapping[str, Any], ServiceConfig | None], list[tuple[Location, str]]]

JUDGE_KEY_FILE: Location = ("scoring", "judge", "api_key_file")


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    flags: dict[str, str] | None = None,
    checks: ConfigCheck | None = None,
) -> ServiceConfig:
    """Build the service config from file, environment and flag overrides (dotted keys).

    ``flags`` names the command-line flag of each override (``{"receiver.grpc_port": "--grpc-port"}``),
    so an invalid value is reported as coming from it. ``checks`` finds what the model cannot (the
    service's: each rule's scorer and options, ``scoring.runtime.rule_check``); it runs whether the model
    validated or not, and its errors are reported with the model's, each at its key's source. The
    judge's key is read from ``scoring.judge.api_key_file`` here, into ``scoring.judge.api_key``.
    """
    env = os.environ if environ is None else environ
    sources = Sources()
    path = path or env.get("TRACESCORE_CONFIG") or None
    if path:
        sources.file = read_config_file(path)
    data: dict[str, Any] = sources.file.data if sources.file else {}
    for var, dotted in ENV_KEYS.items():
        if env.get(var):
            _set_dotted(data, dotted, env[var])
            sources.given[dotted] = f"environment variable {var}"
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, dotted, value)
            sources.given[dotted] = f"flag {(flags or {}).get(dotted, dotted)}"
    config: ServiceConfig | None = None
    invalid: ValidationError | None = None
    try:
        config = ServiceConfig.model_validate(data)
    except ValidationError as exc:
        invalid = exc
    judge_key, more = _read_judge_key(data)
    more += checks(data, config) if checks is not None else []
    if invalid is not None or more:
        raise ConfigError(explain(invalid, ServiceConfig, data, sources, more)) from None
    assert config is not None
    if judge_key is not None and config.scoring.judge is not None:
        config.scoring.judge.api_key = judge_key
    return config


def read_config_file(path: str | os.PathLike[str]) -> ConfigFile:
    """Parse a YAML or JSON (``.json``) config file; a syntax error names the file, line and column."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"config file {name}: cannot read it ({reason})") from None
    try:
        data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"config file {name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        position = _yaml_position(exc)
        raise ConfigError(f"config file {name}{position}: invalid YAML: {_yaml_problem(exc)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {name}: must hold a mapping of settings at the top level, "
            f"not a {type(data).__name__}"
        )
    try:  # JSON is YAML too: the same node tree gives every key's line
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        root = None
    return ConfigFile(name, data, root)


def _yaml_position(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if not problem:
        return str(exc).splitlines()[0]
    return f"{problem} ({context})" if context else str(problem)


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[leaf] = value


def _read_judge_key(data: Mapping[str, Any]) -> tuple[SecretStr | None, list[tuple[Location, str]]]:
    """The key in the file the settings name at ``scoring.judge.api_key_file`` (None without one), and
    the error at that key when the file cannot be read or is empty. Read from the raw settings, so its
    error is told with the model's even when other keys are invalid."""
    scoring = data.get("scoring")
    judge = scoring.get("judge") if isinstance(scoring, Mapping) else None
    key_file = judge.get("api_key_file") if isinstance(judge, Mapping) else None
    if not isinstance(key_file, str) or not key_file:
        return None, []
    try:
        return SecretStr(read_secret_file(key_file)), []
    except ValueError as exc:
        return None, [(JUDGE_KEY_FILE, str(exc))]
