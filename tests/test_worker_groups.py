"""``make test`` relies on pytest-xdist keeping each ``xdist_group`` on one worker (tests/conftest.py: the
timed end-to-end tests one after another, a module's expensive fixture built once). Some pytest and
xdist releases drop the groups without a word (pytest-dev/pytest-xdist#1386); this test notices."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name == "test_grouped.py":
            item.add_marker(pytest.mark.xdist_group("together"))
"""
TESTS = "import time\n" + "".join(f"def test_{i}():\n    time.sleep(0.05)\n" for i in range(8))


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_grouped.py").write_text(TESTS)
    (tmp_path / "test_loose.py").write_text(TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = {"test_grouped.py": set(), "test_loose.py": set()}
    for worker, module in re.findall(r"\[(gw\d)\] \[ *\d+%\] PASSED (test_\w+\.py)::", done.stdout):
        workers[module].add(worker)
    assert len(workers["test_grouped.py"]) == 1, done.stdout
    assert len(workers["test_grouped.py"] | workers["test_loose.py"]) == 2, done.stdout  # both ran tests
