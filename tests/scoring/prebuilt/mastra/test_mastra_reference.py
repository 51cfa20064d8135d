"""Rubric, summarization and multi-turn judge against @mastra/evals 1.10.2 itself.

The cases of ``tests/fixtures/references/mastra_llm_more_reference.json`` were recorded by
``mastra_llm_more_reference.mjs`` beside it, which ran @mastra/evals 1.10.2 against the local
OpenAI-compatible server with the same scripted answers; our scorers must give Mastra's scores,
reasons and prompts exactly (our prompts carry the trace content in data markers; without the
markers they are Mastra's text).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import conversation_run
from tests.support.fixture_files import REFERENCES_DIR
from tests.support.llm_server import LLMServer, Reply
from tracescore.schemas import AgentRun
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.mastra.multi_turn_judge import MULTI_TURN_JUDGE
from tracescore.scoring.prebuilt.mastra.rubric import RUBRIC
from tracescore.scoring.prebuilt.mastra.summarization import SUMMARIZATION
from tracescore.scoring.prebuilt.registry import build_scorer

REFERENCE = json.loads((REFERENCES_DIR / "mastra_llm_more_reference.json").read_text())
INSTRUCTIONS = {
    "rubric": RUBRIC.instructions,
    "summarization": SUMMARIZATION.instructions,
    "multi-turn-judge": MULTI_TURN_JUDGE.instructions,
}

# The data markers' tag, read off a delimited probe (it is random per process).
_PROBE = re.match(r"<([^ >]+)", delimit("probe", ""))
assert _PROBE is not None
_TAG = _PROBE.group(1)
_BLOCK = re.compile(rf'<{re.escape(_TAG)} label="[^"]*">\n(.*?)\n</{re.escape(_TAG)}>', re.DOTALL)


def undelimit(prompt: str) -> str:
    """``prompt`` with each data-marker block replaced by its content (Mastra's prompts have none)."""
    return _BLOCK.sub(lambda m: m.group(1), prompt)


def reference_run(run: dict[str, Any]) -> AgentRun:
    return conversation_run(
        [(m["role"], m["text"]) for m in run["output"]],
        inputs=[("user", text) for text in run["input"]],
        remembered=[(m["role"], m["text"]) for m in run.get("remembered", [])],
    )


def test_the_reference_covers_five_cases_per_scorer() -> None:
    counts = {name: sum(c["scorer"] == name for c in REFERENCE["cases"]) for name in INSTRUCTIONS}
    assert counts == {"rubric": 7, "summarization": 6, "multi-turn-judge": 5}
    assert not [c["id"] for c in REFERENCE["cases"] if "error" in c]


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=[c["id"] for c in REFERENCE["cases"]])
async def test_scores_reasons_and_prompts_match_mastra(
    llm_server: LLMServer, judge: Judge, case: dict[str, Any]
) -> None:
    llm_server.script(*(Reply(content=reply) for reply in case["replies"]))
    scorer = build_scorer(case["scorer"], {**case["options"], "judge": judge})
    result = await scorer.run(reference_run(case["run"]))
    assert result.score == case["score"]
    assert result.reason == case["reason"]
    # The same calls, in the same order, with Mastra's prompt text around our data markers.
    assert [undelimit(prompt) for prompt in llm_server.user_prompts()] == case["prompts"]
    for request, mastra_system in zip(llm_server.chat_requests, case["system"], strict=True):
        assert mastra_system == INSTRUCTIONS[case["scorer"]]
        assert mastra_system in request.messages[0]["content"]
