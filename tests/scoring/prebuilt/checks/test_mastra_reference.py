"""Mastra's quick checks (``checks.includes`` ... ``checks.noToolErrors``) against @mastra/evals 1.10.2.

``tests/fixtures/references/checks_reference.json`` was printed by ``checks_reference.mjs`` beside
it (Node 20, @mastra/evals 1.10.2, @mastra/core 1.71.0) from ``checks_cases.json``: per case the
real check's id, name, description, score, reason and preprocess step result (camelCase keys). Each
case's output messages are built as the same Mastra stored messages the script builds and read
through ``to_message``, so the whole path from Mastra's message shape to the score is compared;
scores (the similarity floats too) and step results compare with ``==``. Every scorer is built
through ``build_scorer`` with a registry of these factories, options given as the case gives them
(camelCase) and positional arguments under their option names. The hand-worked tests of the other
modules here cover what Node cannot show: content capture off, our message model's differences,
option validation.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.scoring.prebuilt.checks.registered_checks import REGISTRY
from tests.support.fixture_files import REFERENCES_DIR
from tracescore.schemas import AgentRun
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.utils import create_agent_test_run

DATA = REFERENCES_DIR
CASES: list[dict[str, Any]] = json.loads((DATA / "checks_cases.json").read_text())["cases"]
REFERENCE: dict[str, dict[str, Any]] = json.loads((DATA / "checks_reference.json").read_text())

# Mastra's `checks` key -> (our registry name, the option names of its positional arguments).
CHECKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "includes": ("check-includes", ("expected",)),
    "excludes": ("check-excludes", ("unwanted",)),
    "equals": ("check-equals", ("expected",)),
    "matches": ("check-matches", ("pattern", "flags")),
    "similarity": ("check-similarity", ("expected",)),
    "calledTool": ("check-called-tool", ("toolName",)),
    "didNotCall": ("check-did-not-call", ("toolName",)),
    "toolOrder": ("check-tool-order", ("expectedOrder",)),
    "maxToolCalls": ("check-max-tool-calls", ("max",)),
    "usedNoTools": ("check-used-no-tools", ()),
    "noToolErrors": ("check-no-tool-errors", ()),
}
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_keys(step_result: dict[str, Any]) -> dict[str, Any]:
    """Mastra's camelCase step-result keys as ours (its values are never dicts)."""
    return {_HUMP.sub("_", key).lower(): value for key, value in step_result.items()}


def build(case: dict[str, Any]) -> Any:
    name, arg_names = CHECKS[case["check"]]
    options = dict(zip(arg_names, case.get("args", []), strict=False)) | case.get("options", {})
    return build_scorer(name, options, registry=REGISTRY)


def mastra_message(message: dict[str, Any], index: int) -> dict[str, Any]:
    """The stored message checks_reference.mjs builds for the case message (see its header)."""
    text = message.get("text", "")
    return {
        "id": f"m{index}",
        "role": message.get("role", "assistant"),
        "content": {
            "format": 2,
            "parts": [{"type": "text", "text": part} for part in message.get("parts", [text])],
            "content": text,
            "toolInvocations": [
                {
                    "toolCallId": f"call-{index}-{i}",
                    "toolName": tool["name"],
                    "args": tool.get("args", {}),
                    "result": tool.get("result"),
                    "state": tool.get("state", "result"),
                }
                for i, tool in enumerate(message.get("tools", []))
            ],
        },
    }


def run_of(case: dict[str, Any]) -> AgentRun:
    output = [mastra_message(message, i) for i, message in enumerate(case["messages"])]
    return create_agent_test_run(input_messages="go", output=output)


def test_every_case_has_a_reference() -> None:
    assert [case["id"] for case in CASES] == list(REFERENCE)
    assert len(CASES) >= 60
    assert {case["check"] for case in CASES} == set(CHECKS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
async def test_case_matches_mastra(case: dict[str, Any]) -> None:
    reference = REFERENCE[case["id"]]
    scorer = build(case)
    assert (scorer.id, scorer.name, scorer.description) == tuple(reference["scorer"].values())
    result = await scorer.run(run_of(case))
    assert result.score == reference["score"]
    assert result.reason == reference["reason"]  # null: the checks give no reason
    step_result = dict(result.preprocess_step_result)
    if step_result.get("threshold", "given") is None:  # JSON.stringify leaves undefined out
        del step_result["threshold"]
    assert step_result == snake_keys(reference["preprocess"])
