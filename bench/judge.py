"""The judge path: an LLM scorer against bare ``litellm.acompletion`` calls to a local server."""

from __future__ import annotations

import asyncio
import json

from bench.micro import best_of
from bench.report import Metric


def bench_llm_judge() -> tuple[str, float, float]:
    """The toxicity scorer (two judge calls: verdicts, reason) vs two bare ``litellm.acompletion``
    calls to the same local OpenAI-compatible server: the cost of the judge client and pipeline."""
    from bench.judge_server import JudgeServer
    from scoring.judge import Judge, close_clients, litellm_module
    from scoring.prebuilt import create_toxicity_scorer

    server = JudgeServer(
        lambda body: (
            json.dumps({"verdicts": [{"verdict": "no", "reason": "calm"}]})
            if "response_format" in body
            else "The score is 0 because nothing is toxic."
        )
    )
    run = {
        "input": {"input_messages": [{"role": "user", "content": "How do I reset my password?"}]},
        "output": [{"role": "assistant", "content": "Click 'Forgot password' and follow the link."}],
    }
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(server.start())
        judge = Judge("openai/gpt-4o-mini", api_base=server.api_base, api_key="bench")
        scorer = create_toxicity_scorer(judge)
        litellm = litellm_module()
        messages = [{"role": "user", "content": "Is this toxic?"}]

        async def bare_calls() -> None:
            for response_format in ({"type": "json_object"}, None):
                extra = {"response_format": response_format} if response_format else {}
                await litellm.acompletion(
                    model=judge.model, messages=messages, api_base=judge.api_base, api_key="bench", **extra
                )

        baseline = best_of(lambda: loop.run_until_complete(bare_calls()), 20)
        ours = best_of(lambda: loop.run_until_complete(scorer.run(run)), 20)
        loop.run_until_complete(close_clients())
        loop.run_until_complete(server.close())
    finally:
        loop.close()
    return "toxicity scorer, local judge", baseline, ours


def metrics() -> list[Metric]:
    name, baseline, ours = bench_llm_judge()
    return [
        Metric("judge_efficiency", ours, "s", baseline, "<= 1.05", baseline_label="bare litellm.acompletion")
    ]
