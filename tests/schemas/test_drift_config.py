"""The drift section: durations, a fixed reference period, webhooks, and the example of
docs/watching-scores.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ConfigError

WATCHING_PAGE = Path(__file__).resolve().parents[2] / "docs" / "watching-scores.md"


def test_durations_take_units_and_seconds(tmp_path: Path) -> None:
    config = load_config(overrides={"drift.window": "90m", "drift.baseline": "2w", "drift.interval": 30})
    assert (config.drift.window, config.drift.baseline, config.drift.interval) == (5_400, 1_209_600, 30)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("drift.window", "soon", "drift.window: 'soon' is not a duration"),
        ("drift.baseline", "0h", "drift.baseline: Input should be greater than 0"),
        ("drift.alpha", 1.5, "drift.alpha: Input should be less than 1"),
        ("drift.webhooks", [{"url": "not a url"}], "drift.webhooks.0.url"),
        (
            "drift.reference",
            {"start": "2026-11-08T00:00Z", "end": "2026-11-01T00:00Z"},
            "start must be before end",
        ),
    ],
)
def test_bad_drift_settings_name_the_key(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(overrides={key: value})


def test_the_documented_drift_example_is_valid_config(tmp_path: Path) -> None:
    text = WATCHING_PAGE.read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("drift:"))
    path = tmp_path / "drift.yaml"
    path.write_text(block)
    drift = load_config(path).drift
    assert yaml.safe_load(block)["drift"].keys() == drift.model_fields_set
    assert [(w.label, w.format) for w in drift.webhooks] == [("ops", "json"), ("slack", "slack")]
    assert drift.retry_backoff == 1.0 and drift.cooldown == 3_600.0
