"""The Makefile explains itself: ``make`` alone (its default goal) and ``make help`` list every target
with one line saying what it does, the README names each, and ``make run`` / ``make test`` run the
same commands as ever. Targets are read with ``make -n`` (print, do not run)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAKEFILE = REPO / "Makefile"


def make(*args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def phony_targets() -> list[str]:
    match = re.search(r"^\.PHONY:(.*)$", MAKEFILE.read_text(), re.MULTILINE)
    assert match is not None
    return match.group(1).split()


def listed() -> dict[str, str]:
    """``make help``'s lines: target -> description."""
    return dict(re.findall(r"^  ([a-z-]+) +(\S.*)$", make("help"), re.MULTILINE))


def test_make_help_lists_every_target_with_a_description() -> None:
    targets = phony_targets()
    assert {"help", "run", "test", "lint", "bench", "clean"} <= set(targets)
    assert make("help").startswith("make TARGET, where TARGET is one of:\n")
    assert list(listed()) == targets, "every target, in the Makefile's order"
    assert all(len(text) > 10 for text in listed().values())


def test_make_alone_prints_the_help() -> None:
    assert make() == make("help")


def test_the_readme_names_every_target() -> None:
    readme = REPO.joinpath("README.md").read_text()
    for target in phony_targets():
        assert f"make {target}" in readme, target


def test_make_run_and_make_test_run_the_same_commands_as_ever() -> None:
    # -B: every step, as on a fresh machine
    assert make("-n", "-B", "PYTHON=python3", "run").splitlines() == [
        "python3 -m venv .venv",
        ".venv/bin/python -m pip install --quiet --upgrade pip",
        ".venv/bin/python -m pip install --quiet -e .",
        "touch .venv/.installed",
        ".venv/bin/tracescore demo",
    ]
    assert make("-n", "-B", "test").splitlines()[-3:] == [
        ".venv/bin/python -m pip install --quiet -e '.[test]'",
        "touch .venv/.installed .venv/.installed-test",
        ".venv/bin/python -m pytest -n 3 --dist loadgroup",
    ]


def test_make_test_installs_chromium_first_when_it_is_missing() -> None:
    """The report's browser test needs Chromium: ``make test`` installs it (apt-get, with sudo when not
    root) before anything else; ``make run`` does not need it."""
    steps = make("-n", "-B", "test")
    assert steps.startswith("command -v chromium >/dev/null 2>&1 || {")
    assert "apt-get install -y -qq --no-install-recommends chromium" in steps
    assert "chromium" not in make("-n", "-B", "PYTHON=python3", "run")


def test_a_chromium_that_cannot_be_installed_stops_make_test_naming_the_fix(tmp_path: Path) -> None:
    """No chromium on the PATH and an apt-get that fails: the step fails, saying what to do."""
    for tool in ("id", "env"):
        tmp_path.joinpath(tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    apt_get = tmp_path / "apt-get"
    apt_get.write_text("#!/bin/sh\necho 'E: no network' >&2\nexit 100\n")
    apt_get.chmod(0o755)
    sudo = tmp_path / "sudo"
    sudo.write_text('#!/bin/sh\nexec "$@"\n')
    sudo.chmod(0o755)
    done = subprocess.run(
        [shutil.which("make") or "make", "--no-print-directory", "-C", str(REPO), "chromium"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(tmp_path)},
    )
    assert done.returncode != 0
    assert "make test: installing Chromium for the report's browser test" in done.stdout
    assert "could not install Chromium; install it (apt-get install chromium, as root)" in done.stderr
