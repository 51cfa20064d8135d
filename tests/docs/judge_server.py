"""The local judge server (tests/support/llm_server.py) in a thread of its own, for examples that run
as separate programs, and a responder that answers any structured request with a valid instance of
the JSON schema it asks for."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply

PLAIN_ANSWER = "The answer addresses the question."


def instance_of(schema: dict[str, Any], definitions: dict[str, Any]) -> Any:
    """The simplest value ``schema`` accepts: the first enum value, true, "yes", 1, one array item,
    every property of an object."""
    if "$ref" in schema:
        return instance_of(definitions[schema["$ref"].rsplit("/", 1)[-1]], definitions)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in schema:
            return instance_of(schema[combined][0], definitions)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        properties = schema.get("properties", {})
        return {key: instance_of(value, definitions) for key, value in properties.items()}
    if kind == "array":
        return [instance_of(schema.get("items", {}), definitions)]
    return {"string": "yes", "integer": 1, "number": 1, "boolean": True, "null": None}[kind]


def schema_answers(body: dict[str, Any]) -> Reply:
    """A responder: a valid instance of the requested JSON schema, or a sentence for a text request."""
    format_ = body.get("response_format") or {}
    schema = format_.get("json_schema", {}).get("schema") if isinstance(format_, dict) else None
    if schema is None:
        return text_reply(PLAIN_ANSWER)
    return json_reply(instance_of(schema, schema.get("$defs", {})))


@contextmanager
def judge_server_thread() -> Iterator[LLMServer]:
    """A started LLMServer answering ``schema_answers`` (set ``responder`` to change it), served by
    an event loop in a daemon thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = LLMServer()
    server.responder = schema_answers
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
