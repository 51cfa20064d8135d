"""The embedded engine opened without its own lines on the terminal: what it writes to descriptor 2
goes to the log at debug, anything else written meanwhile is passed on, and a directory another
process holds is seen before the engine starts."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracescore.ingest.store.engine_open import held_by_another, native_stderr_to_log


def test_the_engine_s_lines_go_to_the_log_and_the_rest_to_stderr(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("tests.engine_open")
    with caplog.at_level(logging.DEBUG, logger="tests.engine_open"), native_stderr_to_log(logger):
        os.write(2, b"Code: 76. DB::Exception: Cannot lock file /x/status. (CANNOT_OPEN_FILE)\n")
        os.write(2, b"a line of someone else\n")
    assert capfd.readouterr().err == "a line of someone else\n"
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "chDB: Code: 76. DB::Exception: Cannot lock file /x/status. (CANNOT_OPEN_FILE)")
    ]
    os.write(2, b"after\n")  # descriptor 2 is stderr again
    assert capfd.readouterr().err == "after\n"


def test_a_directory_is_held_while_another_process_holds_its_status_lock(tmp_path: Path) -> None:
    assert not held_by_another(str(tmp_path / "never-opened"))
    (tmp_path / "status").write_text("")
    assert not held_by_another(str(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys\n"
            f"f = open({str(tmp_path / 'status')!r})\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert held_by_another(str(tmp_path))
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert not held_by_another(str(tmp_path))
