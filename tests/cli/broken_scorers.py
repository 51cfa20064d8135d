"""A scorer factory with a bug, for the command's handling of unexpected errors."""

from __future__ import annotations

from tracescore.scoring.framework.scorer import Scorer


def create_broken_scorer() -> Scorer:
    raise RuntimeError("the factory is broken")
