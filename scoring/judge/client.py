"""The LLM judge client: structured (pydantic-validated) and free-text answers through litellm.

::

    judge = Judge("openai/gpt-4o-mini", "You grade answers for relevance.")
    result = await judge.structured(f"Rate this answer.\\n{delimit('answer', text)}", Verdict)
    result.value  # a validated Verdict; result.input_tokens, .cost_usd, .attempts, .latency_ms

Every call goes through ``litellm.acompletion``. Structured output uses a JSON schema
``response_format`` when litellm says the model supports one, else JSON mode; an answer that does
not validate gets one repair round (the error is sent back), then fails with ``JudgeError``.
Rate limits, 5xx and timeouts are retried with exponential backoff and jitter (the one
``RetryPolicy``, honouring Retry-After); permanent errors (401/403, unknown model, bad request, no
key) fail at once with a message saying what to set (``scoring.judge.failures`` classifies them).
The key each call carries is ``scoring.judge.api_keys``'s: the judge's own, the provider's variable,
or for an ``api_base`` without either a placeholder (local OpenAI-compatible servers want none).
Embeddings (``embed``) and moderation (``moderate``) go through the same retry policy. What a
structured request asks for and how its answer is read is ``scoring.judge.structured_output``'s.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from tracescore.schemas.retry_policy import RetryPolicy
from tracescore.schemas.secrets import register_secret
from tracescore.scoring.judge.api_keys import NO_KEY, api_key_for
from tracescore.scoring.judge.call_guard import (
    GuardedCall,
    current_guard,
    estimate_cost,
    judge_span,
    redact_text,
)
from tracescore.scoring.judge.data_fences import DATA_PREAMBLE
from tracescore.scoring.judge.dry import dry_call, minimal_instance
from tracescore.scoring.judge.failures import JudgeError, classify, explain, is_timeout
from tracescore.scoring.judge.litellm_setup import litellm_module
from tracescore.scoring.judge.structured_output import (
    parse_answer,
    repair_messages,
    response_format,
    shortened,
    supports_json_schema,
)
from tracescore.scoring.judge.transcript import record_exchange
from tracescore.scoring.judge.usage import Tally

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

BACKOFF_JITTER = 0.5  # each wait between half and all of the backoff


@dataclass(frozen=True)
class JudgeResult(Generic[T]):
    """One judge answer with what it cost. ``attempts`` counts every HTTP call (retries, repair)."""

    value: T
    model: str
    prompt: str
    raw: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_ms: float
    attempts: int


@dataclass(frozen=True)
class Judge:
    """Which model judges and how: configuration only, safe to share across concurrent calls."""

    model: str
    instructions: str = ""
    _: KW_ONLY
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)  # a secret: never in logs or reprs
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 8.0
    temperature: float = 0.0
    retry_policy: RetryPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        register_secret(self.api_key)  # scrubbed from every error text and log line from now on
        if not self.model:
            raise ValueError("a judge needs a model")
        if self.timeout_s <= 0 or self.max_retries < 0 or self.backoff_initial_s < 0:
            raise ValueError("timeout_s must be > 0, max_retries and backoff_initial_s >= 0")
        policy = RetryPolicy(
            initial_s=self.backoff_initial_s, max_s=self.backoff_max_s, jitter=BACKOFF_JITTER
        )
        object.__setattr__(self, "retry_policy", policy)  # derived from the fields, once

    async def embed(self, texts: list[str], model: str) -> list[list[float]]:
        """Embedding vectors of ``texts`` through ``litellm.aembedding``, on this judge's endpoint."""
        litellm = litellm_module()
        texts = [redact_text(text) for text in texts]
        if (guard := current_guard()) is not None and guard.dry_run:
            dry_call(guard, model, texts=texts)
            return [[1.0] + [0.0] * 7 for _ in texts]
        api_key = api_key_for(model, self.api_key, self.api_base)
        sent = [{"role": "input", "content": text} for text in texts]
        response = await self._recorded(
            model,
            sent,
            "embeddings",
            lambda: litellm.aembedding(
                model=model,
                input=texts,
                api_base=self.api_base,
                api_key=api_key,
                timeout=self.timeout_s,
                max_retries=0,
                num_retries=0,
            ),
            estimate=lambda: estimate_cost(litellm, model, texts=texts),
            sent_key=api_key != NO_KEY,
            answer=lambda r: f"{len(r.data)} vector(s)",
        )
        return [list(item["embedding"]) for item in response.data]

    async def moderate(self, text: str, model: str | None = None) -> dict[str, float]:
        """Category scores of ``text`` from a moderation endpoint, through ``litellm.amoderation``."""
        litellm = litellm_module()
        moderation_model = model or self.model
        text = redact_text(text)
        if (guard := current_guard()) is not None and guard.dry_run:
            dry_call(guard, moderation_model, texts=[text])
            return {}
        api_key = api_key_for(moderation_model, self.api_key, self.api_base)

        async def request() -> Any:
            # litellm's moderation path takes no retry setting; a client of our own makes the
            # SDK's retries zero so that only the judge's retry policy applies.
            import openai

            # None: the client reads OPENAI_API_KEY, and refuses without one (a permanent error).
            async with openai.AsyncOpenAI(
                api_key=api_key or litellm.api_key,
                base_url=self.api_base,
                max_retries=0,
                timeout=self.timeout_s,
            ) as client:
                return await litellm.amoderation(input=text, model=moderation_model, client=client)

        response = await self._recorded(
            moderation_model,
            [{"role": "input", "content": text}],
            "moderation",
            request,
            sent_key=api_key != NO_KEY,
            answer=lambda r: json.dumps(_category_scores(r)),
        )
        return _category_scores(response)

    def uses_json_schema(self) -> bool:
        """True when litellm knows the model accepts a JSON schema ``response_format``."""
        return supports_json_schema(self.model)

    async def structured(
        self, prompt: str, output_schema: type[M], *, system: str | None = None
    ) -> JudgeResult[M]:
        """The judge's answer to ``prompt`` as a validated ``output_schema`` instance."""
        prompt = redact_text(prompt)
        answer_format, json_hint = response_format(output_schema, json_schema=self.uses_json_schema())
        messages = [
            {"role": "system", "content": self._system(system, json_hint)},
            {"role": "user", "content": prompt},
        ]
        tally = Tally()
        started = time.perf_counter()
        if (guard := current_guard()) is not None and guard.dry_run:
            dry_call(guard, self.model, messages=messages)
            return self._result(minimal_instance(output_schema), prompt, "", tally, started)
        raw = await self._complete(messages, tally, answer_format)
        try:
            value = parse_answer(output_schema, raw)
        except ValidationError as first:
            # One repair round: show the model its answer and what was wrong with it.
            messages += repair_messages(raw, str(first), output_schema)
            raw = await self._complete(messages, tally, answer_format)
            try:
                value = parse_answer(output_schema, raw)
            except ValidationError as second:
                raise JudgeError(
                    f"judge {self.model!r} answered invalid JSON twice: {shortened(str(second))}",
                    retriable=False,
                    attempts=tally.attempts,
                    kind="invalid_answer",
                ) from second
        return self._result(value, prompt, raw, tally, started)

    async def text(self, prompt: str, system: str | None = None) -> JudgeResult[str]:
        """The judge's free-text answer to ``prompt`` (for reasons and explanations)."""
        prompt = redact_text(prompt)
        messages = [
            {"role": "system", "content": self._system(system, None)},
            {"role": "user", "content": prompt},
        ]
        tally = Tally()
        started = time.perf_counter()
        if (guard := current_guard()) is not None and guard.dry_run:
            dry_call(guard, self.model, messages=messages)
            return self._result("", prompt, "", tally, started)
        raw = await self._complete(messages, tally, None)
        return self._result(raw, prompt, raw, tally, started)

    def _system(self, system: str | None, json_hint: str | None) -> str:
        return "\n\n".join(part for part in (DATA_PREAMBLE, self.instructions, system, json_hint) if part)

    def _result(self, value: T, prompt: str, raw: str, tally: Tally, started: float) -> JudgeResult[T]:
        return JudgeResult(
            value=value,
            model=self.model,
            prompt=prompt,
            raw=raw,
            input_tokens=tally.input_tokens,
            output_tokens=tally.output_tokens,
            cost_usd=tally.cost_usd,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            attempts=tally.attempts,
        )

    async def _complete(
        self, messages: list[dict[str, Any]], tally: Tally, response_format: dict[str, Any] | None
    ) -> str:
        """One completion's text, retrying retriable failures with backoff; adds usage to ``tally``."""
        litellm = litellm_module()
        guard = current_guard()
        extra: dict[str, Any] = {"response_format": response_format} if response_format else {}
        api_key = api_key_for(self.model, self.api_key, self.api_base)
        response = await self._recorded(
            self.model,
            messages,
            "chat",
            lambda: litellm.acompletion(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                api_base=self.api_base,
                api_key=api_key,
                timeout=self.timeout_s,
                # Retries are ours (classified, with backoff); none inside litellm or openai.
                max_retries=0,
                num_retries=0,
                **extra,
            ),
            tally=tally,
            estimate=lambda: guard.estimate(litellm, self.model, messages) if guard is not None else 0.0,
            sent_key=api_key != NO_KEY,
            answer=_content,
        )
        return _content(response)

    async def _recorded(
        self,
        model: str,
        messages: list[dict[str, Any]],
        operation: str,
        request: Callable[[], Awaitable[Any]],
        *,
        answer: Callable[[Any], str],
        tally: Tally | None = None,
        estimate: Callable[[], float] | None = None,
        sent_key: bool = True,
    ) -> Any:
        """``_call``, with the request and its answer (or failure) added to the scorer run's judge
        transcript when one is kept (``scoring.judge.transcript``)."""
        sent = list(messages)  # a repair round appends to the caller's list afterwards
        try:
            response = await self._call(
                model,
                tally if tally is not None else Tally(),
                request,
                operation=operation,
                estimate=estimate,
                sent_key=sent_key,
            )
        except JudgeError as exc:
            record_exchange(model, sent, operation=operation, error=str(exc))
            raise
        record_exchange(model, sent, operation=operation, answer=answer(response))
        return response

    async def _call(
        self,
        model: str,
        tally: Tally,
        request: Callable[[], Awaitable[Any]],
        *,
        operation: str = "chat",
        estimate: Callable[[], float] | None = None,
        sent_key: bool = True,
    ) -> Any:
        """``request()``'s response, retrying retriable failures with backoff; usage to ``tally``.

        Under the service's guard (``scoring.judge.call_guard``) each request is first reserved in the
        budgets (its cost ``estimate``d) and let through by the model's circuit breaker. A permanent
        failure is raised at once, explained (``sent_key``: the request carried a configured key)."""
        guard = current_guard()
        estimated = 0.0
        if guard is not None and guard.budgets and estimate is not None:
            estimated = await asyncio.to_thread(estimate)  # a tokenizer may load on first use
        with judge_span(model, operation) as span:
            for retry in range(self.max_retries + 1):
                call = GuardedCall(guard, model)
                call.begin(estimated)  # BudgetExceeded, or a retriable error while the circuit is open
                tally.attempts += 1
                try:
                    async with asyncio.timeout(self.timeout_s):
                        response = await request()
                except Exception as exc:
                    error = classify(exc)
                    retriable = self.retry_policy.retries(error)
                    call.failed(retriable)
                    if not retriable or retry == self.max_retries:
                        span.set_attribute("error.type", type(exc).__name__)
                        if retriable:
                            why = f"timed out after {self.timeout_s:g} s" if is_timeout(exc) else error
                            message = f"failed (retriable) after {tally.attempts} attempt(s): {why}"
                        else:
                            summary = explain(error, model, sent_key=sent_key)
                            message = f"failed: {summary} ({error})" if summary else f"failed: {error}"
                        raise JudgeError(
                            f"judge {model!r} {message}",
                            retriable=retriable,
                            attempts=tally.attempts,
                            retry_after_s=error.retry_after_s,
                            kind=error.kind,
                            status=error.status,
                        ) from exc
                    await asyncio.sleep(self.retry_policy.delay(retry, at_least=error.retry_after_s))
                    continue
                before = (tally.input_tokens, tally.output_tokens)
                cost = tally.add(model, response, litellm_module())
                call.answered(cost, tally.input_tokens - before[0], tally.output_tokens - before[1])
                span.set_attribute("gen_ai.usage.input_tokens", tally.input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", tally.output_tokens)
                return response
        raise AssertionError("unreachable: the loop returns or raises")


def _content(response: Any) -> str:
    content = response.choices[0].message.content
    return content if isinstance(content, str) else ""


def _category_scores(response: Any) -> dict[str, float]:
    raw = response.results[0].category_scores
    scores = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
    return {name: float(value) for name, value in scores.items() if value is not None}
