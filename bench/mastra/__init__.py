"""The published ``@mastra/evals`` code scorers, timed in Node for ``bench.micro``.

``package.json`` pins @mastra/evals 1.10.2 and @mastra/core 1.71.0 (the versions the parity fixtures
were computed with), ``package-lock.json`` everything below them; ``npm ci`` installs them into
``node_modules`` (not committed) the first time. ``time_scorers.mjs`` times one cell per request.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import TracebackType
from typing import IO, Any

HERE = Path(__file__).resolve().parent
NODE = shutil.which("node") or "/usr/bin/node"
NPM_CI_TIMEOUT_SECONDS = 600


def ensure_installed() -> None:
    """``npm ci`` into ``bench/mastra/node_modules`` when it is missing (fails loudly if npm does)."""
    if (HERE / "node_modules" / "@mastra" / "evals" / "package.json").exists():
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
        cwd=HERE,
        check=True,
        timeout=NPM_CI_TIMEOUT_SECONDS,
    )


class MastraTimer:
    """A Node process running ``time_scorers.mjs``; ``time`` sends it one cell and waits for the answer."""

    def __init__(self) -> None:
        ensure_installed()
        self.version = subprocess.run(
            [NODE, "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
        self._process = subprocess.Popen(
            [NODE, str(HERE / "time_scorers.mjs")],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def time(
        self, cell: str, scorer: str, pairs: tuple[tuple[str, str], ...], **timing: float
    ) -> dict[str, Any]:
        """Mastra's ``scorer`` on these (input, output) pairs: ``{"scores": [...], "seconds_per_call": t}``"""
        request = {
            "id": cell,
            "scorer": scorer,
            "pairs": [{"input": user, "output": answer} for user, answer in pairs],
            **timing,
        }
        stdin: IO[str] | None = self._process.stdin
        stdout: IO[str] | None = self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"{cell}: the Node timer exited (code {self._process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{cell}: Mastra's scorer failed in Node: {answer['error']}")
        return answer

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> MastraTimer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
