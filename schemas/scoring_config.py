"""The ``scoring`` section of the service config: rules, the default judge, budgets, breakers, redaction.

The rules themselves are ``schemas.rules``; ``schemas.config`` holds the whole config.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from tracescore.schemas.rules import BudgetLimits, CircuitBreakerConfig, ScorerRule

DEFAULT_SAMPLING_SALT = "tracescore"
DEFAULT_SCORER_CONCURRENCY = 8
DEFAULT_SCORER_TIMEOUT_SECONDS = 60.0
DEFAULT_RETRY_MAX_AGE_SECONDS = 3600.0
DEFAULT_MAX_RUN_CHARS = 200_000
DEFAULT_SCORERS = ("content-similarity", "textual-difference")
DEFAULT_ESTIMATED_OUTPUT_TOKENS = 200


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgeConfig(_Config):
    """The judge of the LLM scorer rules that name none: any model litellm serves.

    Its key also goes to the judges rules name themselves without a key, on the same endpoint (the
    same ``api_base``, or the same provider); with only a key (no ``model``), that is all it does.
    """

    # e.g. "openai/gpt-4o-mini"; none: every LLM rule names its own judge.
    model: str | None = Field(default=None, min_length=1)
    # An OpenAI-compatible endpoint, e.g. a local server; it needs no key (a placeholder is sent).
    api_base: str | None = None
    # The key (TRACESCORE_JUDGE_API_KEY, --judge-api-key), or a file holding it (a mounted secret: the
    # config's loader reads it into api_key); neither: the provider's own variable (OPENAI_API_KEY, ...).
    # Never logged, stored or shown in a repr.
    api_key: SecretStr | None = None
    api_key_file: str | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0)

    @model_validator(mode="after")
    def _one_key_source(self) -> JudgeConfig:
        if self.api_key is not None and self.api_key_file:
            raise ValueError("give scoring.judge.api_key or scoring.judge.api_key_file, not both")
        return self

    def judge_settings(self) -> dict[str, Any]:
        """The settings of ``scoring.Judge`` this config gives (the key revealed for the client only)."""
        settings: dict[str, Any] = {
            "model": self.model,
            "api_base": self.api_base,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
        }
        if self.api_key is not None:
            settings["api_key"] = self.api_key.get_secret_value()
        return {key: value for key, value in settings.items() if value is not None}


class RedactConfig(_Config):
    """What is replaced by ``[REDACTED]`` in every text sent to a judge (the stored spans keep it)."""

    emails: bool = False
    api_keys: bool = True  # sk-..., Bearer ..., api_key=..., AIza... and the configured secrets
    patterns: list[str] = Field(default_factory=list)  # regular expressions of your own

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} does not compile: {exc}") from exc
        return patterns

    @property
    def active(self) -> bool:
        return self.emails or self.api_keys or bool(self.patterns)


class ScoringConfig(_Config):
    rules: list[ScorerRule] = Field(default_factory=lambda: [ScorerRule(scorer=s) for s in DEFAULT_SCORERS])
    judge: JudgeConfig | None = None
    concurrency: int = Field(default=DEFAULT_SCORER_CONCURRENCY, gt=0)
    timeout_seconds: float = Field(default=DEFAULT_SCORER_TIMEOUT_SECONDS, gt=0)
    sampling_salt: str = DEFAULT_SAMPLING_SALT
    # A run whose judge is unavailable (429, 5xx, timeouts after the per-call retries) is tried again
    # with backoff for this long after its first failure, then failed; 0 fails it at once.
    retry_max_age_seconds: float = Field(default=DEFAULT_RETRY_MAX_AGE_SECONDS, ge=0)
    # A run with more text than this (messages and context, in characters) is not scored (decision
    # skipped_too_large): no scorer's CPU time or judge bill grows without bound with one request.
    max_run_chars: int = Field(default=DEFAULT_MAX_RUN_CHARS, gt=0)
    # Judge spend of all rules together (each rule may have a budget of its own too).
    budget: BudgetLimits | None = None
    # Every judge model's circuit breaker, unless a rule gives its model's own.
    circuit_breaker: CircuitBreakerConfig = Field(default_factory=CircuitBreakerConfig)
    redact: RedactConfig = Field(default_factory=RedactConfig)
    # Keep what each LLM judge was sent (after redaction) and answered with the decision of its scorer
    # run (the judge_io table; ``tracescore runs`` and ``GET /api/runs`` show it). Off by default:
    # prompts hold the runs' text.
    record_judge_io: bool = False
    # Output tokens assumed for a judge call when its cost is estimated before the call (budgets,
    # backfill --dry-run); the provider's usage settles the real cost after it.
    estimated_output_tokens: int = Field(default=DEFAULT_ESTIMATED_OUTPUT_TOKENS, ge=0)
