"""The one prompt renderer: template files with {{name}} placeholders and {{> part}} includes, strict."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracescore.scoring.framework.prompt_templates import PromptError, load_prompt, template


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A throwaway package ``judges_under_test`` with a ``prompts/`` folder."""
    root = tmp_path / "judges_under_test"
    (root / "prompts" / "shared").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    load_prompt.cache_clear()
    sys.modules.pop("judges_under_test", None)


def test_placeholders_are_replaced_and_the_rest_kept_byte_for_byte(package: Path) -> None:
    (package / "prompts" / "extract.txt").write_text(
        'Extract claims.\nExample: {\n  "claims": []\n}\n{{\n  "nested": {{}}\n}}\nText:\n{{ output }}\n'
    )
    prompt = load_prompt("judges_under_test", "extract")
    assert prompt.variables == {"output"}
    rendered = prompt.render(output="The sky is {{blue}}.")  # a value is never read as a template
    assert rendered == (
        'Extract claims.\nExample: {\n  "claims": []\n}\n{{\n  "nested": {{}}\n}}\nText:\n'
        "The sky is {{blue}}."
    )


def test_includes_put_shared_text_in_one_file(package: Path) -> None:
    (package / "prompts" / "shared" / "rules.txt").write_text("- be precise\n- cite {{source}}\n")
    (package / "prompts" / "a.txt").write_text("A rules:\n{{> shared/rules}}\nEnd A\n")
    (package / "prompts" / "b.txt").write_text("B rules:\n{{>shared/rules}}\n")
    a = load_prompt("judges_under_test", "a").render(source="the context")
    b = load_prompt("judges_under_test", "b").render(source="the docs")
    assert a == "A rules:\n- be precise\n- cite the context\nEnd A"
    assert b == "B rules:\n- be precise\n- cite the docs"


def test_one_trailing_newline_is_the_editors_and_a_second_one_is_kept(package: Path) -> None:
    (package / "prompts" / "one.txt").write_text("text\n")
    (package / "prompts" / "two.txt").write_text("text\n\n")
    assert load_prompt("judges_under_test", "one").render() == "text"
    assert load_prompt("judges_under_test", "two").render() == "text\n"


def test_rendering_is_strict(package: Path) -> None:
    (package / "prompts" / "p.txt").write_text("{{a}} and {{{b}}}")
    prompt = load_prompt("judges_under_test", "p")
    assert prompt.render(a="1", b="2") == "1 and 2"
    with pytest.raises(PromptError, match=r"no value for \['b'\]"):
        prompt.render(a="1")
    with pytest.raises(PromptError, match=r"values \['c'\] are not in the template"):
        prompt.render(a="1", b="2", c="3")
    with pytest.raises(PromptError, match="a is int, not a string"):
        prompt.render(a=1, b="2")  # type: ignore[arg-type]


def test_missing_and_circular_templates_are_clear_errors(package: Path) -> None:
    (package / "prompts" / "loop.txt").write_text("{{> loop2}}")
    (package / "prompts" / "loop2.txt").write_text("{{> loop}}")
    with pytest.raises(PromptError, match="no prompt 'absent'"):
        load_prompt("judges_under_test", "absent")
    with pytest.raises(PromptError, match="includes itself: loop -> loop2 -> loop"):
        load_prompt("judges_under_test", "loop")


def test_a_template_from_text_takes_no_includes() -> None:
    assert template("yaml", "Q: {{{input}}}").render(input="why?") == "Q: why?"
    with pytest.raises(PromptError, match="includes need a template file"):
        template("yaml", "{{> part}}")
