"""A judge's API key appears in no log line, error, metric or decision, even when the provider echoes it."""

from __future__ import annotations

import logging

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from prometheus_client import generate_latest

from tests.scoring.test_executor import config, make_run, registry_of, running
from tests.support.llm_server import LLMServer, error_reply, judge_at
from tests.support.sinks import RecordingSink
from tracescore.schemas.config import ScorerRule
from tracescore.schemas.redaction_placeholders import REDACTED
from tracescore.schemas.secrets import _KEY_LIKE, ScrubFilter, _redact_match, register_secret, scrub
from tracescore.scoring.prebuilt import create_toxicity_scorer
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

KEY = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def test_registered_secrets_and_credential_shapes_are_scrubbed() -> None:
    register_secret("hunter2-but-long")
    assert scrub("password hunter2-but-long here") == f"password {REDACTED} here"
    assert scrub(f"Incorrect API key provided: {KEY}.") == f"Incorrect API key provided: {REDACTED}."
    assert scrub("Authorization: Bearer abcdefghijkl") == f"Authorization: Bearer {REDACTED}"
    assert scrub('{"api_key": "abcdefghijkl"}') == f'{{"api_key": "{REDACTED}"}}'
    assert scrub("AIzaSyA1234567890abcdefghijklmno") == REDACTED
    ordinary = "the task-force asked: is sk-1 a key? (a skeleton-key is not)"
    assert scrub(ordinary) == ordinary
    register_secret("short")  # too short to scrub safely: ignored
    assert scrub("a short note") == "a short note"


# Pieces of credential shapes, their near misses, and the characters (?i) matches to "i" and "k".
_PIECES = st.sampled_from(
    [
        "Bearer ",
        "bearer\t",
        "BEARER",
        "api_key",
        "API-KEY",
        "apikey",
        "x-api-key",
        "Authorization",
        "authorİzation",
        "AUTHORıZATION",
        "apı_key",
        "\u212aey",
        "sk-",
        "pk-",
        "rk-",
        "SK-",
        "AIza",
        "aiza",
        ": ",
        "=",
        '"',
        "'",
        "abcdefghij",
        "0123456789_-",
        " ",
        "\n",
        "é",
        "ſ",
        "K",
    ]
)


@given(st.lists(_PIECES | st.text(max_size=5), max_size=12).map("".join))
@example("AUTHORıZATION=abcdefghijkl")  # dotless i: (?i) matches it to "i", lower() keeps it
@example("authorİzation: abcdefghijkl")  # dotted capital I: lower() gives "i" + a combining dot
@example("x-apı-key: abcdefghijkl")
@example("\u212aEY")  # not a key: the Kelvin sign lowers to "k" but stays unmatched without "api"
def test_scrub_skips_the_regex_only_where_it_cannot_match(text: str) -> None:
    # scrub looks for marker substrings before running the credential regex: it must give what
    # the regex alone gives (no registered secret is in these texts).
    assert scrub(text) == _KEY_LIKE.sub(_redact_match, text)


async def test_an_echoed_key_reaches_no_decision_log_line_or_metric(
    llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The provider refuses the key and quotes it back, as OpenAI's 401 does.
    llm_server.script(error_reply(401, content=f"Incorrect API key provided: {KEY}. See your account."))
    judge = judge_at(llm_server, api_key=KEY, max_retries=0)
    scorer = create_toxicity_scorer(judge)
    assert KEY not in repr(judge) and KEY not in repr(scorer)

    sink, metrics = RecordingSink(), ScoringMetrics()
    caplog.handler.addFilter(ScrubFilter())  # what `tracescore` installs on its log handlers
    with caplog.at_level(logging.DEBUG):
        registry = registry_of(toxic=scorer)
        async with running(
            config(ScorerRule(scorer="toxic")), sink, registry=registry, metrics=metrics
        ) as executor:
            await executor.consume_runs([make_run(1)])
            await executor.drain()

    [decision] = sink.decisions
    assert decision.decision == "failed" and "Incorrect API key provided" in decision.detail
    assert KEY not in decision.detail and REDACTED in decision.detail
    assert len(llm_server.chat_requests) == 1  # the key did reach the provider, and only there
    assert caplog.records and KEY not in caplog.text
    assert all(KEY not in scrub(record.getMessage()) for record in caplog.records)
    assert KEY not in generate_latest(metrics.registry).decode()


async def test_our_own_warning_is_clean_without_any_filter(
    llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.script(error_reply(401, content=f"Incorrect API key provided: {KEY}."))
    judge = judge_at(llm_server, api_key=KEY, max_retries=0)
    registry = registry_of(toxic=create_toxicity_scorer(judge))
    sink = RecordingSink()
    with caplog.at_level(logging.WARNING, logger="tracescore.scoring"):
        async with running(config(ScorerRule(scorer="toxic")), sink, registry=registry) as executor:
            await executor.consume_runs([make_run(2)])
            await executor.drain()
    warnings = [
        record.getMessage() for record in caplog.records if record.name.startswith("tracescore.scoring")
    ]
    assert warnings and all(KEY not in message for message in warnings)
