"""The Python and scorer reference holds: docs/python.md's programs print what the page says (run as
programs, their judge litellm's OpenAI provider pointed at the local judge server through
``OPENAI_BASE_URL``, with scripted answers), every registered scorer is in docs/scorers.md, and
docs/rules.md's examples load as a config showing every field.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs.judge_server import judge_server_thread
from tests.docs.markdown import DOCS, Example, examples
from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply
from tests.support.serve import ENV
from tracescore.schemas.config import ServiceConfig
from tracescore.scoring.runtime.rule_check import rule_errors

PYTHON_PAGE = DOCS / "python.md"


def programs() -> list[Example]:
    """The programs of docs/python.md (a block saved as a file is a module, not a program)."""
    return [e for e in examples(PYTHON_PAGE) if e.language == "python" and e.file_name is None]


@pytest.fixture(scope="module")
def judge_server() -> Iterator[LLMServer]:
    with judge_server_thread() as server:
        yield server


def run_program(example: Example, tmp_path: Path, server: LLMServer) -> list[str]:
    program = tmp_path / "example.py"
    program.write_text(example.text)
    env = {**ENV, "OPENAI_BASE_URL": server.api_base, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        [sys.executable, str(program)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Unclosed" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def test_the_page_has_its_programs() -> None:
    assert len(programs()) == 2
    assert all("asyncio.run(main())" in example.text for example in programs())


def test_the_first_program_scores_a_run(tmp_path: Path, judge_server: LLMServer) -> None:
    lines = run_program(programs()[0], tmp_path, judge_server)
    assert lines[0].startswith("textual-difference 0.")
    assert lines[1] == "short-answer 1.0 {'words': 3}"  # "Paris, dear friend."
    assert judge_server.requests == []  # no judge in it


def test_the_judge_program_runs_with_a_local_judge(tmp_path: Path, judge_server: LLMServer) -> None:
    # The first answer is polite.run(run)'s; in run_evals the two scorers run concurrently on the
    # item, so the judge answers by the schema asked for (the reason step asks for text).
    answers: dict[str, list[dict[str, object]]] = {
        "Politeness": [{"polite": True}, {"polite": False}],
        "Statements": [{"statements": ["Paris."]}],
        "RelevancyResults": [{"results": [{"result": "yes", "reason": "answers it"}]}],
    }

    def respond(body: dict[str, Any]) -> Reply:
        schema = body.get("response_format", {}).get("json_schema", {}).get("name")
        return json_reply(answers[schema].pop(0)) if schema else text_reply("The answer is relevant.")

    judge_server.responder = respond
    lines = run_program(programs()[1], tmp_path, judge_server)
    assert lines[0].startswith("polite: 1.0 tokens: 11 cost: ")  # the server's usage of one answer
    assert float(lines[0].rsplit(" ", 1)[1]) > 0  # priced with litellm's price map
    assert "Paris, dear friend." in "\n".join(lines[1:-1])  # the prompt, the answer inside it
    assert json.loads(lines[-1].replace("'", '"')) == {"polite": 0.0, "answer-relevancy": 1.0}
    assert not any(answers.values())  # every scripted answer was asked for
    assert {request.authorization for request in judge_server.chat_requests} == {"Bearer sk-test"}


def test_every_registered_scorer_is_in_the_catalogue() -> None:
    from tracescore.scoring.prebuilt.registry import registered

    catalogue = (DOCS / "scorers.md").read_text()
    rows = [line for line in catalogue.splitlines() if line.startswith("| `")]
    missing = [
        name
        for name, entry in registered().items()
        if not any(f"`{key}`" in row or f"`{key}," in row for row in rows for key in entry.spec.names)
    ]
    assert missing == []


def test_the_rule_reference_examples_are_valid_config() -> None:
    """Every YAML example of the rules page loads as a config, so the reference cannot drift."""
    blocks = [example.text for example in examples(DOCS / "rules.md") if example.language == "yaml"]
    assert len(blocks) == 3
    for block in blocks:
        config = ServiceConfig.model_validate(yaml.safe_load(block))
        assert config.scoring.rules or config.scoring.redact.active
    # The cascades: every gate resolves (the rules are checked as the service checks them).
    (cascades,) = [yaml.safe_load(block) for block in blocks if "when: {rule" in block]
    assert rule_errors(cascades, ServiceConfig.model_validate(cascades)) == []
    assert sum("when" in rule for rule in cascades["scoring"]["rules"]) == 4
    reference = ServiceConfig.model_validate(yaml.safe_load(blocks[0])).scoring
    first = reference.rules[0]
    documented = {"scorer", "name", "options", "sample_rate", "target", "filter", "budget", "circuit_breaker"}
    assert documented <= first.model_fields_set and reference.rules[-1].use is not None
    assert set(type(first.filter).model_fields) <= first.filter.model_fields_set  # every filter field shown
    assert first.budget is not None and first.budget.model_fields_set == set(type(first.budget).model_fields)
