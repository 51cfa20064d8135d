"""Ready-made scorers, by family; each module registers its scorers where they are defined.

Import a factory from its module, or by name from here (``from tracescore.scoring.prebuilt import
create_textual_difference_scorer``): names are looked up in the registry on first use, so importing
this package does not import every scorer.
"""

from __future__ import annotations

from tracescore.scoring.prebuilt.registry import ScorerFactory, find_factory, registered


def __getattr__(name: str) -> ScorerFactory:
    factory = find_factory(name)
    if factory is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return factory


def __dir__() -> list[str]:
    return sorted(entry.factory.__name__ for entry in registered().values())
