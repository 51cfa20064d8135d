"""Redaction of what a judge is sent: e-mail addresses, credential-shaped tokens, your own patterns.

Applied to every text a judge call carries (prompts, texts to embed or moderate) after the scorer
built it, so no scorer can forget it; the stored spans and the runs keep their content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracescore.schemas.redaction_placeholders import REDACTED
from tracescore.schemas.scoring_config import RedactConfig
from tracescore.schemas.secrets import scrub

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")


@dataclass(frozen=True)
class Redactor:
    emails: bool = False
    api_keys: bool = True
    patterns: tuple[str, ...] = ()

    @classmethod
    def configured(cls, config: RedactConfig) -> Redactor | None:
        """The redactor ``scoring.redact`` asks for (None: it redacts nothing)."""
        if not config.active:
            return None
        return cls(config.emails, config.api_keys, tuple(config.patterns))

    def __call__(self, text: str) -> str:
        if self.api_keys:
            text = scrub(text)  # registered secrets and sk-..., Bearer ..., api_key=..., AIza...
        if self.emails:
            text = _EMAIL.sub(REDACTED, text)
        for pattern in self.patterns:
            text = re.sub(pattern, REDACTED, text)
        return text
