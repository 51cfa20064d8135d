"""``tracescore.scoring.prebuilt`` offers every registered factory, and type checkers see each one's own
signature there, not the registry's generic ``Callable[..., Scorer]``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tracescore.scoring import prebuilt
from tracescore.scoring.prebuilt.registry import registered

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REVEALED = re.compile(r'^[^:]+:(\d+): note: Revealed type is "(.*)"$')


def test_the_package_offers_every_registered_factory() -> None:
    factories = {entry.factory.__name__: entry.factory for entry in registered().values()}
    assert sorted(prebuilt.__all__) == sorted(factories)
    assert all(getattr(prebuilt, name) is factory for name, factory in factories.items())


def revealed_types(program: str, tmp_path: Path) -> dict[int, str]:
    """mypy's revealed types in ``program``, by line, with the project's own settings."""
    probe = tmp_path / "probe.py"
    probe.write_text(program)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", str(probe)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    found = {int(m[1]): m[2] for line in done.stdout.splitlines() if (m := REVEALED.match(line))}
    assert found, done.stdout + done.stderr
    return found


def test_type_checkers_see_each_factory_s_own_signature_in_the_package(tmp_path: Path) -> None:
    factories = sorted((entry.factory.__module__, entry.factory.__name__) for entry in registered().values())
    lines = [
        "from tracescore.scoring import prebuilt",
        "from tracescore.scoring.prebuilt.registry import ScorerFactory",
    ]
    pairs: dict[str, tuple[int, int]] = {}
    for index, (module, name) in enumerate(factories):
        lines.append(f"from {module} import {name} as own_{index}")
        lines.append(f"reveal_type(prebuilt.{name})")
        lines.append(f"reveal_type(own_{index})")
        pairs[name] = (len(lines) - 1, len(lines))
    lines.append("def generic(factory: ScorerFactory) -> None:")
    lines.append("    reveal_type(factory)")
    found = revealed_types("\n".join(lines) + "\n", tmp_path)
    generic = found[len(lines)]
    assert generic.startswith("def (*Any, **Any)")  # what a lookup in the registry is typed as
    seen = {name: (found[through_package], found[own]) for name, (through_package, own) in pairs.items()}
    assert {name: package for name, (package, own) in seen.items() if package != own} == {}
    assert [name for name, (package, _) in seen.items() if package == generic] == []
    # One in full, written out here: options, their types and defaults.
    own = r"def \(threshold: (builtins\.)?float \| None =\) -> tracescore\.scoring\.framework\.scorer\.Scorer"
    assert re.fullmatch(own, seen["create_numeric_diff_scorer"][0])
