"""A scorer's derived version: it changes when a prompt, an option or the judge model changes, and
only then; it is the same in every process."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tracescore.schemas.config import JudgeConfig, ScorerRule
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.runtime.rule_routing import build_rules

JUDGE = JudgeConfig(model="openai/gpt-4o-mini")
VERSION = re.compile(r"(?P<code>[^+]+)\+(?P<config>[0-9a-f]{8})")


def version_of(reference: str, options: dict[str, Any] | None = None, judge: JudgeConfig = JUDGE) -> str:
    key = "use" if ":" in reference else "scorer"
    rule = ScorerRule.model_validate({key: reference, "options": options or {}})
    [[built]] = build_rules([rule], judge=judge)
    return built.version


def test_a_prebuilt_scorer_is_its_declared_version_and_a_hash_of_its_configuration() -> None:
    match = VERSION.fullmatch(version_of("toxicity"))
    assert match is not None and match["code"] == "1"


def test_the_same_rule_gives_the_same_version_and_an_edit_another() -> None:
    same = version_of("toxicity")
    assert version_of("toxicity") == same
    assert version_of("toxicity", {"scale": 2}) != same  # an option
    assert version_of("toxicity", {"judge": "openai/gpt-4o"}) != same  # the judge model
    assert version_of("toxicity", judge=JudgeConfig(model="anthropic/claude-3-5-haiku")) != same
    # How the judge is reached is not what it says: a key or an endpoint leaves the version alone.
    assert version_of("toxicity", {"judge": {"model": "openai/gpt-4o-mini", "api_key": "sk-x"}}) == same
    keyed = JudgeConfig.model_validate(
        {"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9", "api_key": "sk-y"}
    )
    assert version_of("toxicity", judge=keyed) == same


def test_a_default_spelt_out_is_the_same_version() -> None:
    assert version_of("toxicity", {"scale": 1}) == version_of("toxicity")
    assert version_of("textual-difference") != version_of("toxicity")


def test_the_version_is_the_same_in_another_process() -> None:
    here = version_of("faithfulness", {"scale": 3})
    code = (
        "from tracescore.schemas.config import JudgeConfig, ScorerRule\n"
        "from tracescore.scoring.runtime.rule_routing import build_rules\n"
        "rule = ScorerRule(scorer='faithfulness', options={'scale': 3})\n"
        "print(build_rules([rule], judge=JudgeConfig(model='openai/gpt-4o-mini'))[0][0].version)\n"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == here


JUDGE_MODULE = """
from tracescore.scoring import Scorer
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec
from pydantic import BaseModel


class Verdict(BaseModel):
    verdict: str


POLITE = JudgeTemplate(
    ScorerSpec(name="polite-{tag}", title="Polite", description="Is the answer polite?"),
    __package__,
    "polite",
    analyze=Ask("Judge the answer's politeness", Verdict),
)


def create_polite_scorer(judge: Judge) -> Scorer:
    return POLITE.scorer(judge, needs={{"output"}}, score=lambda ctx: 1.0)
"""


def write_judge_package(root: Path, tag: str) -> Path:
    """A package holding a judge template and its prompt files (as a prebuilt judge keeps them)."""
    package = root / f"politejudge_{tag}"
    (package / "prompts" / "polite").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "judge.py").write_text(JUDGE_MODULE.format(tag=tag))
    (package / "prompts" / "polite" / "instructions.txt").write_text("You grade politeness.\n")
    (package / "prompts" / "polite" / "analyze.txt").write_text("Is this polite?\n{{output}}\n")
    return package


def test_an_edit_of_a_judge_prompt_file_changes_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    package = write_judge_package(tmp_path, "a")
    reference = "politejudge_a.judge:create_polite_scorer"
    before = version_of(reference)
    assert version_of(reference) == before
    (package / "prompts" / "polite" / "analyze.txt").write_text("Is this answer polite?\n{{output}}\n")
    load_prompt.cache_clear()  # a new process reads the file again
    after = version_of(reference)
    assert after != before
    # The code part is the same (a hash of the factory's module, which did not change).
    assert VERSION.fullmatch(after)["code"] == VERSION.fullmatch(before)["code"]  # type: ignore[index]


USER_MODULE = """
from tracescore.scoring import Scorer, create_scorer


def create_shouting_scorer(limit: float = 0.5{declared}) -> Scorer:
    return create_scorer(id="shouting", description="capitals", needs={{"output"}}{version}).generate_score(
        lambda ctx: {body}
    )
"""


def write_user_module(root: Path, name: str, body: str, declared: bool) -> None:
    text = USER_MODULE.format(
        declared=', version: str = "3"' if declared else "",
        version=", version=version" if declared else "",
        body=body,
    )
    (root / f"{name}.py").write_text(textwrap.dedent(text))


def test_a_team_scorer_without_a_version_is_a_hash_of_its_module_source(tmp_path: Path) -> None:
    write_user_module(tmp_path, "shout_a", "1.0", declared=False)
    write_user_module(tmp_path, "shout_b", "0.0", declared=False)  # the same module, edited
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from tracescore.schemas.config import ScorerRule\n"
        "from tracescore.scoring.runtime.rule_routing import build_rules\n"
        "for name in sys.argv[2:]:\n"
        "    print(build_rules([ScorerRule(use=name + ':create_shouting_scorer')])[0][0].version)\n"
    )
    args = [sys.executable, "-c", code, str(tmp_path), "shout_a", "shout_b", "shout_a"]
    a, b, again = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()
    assert a == again
    match_a, match_b = VERSION.fullmatch(a), VERSION.fullmatch(b)
    assert match_a is not None and match_b is not None
    assert re.fullmatch(r"src-[0-9a-f]{8}", match_a["code"])
    assert match_a["code"] != match_b["code"]  # the code changed
    assert match_a["config"] == match_b["config"]  # the options did not


def test_a_team_scorer_declaring_a_version_keeps_it_across_code_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    write_user_module(tmp_path, "shout_c", "1.0", declared=True)
    write_user_module(tmp_path, "shout_d", "0.0", declared=True)
    c, d = version_of("shout_c:create_shouting_scorer"), version_of("shout_d:create_shouting_scorer")
    assert c == d and VERSION.fullmatch(c)["code"] == "3"  # type: ignore[index]
    assert version_of("shout_c:create_shouting_scorer", {"limit": 0.7}) != c
