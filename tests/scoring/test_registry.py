"""The registry: derived from one declaration per scorer, loaded lazily, and open to a team's own
scorers named ``package.module:factory`` (options validated like a built-in's)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.scoring.llm_cases import CASES as LLM_CASES
from tests.support.runs import agent_run
from tracescore import schemas
from tracescore.scoring.prebuilt.registry import (
    SCORERS,
    build_scorer,
    canonical_id,
    read_as,
    registered,
    stored_ids,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CUSTOM = "tests.scoring.custom_scorers:create_answer_length_scorer"


def test_importing_scoring_loads_no_scorer_module_nor_scipy() -> None:
    probe = (
        "import sys, tracescore.scoring as scoring\n"
        "from tracescore.scoring import create_scorer, run_evals, Judge\n"
        "registry = 'tracescore.scoring.prebuilt.registry'  # the catalogue of names, not a scorer\n"
        "prebuilt = [m for m in sys.modules\n"
        "            if m.startswith('tracescore.scoring.prebuilt.') and m != registry]\n"
        "loaded = prebuilt + [m for m in sys.modules if m.split('.')[0] == 'scipy']\n"
        "print(len(loaded), loaded[:5])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT_ROOT, check=True
    )
    assert done.stdout.strip() == "0 []"


def test_every_scorer_is_declared_once_with_one_name_that_is_its_id() -> None:
    entries = registered()
    assert len(entries) == len(SCORERS) == 59
    names = [entry.spec.name for entry in entries.values()]
    former = [entry.spec.former_id for entry in entries.values() if entry.spec.former_id]
    assert len(set(names)) == len(names) and len(set(former)) == len(former)
    assert not set(names) & set(former)  # a former id never names another scorer
    assert len(former) == 36  # the Mastra, autoevals, Ragas and VoltAgent ids stored before
    # The id a factory builds with is its name: there is no second place to get wrong.
    options = {case.name: case.options for case in LLM_CASES}  # every LLM judge, with its options
    options.update(
        {
            "tool-call-accuracy-code": {"expected_tool": "t"},
            "voltagent-tool-call-accuracy": {"expected_tool": "t"},
            "check-includes": {"expected": "x"},
            "check-excludes": {"unwanted": "x"},
            "check-equals": {"expected": "x"},
            "check-matches": {"pattern": "x"},
            "check-similarity": {"expected": "x"},
            "check-called-tool": {"tool_name": "t"},
            "check-did-not-call": {"tool_name": "t"},
            "check-tool-order": {"expected_order": ["t"]},
            "check-max-tool-calls": {"max": 1},
        }
    )
    for name, entry in entries.items():
        scorer = build_scorer(name, options.get(name), default_judge={"model": "openai/gpt-4o-mini"})
        assert scorer.id == name == entry.spec.id, name


def test_a_scorer_is_found_by_name_former_id_or_module_factory() -> None:
    assert build_scorer("textual-difference").id == "textual-difference"
    assert build_scorer("textual-difference-scorer").id == "textual-difference"
    assert build_scorer("exactMatch").id == "exact-match"
    assert build_scorer("check-includes", {"expected": "x"}).id == "check-includes"
    own = build_scorer(CUSTOM, {"targetWords": 10})
    assert (own.id, own.version) == ("answer-length", "2.1.0")


async def test_a_teams_scorer_scores_through_the_same_validated_path() -> None:
    own = build_scorer(CUSTOM, {"target_words": 4})
    result = await own.run(agent_run("q", "one two three four five six"))
    assert (result.score, result.label) == (1.0, "long enough")
    score = result.to_score()
    assert (score.value, score.label, score.scale) == (1.0, "long enough", 1.0)


@pytest.mark.parametrize(
    ("reference", "options", "message"),
    [
        (
            CUSTOM,
            {"target_words": 4, "colour": "red"},
            "has no option 'colour' (its options: target_words, version)",
        ),
        (
            CUSTOM,
            {"target_words": "many"},
            "invalid options: 'target_words': Input should be a valid integer, unable to parse string as an "
            "integer (got 'many')",
        ),
        (CUSTOM, {}, "invalid options: 'target_words' is required"),
        (CUSTOM, {"target_words": 0}, "target_words must be positive"),  # the factory's own check
        ("tests.scoring.custom_scorers:no_such_factory", {}, "has no 'no_such_factory'"),
        ("tests.scoring.no_such_module:create", {}, "cannot import 'tests.scoring.no_such_module'"),
        ("not a reference:", {}, "must look like 'package.module:factory'"),
        ("tests.scoring.custom_scorers:CUSTOM_CONSTANT", {}, "is not a function returning a Scorer"),
        ("tests.scoring.custom_scorers:create_nothing", {}, "the factory returned str, not a Scorer"),
    ],
)
def test_a_bad_reference_or_option_is_a_clear_error(
    reference: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_scorer(reference, options)


def test_the_version_is_the_packages() -> None:
    declared = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert schemas.__version__ == version("tracescore") == declared


def test_reads_match_a_scorer_by_its_name_and_by_the_id_it_was_stored_under_before() -> None:
    assert stored_ids("content-similarity") == ["content-similarity", "content-similarity-scorer"]
    assert stored_ids("content-similarity-scorer") == ["content-similarity", "content-similarity-scorer"]
    assert stored_ids("exact-match") == ["exact-match", "exactMatch"]
    assert stored_ids("check-includes") == ["check-includes"]  # its name was always its id
    assert stored_ids("my-own-rule") == ["my-own-rule"]
    assert canonical_id("toxicity-scorer") == "toxicity"
    assert canonical_id("toxicity") == "toxicity"
    assert canonical_id("my-own-rule") == "my-own-rule"
    renamed = {"toxicity-scorer": "toxicity"}
    assert read_as("toxicity-scorer", renamed) == ("toxicity-scorer", "toxicity")
    assert read_as("toxicity", renamed) == ("toxicity",)
