"""What stands in for content taken out: the placeholders tracescore's redactors write and the ones
instrumentations and collectors write, in one set.

Every redactor of tracescore writes one of them, and content that is only a placeholder reads as no
content wherever spans are read (the convention adapters), so a redacted run is scored as one without
content, never as a run whose answer is the word "REDACTED".
"""

from __future__ import annotations

# A secret, an e-mail address or a pattern of ``scoring.redact`` (schemas.secrets, scoring.judge.redact);
# Mastra's SensitiveDataFilter writes it too.
REDACTED = "[REDACTED]"
# An error text kept from a caller without the bearer token (ingest.receivers.disclosure).
HIDDEN = "[hidden: send the bearer token to see it]"
# A filesystem path taken out of an error text (ingest.receivers.disclosure).
PATH = "[path]"
# A forged transcript marker in a multi-turn judge prompt (Mastra's ``sanitizeTurnText``).
FENCE_REDACTED = "[redacted]"
# What instrumentations and collectors write in place of content: OpenInference's TraceConfig and
# OpenLLMetry write "__REDACTED__"; other redactors the angle-bracket forms.
INSTRUMENTATION_PLACEHOLDERS = ("__REDACTED__", "<REDACTED>", "<redacted>")

PLACEHOLDERS = frozenset({REDACTED, HIDDEN, PATH, FENCE_REDACTED, *INSTRUMENTATION_PLACEHOLDERS})


def is_placeholder(value: object) -> bool:
    """Whether ``value`` is a placeholder alone (whitespace around it aside): content taken out."""
    return isinstance(value, str) and value.strip() in PLACEHOLDERS
