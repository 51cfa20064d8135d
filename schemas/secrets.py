"""Secrets never leave in text: error messages, decision details and log lines are scrubbed.

A judge's API key is registered when the judge is built; ``scrub`` replaces every registered secret
and anything shaped like a credential (``sk-…`` keys, ``Bearer …`` values, Google ``AIza…`` keys,
``api_key=…`` pairs) with ``[REDACTED]``. Providers echo keys in their errors ("Incorrect API key
provided: sk-…"), so every text that came from outside passes here before it is logged or stored.
"""

from __future__ import annotations

import logging
import re
import threading

from tracescore.schemas.redaction_placeholders import REDACTED

MIN_SECRET_CHARS = 8  # shorter values would scrub ordinary words

_KEY_LIKE = re.compile(
    # A labelled value: "Bearer …", "api_key=…", "x-api-key: …", "Authorization: Bearer …".
    r"(?P<label>(?i:\bbearer\s+|\b(?:api[_-]?key|x-api-key|authorization)[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?))"
    r"[^\s\"',}]{8,}"
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"  # OpenAI, Anthropic (sk-ant-…), Stripe-style keys
    r"|\bAIza[0-9A-Za-z_\-]{20,}"  # Google API keys
)

# Every match of _KEY_LIKE holds one of these, in the text lowered (with the dotted and dotless "i"
# that its case-insensitive part also matches turned into "i"): a text without any of them is
# returned unchanged without running the regex, which costs 60 us per KiB of text (judge prompts
# are several KiB, every one of them is scrubbed), where the look costs a few.
_KEY_MARKERS = ("bearer", "api_key", "api-key", "apikey", "authorization", "sk-", "pk-", "rk-", "aiza")

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()


def register_secret(value: str | None) -> None:
    """Scrub ``value`` from every text from now on (values under 8 characters are ignored)."""
    global _secrets
    if not value or len(value) < MIN_SECRET_CHARS:
        return
    with _lock:
        if value not in _secrets:
            _secrets = tuple(sorted({*_secrets, value}, key=len, reverse=True))


def scrub(text: str) -> str:
    """``text`` without registered secrets and credential-shaped tokens."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if not _may_hold_key(text):
        return text
    return _KEY_LIKE.sub(_redact_match, text)


def _may_hold_key(text: str) -> bool:
    """False only when ``_KEY_LIKE`` cannot match ``text`` (none of ``_KEY_MARKERS`` is in it)."""
    lowered = text.lower()
    if not lowered.isascii():
        # (?i) also matches "i" to U+0130 (which lowers to "i" + U+0307) and U+0131.
        lowered = lowered.replace("i\u0307", "i").replace("\u0131", "i")
    return any(marker in lowered for marker in _KEY_MARKERS)


def _redact_match(match: re.Match[str]) -> str:
    return (match.group("label") or "") + REDACTED  # the label stays, so the message still reads


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs a record's message (and its exception text) before any handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = scrub(text)
        return True
