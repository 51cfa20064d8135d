"""Runs a document's examples as a reader would: in order, in one directory laid out like a checkout.

The directory has ``deploy/`` (the repository's), ``.venv/bin/tracescore`` and ``bin/tracescore`` (on
the PATH) running this source tree. The environment points the examples at a running service
(``TRACESCORE_URL``, ``OTEL_EXPORTER_OTLP_ENDPOINT``) and litellm's OpenAI provider at a local judge
server (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), as the documentation tells readers to set them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.docs.markdown import REPO, SHELL_LANGUAGES, Example
from tests.support.serve import free_port, stop, wait_healthy
from tracescore.ingest.configuration.config_loader import load_config

EXAMPLE_TIMEOUT_S = 120
_NOT_COPIED = shutil.ignore_patterns("tracescore-data", ".examples")


def sandbox(root: Path) -> Path:
    """A directory laid out like a checkout with ``make run`` done, for the examples to run in."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "deploy").symlink_to(REPO / "deploy")
    # The installed command when there is one (as a reader runs it: the current directory is not on
    # its import path), else the module of this source tree.
    installed = Path(sys.executable).parent / "tracescore"
    runs = f'"{installed}"' if installed.is_file() else f'"{sys.executable}" -m tracescore.ingest.cli'
    for folder in (root / "bin", root / ".venv" / "bin"):
        folder.mkdir(parents=True)
        command = folder / "tracescore"
        command.write_text(f'#!/bin/sh\nexec {runs} "$@"\n')
        command.chmod(0o755)
    return root


@dataclass
class DocumentRun:
    """The examples of one document, run in ``directory`` with ``env``; ``outcomes`` says what
    happened to each (by its place)."""

    directory: Path
    env: dict[str, str]
    outcomes: dict[str, str] = field(default_factory=dict)

    def run(self, example: Example) -> None:
        reason = example.not_run_reason
        if reason is not None:
            self.outcomes[example.where] = f"not run: {reason}"
            return
        if example.language == "text":
            self.outcomes[example.where] = "shown"
            return
        if example.file_name is not None:
            self._check_file(example)
            target = self.directory / example.file_name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(example.text, encoding="utf-8")
            self.outcomes[example.where] = f"saved as {example.file_name}"
            return
        if example.is_service:
            assert example.language in SHELL_LANGUAGES, f"{example.where}: a service is a shell line"
            self._services(example)
        elif example.language in SHELL_LANGUAGES:
            self._shell(example)
        elif example.language == "python":
            self._python(example)
        else:
            self._check_file(example)
        self.outcomes[example.where] = "ran"

    def _check_file(self, example: Example) -> None:
        """A block that is a file's content: a config loads, JSON parses (JSONL line by line), Python
        compiles."""
        if example.language == "yaml":
            path = self.directory / ".examples" / f"line-{example.line}.yaml"
            path.parent.mkdir(exist_ok=True)
            path.write_text(example.text, encoding="utf-8")
            assert isinstance(yaml.safe_load(example.text), dict), f"{example.where}: not a mapping"
            load_config(path, environ={})  # raises ConfigError naming the line
        elif example.language == "json":
            if (example.file_name or "").endswith(".jsonl"):
                for line in example.text.splitlines():
                    json.loads(line)
            else:
                json.loads(example.text)
        elif example.language == "python":
            compile(example.text, example.where, "exec")
        else:
            raise AssertionError(f"{example.where}: a {example.language!r} block is not a file to save")

    def _command(self, example: Example, argv: list[str]) -> None:
        """Runs ``argv`` in the directory; it must exit 0."""
        done = subprocess.run(
            argv, cwd=self.directory, env=self.env, capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT_S
        )
        assert done.returncode == 0, (
            f"{example.where} exited {done.returncode}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-3000:]}"
        )

    def _shell(self, example: Example) -> None:
        self._command(example, ["bash", "-e", "-o", "pipefail", "-c", example.commands()])

    def _python(self, example: Example) -> None:
        program = self.directory / ".examples" / f"line-{example.line}.py"
        program.parent.mkdir(exist_ok=True)
        program.write_text(example.text, encoding="utf-8")
        self._command(example, [sys.executable, str(program)])

    def _services(self, example: Example) -> None:
        """Each command line starts a service, all at once, each in a copy of the directory on free
        ports (its environment names them): each must answer /healthz, and exit 0 when stopped."""
        lines = [line for line in example.commands().splitlines() if line.strip() and line[0] != "#"]
        assert lines, f"{example.where}: no command"
        started = []
        for index, line in enumerate(lines):
            directory = self.directory.parent / f"service-{example.line}-{index}"
            shutil.copytree(self.directory, directory, symlinks=True, ignore=_NOT_COPIED)
            http_port = free_port()
            env = {
                **self.env,
                "TRACESCORE_GRPC_PORT": str(free_port()),
                "TRACESCORE_HTTP_PORT": str(http_port),
            }
            log = directory / "serve.log"
            with log.open("w") as stderr:
                proc = subprocess.Popen(
                    ["bash", "-c", f"exec {line}"],
                    cwd=directory,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                )
            started.append((line, proc, http_port, log))
        try:
            for line, proc, http_port, log in started:
                try:
                    wait_healthy(proc, http_port)
                except AssertionError as exc:
                    raise AssertionError(
                        f"{example.where}: {line}: {exc}\n{log.read_text()[-3000:]}"
                    ) from None
        finally:
            codes = [(line, stop(proc), log) for line, proc, _, log in started]
        for line, code, log in codes:
            assert code == 0, f"{example.where}: {line} exited {code} when stopped\n{log.read_text()[-3000:]}"
