"""Message-text helpers the scorers share, and the JavaScript string semantics parity needs.

The prebuilt heuristic scorers mirror ``@mastra/evals``; to give the same numbers they read a run's
text the way Mastra's scorer utils do (``getTextContentFromMastraDBMessage``, ``extractToolCalls``)
and measure strings the way JavaScript does: lengths and substrings in UTF-16 code units, ``\\s`` and
``trim()`` with ECMAScript's whitespace set (which differs from Python's ``\\s`` and ``str.strip``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tracescore.schemas import AgentRun, Message

# ECMAScript WhiteSpace + LineTerminator: what JS `\s` and `String.prototype.trim` match. Python's
# `\s` also matches U+001C..U+001F and U+0085 and misses U+FEFF, so an explicit class is needed.
JS_WHITESPACE_CHARS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_WHITESPACE_RUN = re.compile(f"[{JS_WHITESPACE_CHARS}]+")
# The same set spelled out, for ``str.strip`` (a C loop, several times faster than a trimming regex).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_BMP_MAX = 0xFFFF


def splits_like_js(text: str) -> bool:
    """Whether ``str.split()`` splits ``text`` where JavaScript's ``/\\s+/`` does.

    Python's whitespace is JavaScript's but for U+001C..U+001F and U+0085 (Python's only) and
    U+FEFF (JavaScript's only), checked over every code point (tests/scoring/test_text.py): text
    without them -- almost all text -- is split in C, five times faster than with the regex.
    """
    return (
        "\x1c" not in text
        and "\x1d" not in text
        and "\x1e" not in text
        and "\x1f" not in text
        and "\x85" not in text
        and "\ufeff" not in text
    )


def js_trim(text: str) -> str:
    """``text.trim()`` in JavaScript."""
    return text.strip(JS_WHITESPACE)


def js_collapse_whitespace(text: str) -> str:
    """``text.replace(/\\s+/g, ' ').trim()`` in JavaScript."""
    if splits_like_js(text):
        return " ".join(text.split())
    return js_trim(JS_WHITESPACE_RUN.sub(" ", text))


def js_split_words(text: str) -> list[str]:
    """``text.split(/\\s+/).filter(w => w.length > 0)`` in JavaScript."""
    if splits_like_js(text):
        return text.split()
    return [word for word in JS_WHITESPACE_RUN.split(text) if word]


def js_remove_whitespace(text: str) -> str:
    """``text.replace(/\\s+/g, '')`` in JavaScript."""
    if splits_like_js(text):
        return "".join(text.split())
    return JS_WHITESPACE_RUN.sub("", text)


def utf16_units(text: str) -> str:
    """The string as JavaScript sees it: one character per UTF-16 code unit.

    Characters above U+FFFF become their surrogate pair, so ``len`` and slicing match JS
    ``length`` and ``substring``. Text without such characters is returned unchanged.
    """
    # isascii is a flag; max() runs in C: the common, all-BMP case is cheap.
    if text.isascii() or ord(max(text)) <= _BMP_MAX:
        return text
    # Imported here: `scoring.framework.message_text` stays light to import, and astral text is rare.
    import numpy as np

    # Each UTF-16 code unit widened to a UTF-32 code point (surrogates included), decoded back.
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype="<u2")
    return units.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


def js_length(text: str) -> int:
    """``text.length`` in JavaScript (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def message_text(message: Message) -> str:
    """The text of a message: its ``content``, else the text of its last text part (as Mastra)."""
    if message.content:
        return message.content
    text_parts = [part for part in message.parts if part.type == "text"]
    if not text_parts:
        return ""
    text = (text_parts[-1].model_extra or {}).get("text")
    return text if isinstance(text, str) else ""


def input_text(run: AgentRun) -> str:
    """Texts of this turn's input messages joined with ``", "`` (Mastra's scorers do the same)."""
    messages = run.input.input_messages
    if len(messages) == 1:  # the common case, without the join's generator
        return message_text(messages[0])
    return ", ".join(message_text(message) for message in messages)


def output_text(run: AgentRun) -> str:
    """Texts of the run's output messages joined with ``", "``, skipping messages without text.

    Deviation from Mastra, on purpose: our runs hold one assistant message per LLM step, and a
    step that only calls tools has no text. Mastra merges a run's steps into one message, so it
    never sees those empty messages; joining them would add stray ``", "`` separators and change
    every text score of tool-using runs. For a single-message output the result is identical.
    """
    if len(run.output) == 1:  # the common case, without the join's generator
        return message_text(run.output[0])
    return ", ".join(text for message in run.output if (text := message_text(message)))


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """Where one tool call sits in the output (Mastra's ``ToolCallInfo``)."""

    tool_name: str
    tool_call_id: str
    message_index: int
    invocation_index: int


def extract_tool_calls(output: Sequence[Message]) -> tuple[list[str], list[ToolCallInfo]]:
    """Names of the tools the agent called, in order, and where each call sits.

    Like Mastra's ``extractToolCalls``: a call counts whatever its outcome (states ``call``,
    ``result`` and ``error`` -- Mastra's ``output-error``); invocations without a tool name are
    skipped; a missing call id becomes ``"<message index>-<invocation index>"``.
    """
    names: list[str] = []
    infos: list[ToolCallInfo] = []
    for message_index, message in enumerate(output):
        for invocation_index, invocation in enumerate(message.tool_invocations):
            if not invocation.tool_name:
                continue
            names.append(invocation.tool_name)
            infos.append(
                ToolCallInfo(
                    tool_name=invocation.tool_name,
                    tool_call_id=invocation.tool_call_id or f"{message_index}-{invocation_index}",
                    message_index=message_index,
                    invocation_index=invocation_index,
                )
            )
    return names, infos
