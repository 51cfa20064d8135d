"""The quick checks as registered, for the check tests to build them through ``build_scorer``."""

from __future__ import annotations

from tracescore.scoring.prebuilt.registry import SCORERS, ScorerFactory

# The checks as registered (their short names are Mastra's ids).
REGISTRY: dict[str, ScorerFactory] = {
    name: factory for name, factory in SCORERS.items() if name.startswith("check-")
}
assert len(REGISTRY) == 11, sorted(REGISTRY)  # Mastra 1.10.2 has eleven checks
