"""Structured judge answers: what a request asks for (a JSON schema ``response_format`` when litellm
says the model takes one, else JSON mode with the schema spelt out), the repair round after an
answer that does not validate, and reading an answer as its pydantic model.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tracescore.scoring.judge.litellm_setup import litellm_module

M = TypeVar("M", bound=BaseModel)

# Models in JSON mode sometimes still wrap the object in a Markdown code fence.
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)
MAX_ERROR_CHARS = 1_000  # of a validation error, shown to the model or in the failure


def response_format(output_schema: type[BaseModel], *, json_schema: bool) -> tuple[dict[str, Any], str]:
    """The ``response_format`` of a request for an ``output_schema`` answer, and the hint the system
    message adds: a JSON schema format when the model takes one (``json_schema``), else JSON mode
    and the schema spelt out."""
    if json_schema:
        # A dict of its own for every request: litellm may adapt it to the provider in place.
        schema_format: dict[str, Any] = {
            "type": "json_schema",
            "json_schema": {
                "name": schema_name(output_schema),
                "schema": json.loads(schema_text(output_schema)),
                "strict": False,
            },
        }
        return schema_format, "Reply with a JSON object."
    return {"type": "json_object"}, (
        f"Reply with only a JSON object matching this JSON schema:\n{schema_text(output_schema)}"
    )


def repair_messages(raw: str, error: str, output_schema: type[BaseModel]) -> list[dict[str, Any]]:
    """The repair round: the model's invalid answer ``raw``, and what was wrong with it."""
    return [
        {"role": "assistant", "content": raw},
        {
            "role": "user",
            "content": "Your answer was not valid JSON for the required schema:\n"
            f"{shortened(error)}\nReply again with only a JSON object matching this "
            f"JSON schema:\n{schema_text(output_schema)}",
        },
    ]


def parse_answer(output_schema: type[M], raw: str) -> M:
    """``raw`` validated as ``output_schema``, also when it comes wrapped in a Markdown code fence;
    raises pydantic's ``ValidationError`` when it does not validate."""
    try:
        return output_schema.model_validate_json(raw)
    except ValidationError:
        fenced = _FENCE.match(raw)
        if fenced is None:
            raise
        return output_schema.model_validate_json(fenced.group(1))


@functools.lru_cache(maxsize=1024)
def schema_text(output_schema: type[BaseModel]) -> str:
    """The JSON schema of an output model, as JSON text. Built once per model: pydantic builds it
    anew on every ``model_json_schema()`` call (0.2 ms for toxicity's verdicts, 10% of a scorer
    run's CPU time under ``bench/judge.py``), and the models of a scorer never change."""
    return json.dumps(output_schema.model_json_schema())


@functools.lru_cache(maxsize=1024)
def supports_json_schema(model: str) -> bool:
    """Whether litellm's model map says ``model`` takes a JSON schema ``response_format``; asked
    once per model (a model registered with litellm later keeps the first answer)."""
    try:
        return bool(litellm_module().supports_response_schema(model=model))
    except Exception:  # an unknown model or provider: fall back to JSON mode
        return False


def schema_name(output_schema: type[BaseModel]) -> str:
    """The model's name as a provider accepts it for a JSON schema (letters, digits, _ and -)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", output_schema.__name__)[:64] or "output"


def shortened(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[:limit] + "…"
