"""The rules of a config checked when it loads: every rule's errors at once, each at its key (which
``load_config`` turns into file:line), also when other parts of the config are invalid."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ConfigError
from tracescore.scoring.runtime.rule_check import rule_errors


def test_each_rule_s_scorer_and_options_at_their_keys() -> None:
    data = {
        "scoring": {
            "rules": [
                {"scorer": "tonee"},
                {"use": "no_such_module:factory"},
                {"scorer": "check-includes", "options": {"expectd": "x", "ignoreCase": "maybe"}},
                {"scorer": "toxicity"},  # asks a judge; none is configured
                {"scorer": "textual-difference", "options": "not a mapping"},  # the model's to say
                "not a rule",
            ]
        }
    }
    found = [(location, why[:40]) for location, why in rule_errors(data, None)]
    assert found == [
        (("scoring", "rules", 0, "scorer"), "unknown scorer 'tonee'; did you mean 'to"),
        (("scoring", "rules", 1, "use"), "scorer 'no_such_module:factory': cannot "),
        (("scoring", "rules", 2, "options", "expectd"), "scorer 'check-includes' has no option 'e"),
        (("scoring", "rules", 2, "options", "ignoreCase"), "scorer 'check-includes': invalid options"),
        (("scoring", "rules", 3, "scorer"), "scorer 'toxicity' asks an LLM judge: giv"),
    ]
    # With a judge named (even in a section with errors of its own), LLM rules have one.
    judged = {
        "scoring": {
            "judge": {"model": "openai/gpt-4o-mini", "timeout": "x"},
            "rules": [{"scorer": "toxicity"}],
        }
    }
    assert rule_errors(judged, None) == []


def test_load_config_reports_the_rules_with_the_model_s_errors(tmp_path: Path) -> None:
    config = tmp_path / "t.yaml"
    config.write_text("scoring:\n  sampling_salt: 3\n  rules:\n    - scorer: tonee\n      sample_rate: 5\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config, environ={}, checks=rule_errors)
    assert str(caught.value).splitlines()[1:] == [
        f"  {config}:2: scoring.sampling_salt: Input should be a valid string (got 3)",
        f"  {config}:4: scoring.rules[0] (tonee): scorer: unknown scorer 'tonee'; did you mean 'tone'? "
        "('tracescore scorers' lists all 59)",
        f"  {config}:5: scoring.rules[0] (tonee): sample_rate: Input should be less than or equal to 1 "
        "(got 5)",
    ]
    # Without the check, the model's errors alone (the library's own load_config).
    with pytest.raises(ConfigError) as model_only:
        load_config(config, environ={})
    assert "tonee'; did you mean" not in str(model_only.value)
