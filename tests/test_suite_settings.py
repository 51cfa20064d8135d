"""The suite's own settings that keep it trustworthy on a busy machine."""

from hypothesis import settings


def test_hypothesis_examples_have_no_deadline() -> None:
    """Speed is no property of a Hypothesis test here (it lives in ``make bench``): an example that
    takes seconds on a loaded machine must not fail the suite."""
    assert settings.default is not None and settings.default.deadline is None
    assert settings().deadline is None  # what ``@settings(max_examples=...)`` starts from
