"""One set of redaction placeholders: what each of tracescore's redactors writes is one, and every
convention adapter reads a placeholder as no content."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tracescore.ingest.receivers.disclosure import public_health, without_paths
from tracescore.ingest.transform import jsonvalue
from tracescore.ingest.transform.adapters import (
    openllmetry_messages,
    pydantic_ai_messages,
)
from tracescore.schemas.redaction_placeholders import PLACEHOLDERS, is_placeholder
from tracescore.schemas.secrets import register_secret, scrub
from tracescore.scoring.judge.redact import Redactor
from tracescore.scoring.prebuilt.mastra.multi_turn_judge import TRANSCRIPT_END, TRANSCRIPT_START, _sanitize


def _hidden_error() -> str:
    body = public_health({"error": "insert failed"}, authenticated=False, token_configured=True)
    return str(body["error"])


def _registered_secret() -> str:
    register_secret("a-registered-secret-value")
    return scrub("a-registered-secret-value")


# Each redactor, given a text that is all it takes out.
REDACTIONS: dict[str, Callable[[], str]] = {
    "a registered secret": _registered_secret,
    "a credential-shaped key": lambda: scrub("sk-proj-abcdefghijklmnop0123"),
    "an e-mail address sent to a judge": lambda: Redactor(emails=True)("ann@example.com"),
    "a pattern of scoring.redact": lambda: Redactor(api_keys=False, patterns=(r"ACME-\d+",))("ACME-4711"),
    "an error kept from a caller without the token": _hidden_error,
    "a filesystem path in an error": lambda: without_paths("/var/lib/tracescore/store"),
    "a forged transcript start": lambda: _sanitize(TRANSCRIPT_START),
    "a forged transcript end": lambda: _sanitize(TRANSCRIPT_END),
}


@pytest.mark.parametrize("redaction", REDACTIONS.values(), ids=list(REDACTIONS))
def test_what_each_redactor_writes_is_a_placeholder(redaction: Callable[[], str]) -> None:
    written = redaction()
    assert written in PLACEHOLDERS
    assert is_placeholder(f"  {written}\n")  # as a span attribute may hold it


def test_text_around_a_placeholder_is_content() -> None:
    assert not is_placeholder("the [REDACTED] key was rotated")
    assert not is_placeholder("")
    assert not is_placeholder(None)


# How each convention adapter reads a content value: "" or no parts for no content.
READERS: dict[str, Callable[[str], Any]] = {
    # gen_ai semantic conventions, Vercel AI SDK, Mastra, OpenInference: one reader of content text
    "content text": jsonvalue.clean_text,
    "OpenLLMetry": openllmetry_messages.content_parts,
    "Pydantic AI tool results": lambda text: (
        pydantic_ai_messages.tool_result_part("call-1", text).model_extra or {}
    )["result"],
}


@pytest.mark.parametrize("placeholder", sorted(PLACEHOLDERS))
@pytest.mark.parametrize("read", READERS.values(), ids=list(READERS))
def test_every_adapter_reads_a_placeholder_as_no_content(
    read: Callable[[str], Any], placeholder: str
) -> None:
    assert not read(placeholder)
    assert read("It is sunny in Paris.")  # content stays content
