"""Dry judge calls: what a call would cost, without sending it (``tracescore backfill --dry-run``).

Under a guard with ``dry_run`` the judge client renders every request as it would send it, counts
its prompt's tokens with litellm's tokenizer for the model, assumes an answer of
``JudgeGuard.answer_tokens`` tokens, prices both with litellm's price map, meters the call, and
answers with the smallest value its schema allows (empty lists, zeros, the first choice), so the
scorer's later steps render their prompts too. Scorers whose calls depend on what earlier answers
held (one call per extracted claim) are counted along the path an empty answer takes.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from tracescore.scoring.judge.call_guard import JudgeGuard, estimate_cost
from tracescore.scoring.judge.litellm_setup import litellm_module
from tracescore.scoring.judge.usage import current_meter

M = TypeVar("M", bound=BaseModel)


def minimal(annotation: Any) -> Any:
    """The smallest value of a type: None, the first literal or member, 0, "", or an empty container."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if annotation is type(None) or annotation is Any:
        return None
    if origin is Annotated:
        return minimal(args[0])
    if origin is Literal:
        return args[0]
    if origin in (Union, types.UnionType):
        return None if type(None) in args else minimal(args[0])
    if origin in (list, set, frozenset, Sequence) or annotation in (list, set, frozenset):
        return []
    if origin is tuple:
        return ()
    if origin in (dict, Mapping) or annotation is dict:
        return {}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return minimal_instance(annotation)
        if issubclass(annotation, enum.Enum):
            return next(iter(annotation))
        for kind, value in ((bool, False), (int, 0), (float, 0.0), (str, "")):
            if issubclass(annotation, kind):
                return value
    return None


def minimal_instance(schema: type[M]) -> M:
    values = {name: minimal(f.annotation) for name, f in schema.model_fields.items() if f.is_required()}
    try:
        return schema.model_validate(values)
    except ValidationError:  # constraints an empty value breaks (min_length, ge=1): built unchecked
        return schema.model_construct(**values)


def dry_call(
    guard: JudgeGuard, model: str, *, messages: Sequence[dict[str, Any]] = (), texts: Sequence[str] = ()
) -> None:
    """Meter one call that is not sent: its prompt tokens, an assumed answer, their price."""
    litellm = litellm_module()
    try:
        if messages:
            prompt_tokens = int(litellm.token_counter(model=model, messages=list(messages)))
        else:
            prompt_tokens = sum(int(litellm.token_counter(model=model, text=text)) for text in texts)
    except Exception:
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in messages) // 4 + sum(map(len, texts)) // 4
    answer_tokens = guard.answer_tokens(model, prompt_tokens) if messages else 0
    cost = estimate_cost(litellm, model, prompt_tokens=prompt_tokens, output_tokens=answer_tokens)
    meter = current_meter()
    if meter is not None:
        meter.add(model, prompt_tokens, answer_tokens, cost)
