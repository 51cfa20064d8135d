"""The README's examples hold: its Python runs as written (against the local judge server, not a
provider) and its rule reference loads as a valid config.

Each ```python block of the README's "Python" section is executed inside a coroutine, with ``run``
and ``my_agent`` supplied and the judge pointed at the local OpenAI-compatible server.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import yaml

from schemas import AgentRun, Message, RunInput
from schemas.config import ServiceConfig
from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    section = README.read_text().split("## Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


async def run_block(code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    source = "async def __example():\n" + textwrap.indent(code, "    ") + "\n    return locals()\n"
    exec(compile(source, str(README), "exec"), namespace)
    return await namespace["__example"]()


def sample_run() -> AgentRun:
    return AgentRun(
        trace_id="c" * 32,
        span_id="d" * 16,
        input=RunInput(input_messages=[Message(role="user", content="What is the capital of France?")]),
        output=[Message(role="assistant", content="Paris, dear friend.")],
    )


def test_the_readme_has_the_examples() -> None:
    assert len(python_blocks()) == 2


async def test_the_first_example_scores_a_run() -> None:
    names = await run_block(python_blocks()[0], {"run": sample_run()})
    assert names["result"].scorer_id == "textual-difference"
    assert (await names["length_ok"].run(sample_run())).score == 1.0  # three words


async def test_the_judge_example_runs_with_a_local_judge(llm_server: LLMServer) -> None:
    code = python_blocks()[1]
    judge_line = 'judge = Judge("openai/gpt-4o-mini")'
    assert judge_line in code
    code = code.replace(
        judge_line,
        f'judge = Judge("openai/gpt-4o-mini", api_base="{llm_server.api_base}", api_key="test-key")',
    )
    # The first answer is polite.run(run)'s; in run_evals the two scorers run concurrently on the
    # item, so the judge answers by the schema asked for (the reason step asks for text).
    answers = {
        "Politeness": [{"polite": True}, {"polite": False}],
        "Statements": [{"statements": ["Paris."]}],
        "RelevancyResults": [{"results": [{"result": "yes", "reason": "answers it"}]}],
    }

    def respond(body: dict[str, Any]) -> Reply:
        schema = body.get("response_format", {}).get("json_schema", {}).get("name")
        return json_reply(answers[schema].pop(0)) if schema else text_reply("The answer is relevant.")

    llm_server.responder = respond

    def my_agent(question: str) -> str:
        assert question == "What is the capital of France?"
        return "Paris."

    names = await run_block(code, {"run": sample_run(), "my_agent": my_agent})
    result = names["result"]
    assert result.score == 1.0
    assert "Paris, dear friend." in result.analyze_prompt
    assert result.input_tokens == 11  # the server's usage for one answer
    assert names["evals"].scores == {"polite": 0.0, "answer-relevancy": 1.0}
    assert not any(answers.values())  # every scripted answer was asked for


def test_every_registered_scorer_is_in_the_catalogue() -> None:
    from scoring.registry import registered

    catalogue = README.read_text().split("## Scorers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in catalogue.splitlines() if line.startswith("| `")]
    missing = [
        name
        for name, entry in registered().items()
        if not any(f"`{key}`" in row or f"`{key}," in row for row in rows for key in entry.spec.names)
    ]
    assert missing == []


def test_the_rule_reference_examples_are_valid_config() -> None:
    """Every YAML example of the "Rules" section loads as a config, so the reference cannot drift."""
    section = README.read_text().split("\n## Rules\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 2
    for block in blocks:
        config = ServiceConfig.model_validate(yaml.safe_load(block))
        assert config.scoring.rules or config.scoring.redact.active
    reference = ServiceConfig.model_validate(yaml.safe_load(blocks[0])).scoring
    first = reference.rules[0]
    documented = {"scorer", "name", "options", "sample_rate", "target", "filter", "budget", "circuit_breaker"}
    assert documented <= first.model_fields_set and reference.rules[-1].use is not None
    assert set(type(first.filter).model_fields) <= first.filter.model_fields_set  # every filter field shown
    assert first.budget is not None and first.budget.model_fields_set == set(type(first.budget).model_fields)
