"""The service's startup summary: one log record saying what runs and where, read by whoever starts it.

tracescore 0.1.0 serving (replica web-1)
  OTLP/gRPC  127.0.0.1:4317
  OTLP/HTTP  127.0.0.1:4318 (also /api/scores, /healthz, /metrics)
  store      chdb:///srv/tracescore-data, database default (embedded: one process at a time)
  kafka      off (no kafka.bootstrap)
  judge      openai/gpt-4o-mini
  rules      2: textual-difference (every run, version 1+da317f57), toxicity (10% of runs, judge
             openai/gpt-4o-mini, version 1+c6b731b1)
  drift      every 5m, 1 webhook
  export     off
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.rules import ScorerRule
from tracescore.schemas.version import __version__


def startup_summary(
    config: ServiceConfig,
    *,
    grpc_port: int,
    http_port: int,
    store: str,
    replica: str,
    health_port: int | None = None,
    versions: Mapping[str, str] | None = None,
) -> str:
    """The summary; ``versions``: each rule's derived scorer version by its label (``rule_versions``)."""
    receiver = config.receiver
    tls = " (TLS)" if receiver.tls else ""
    auth = ", bearer token required" if (receiver.auth_token or receiver.auth_token_file) else ""
    embedded = urlsplit(config.store.strip()).scheme.lower() not in ("http", "https")
    rows = [
        ("OTLP/gRPC", f"{receiver.host}:{grpc_port}{tls}{auth}"),
        ("OTLP/HTTP", f"{receiver.host}:{http_port}{tls}{auth} (also /api/scores, /healthz, /metrics)"),
        *([("health", f"{receiver.host}:{health_port} (/healthz, /readyz)")] if health_port else []),
        (
            "store",
            f"{store}, database {config.database}{' (embedded: one process at a time)' if embedded else ''}",
        ),
        ("kafka", _kafka(config)),
        ("judge", _judge(config)),
        ("rules", _rules(config, versions or {})),
        ("drift", _drift(config)),
        ("export", _export(config)),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"tracescore {__version__} serving (replica {replica})"]
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    return "\n".join(lines)


def _kafka(config: ServiceConfig) -> str:
    kafka = config.kafka
    if not kafka.bootstrap:
        return "off (no kafka.bootstrap)"
    topics = ", ".join(t for t in (kafka.topic, kafka.logs_topic) if t) or "no topic"
    return f"{topics} from {kafka.bootstrap}, group {kafka.group}"


def _judge(config: ServiceConfig) -> str:
    judge = config.scoring.judge
    if judge is None:
        return "none configured (LLM rules must name their own: options.judge)"
    where = f" at {judge.api_base}" if judge.api_base else ""
    key = ", key set" if (judge.api_key or judge.api_key_file) else ""
    model = judge.model or "no model (LLM rules name their own judge, which takes this key)"
    return f"{model}{where}{key}"


def _rules(config: ServiceConfig, versions: Mapping[str, str]) -> str:
    rules = config.scoring.rules
    if not rules:
        return "none: runs are stored, not scored"
    return f"{len(rules)}: " + ", ".join(_rule(rule, versions.get(rule.label)) for rule in rules)


def _rule(rule: ScorerRule, version: str | None) -> str:
    scorer = rule.scorer or rule.use or "?"
    name = rule.name or scorer
    parts = [] if scorer == name else [scorer]
    unit = "session" if rule.target == "session" else "run"
    if rule.sample_rate >= 1:
        parts.append(f"every {unit}")
    else:
        parts.append(
            f"{rule.sample_rate:.2%} of {unit}s"
            if rule.sample_rate < 0.01
            else f"{rule.sample_rate:.0%} of {unit}s"
        )
    judge = rule.options.get("judge")
    model = judge if isinstance(judge, str) else judge.get("model") if isinstance(judge, dict) else None
    if model:
        parts.append(f"judge {model}")
    if version:
        parts.append(f"version {version}")
    return f"{name} ({', '.join(parts)})"


def _drift(config: ServiceConfig) -> str:
    drift = config.drift
    if not drift.enabled:
        return "off"
    hooks = len(drift.webhooks)
    return f"every {_duration(drift.interval)}, {hooks} webhook{'' if hooks == 1 else 's'}"


def _export(config: ServiceConfig) -> str:
    otlp = config.export.otlp
    return f"OTLP evaluation events to {otlp.endpoint}" if otlp.endpoint else "off"


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
