"""Every example of README.md and docs/ runs as written (see tests/docs/markdown.py for what "runs"
means per language and how a block is marked not to run, with its reason).

One ``tracescore serve`` (the embedded store, the default rules) stands for the service a reader has
running, and one local judge server for their LLM provider. Each document's examples run in order in a
directory of their own; the documents run side by side, and each has its test.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.docs.judge_server import judge_server_thread
from tests.docs.markdown import RUN_LANGUAGES, SHOWN_LANGUAGES, documents, examples, name
from tests.docs.runner import DocumentRun, sandbox
from tests.support.serve import ENV, free_port, start_serve, stop, wait_healthy, wait_ready

pytestmark = pytest.mark.xdist_group("docs")  # one served instance for every document

MARKS = ("not run:", "file ", "service")
KNOWN = RUN_LANGUAGES + SHOWN_LANGUAGES
MIN_REASON_WORDS = 4
DOCUMENTS_AT_ONCE = 3


def test_every_block_has_a_language_and_every_mark_is_known() -> None:
    wrong = []
    for path in documents():
        for example in examples(path):
            if example.language not in KNOWN:
                wrong.append(f"{example.where}: language {example.language!r}, not one of {KNOWN}")
            if example.mark is None:
                continue
            if not example.mark.startswith(MARKS):
                wrong.append(f"{example.where}: unknown mark {example.mark!r}")
            reason = example.not_run_reason
            if reason is not None and len(reason.split()) < MIN_REASON_WORDS:
                wrong.append(f"{example.where}: say why it is not run, not {reason!r}")
            if example.language == "text" and reason is None:
                wrong.append(f"{example.where}: a text block is never run; a mark means nothing on it")
    assert wrong == []


@pytest.fixture(scope="module")
def reader_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a reader with ``tracescore serve`` running and an OpenAI-compatible judge."""
    with judge_server_thread() as judge:
        judge_env = {**ENV, "OPENAI_BASE_URL": judge.api_base, "OPENAI_API_KEY": "sk-docs-test"}
        store = tmp_path_factory.mktemp("served") / "tracescore-data"
        grpc_port = free_port()
        proc, http_port = start_serve(store, "--idle", "0.5", grpc_port=grpc_port, env=judge_env)
        try:
            base = wait_healthy(proc, http_port)
            wait_ready(base)
            yield {
                **judge_env,
                "TRACESCORE_URL": base,
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{grpc_port}",
                "COLUMNS": "120",
            }
        finally:
            stop(proc)


Outcomes = tuple[dict[str, str], str | None]  # what happened to each example; the failure, if any


def run_document(path: Path, directory: Path, reader_env: dict[str, str]) -> Outcomes:
    """The outcome of each example of ``path``, and the failure that stopped them (None: none did)."""
    sandbox(directory)
    env = {**reader_env, "PATH": f"{directory / 'bin'}:{reader_env['PATH']}"}
    # The reader's default stores (serve's, demo's), a home of the document's own.
    env["XDG_DATA_HOME"] = str(directory / "data-home")
    run = DocumentRun(directory, env)
    try:
        for example in examples(path):
            run.run(example)
    except Exception:
        return run.outcomes, traceback.format_exc()
    return run.outcomes, None


@pytest.fixture(scope="module")
def document_runs(
    reader_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[Path, Outcomes]:
    root = tmp_path_factory.mktemp("checkouts")
    paths = documents()
    with ThreadPoolExecutor(DOCUMENTS_AT_ONCE) as pool:
        futures = {
            path: pool.submit(run_document, path, root / str(i), reader_env) for i, path in enumerate(paths)
        }
        return {path: future.result() for path, future in futures.items()}


@pytest.mark.timeout(600)  # the first one waits for every document (under a minute on an idle machine)
@pytest.mark.parametrize("path", documents(), ids=name)
def test_the_examples_run_as_written(path: Path, document_runs: dict[Path, Outcomes]) -> None:
    outcomes, failure = document_runs[path]
    assert failure is None, failure
    # Every block has an outcome: run, saved, shown, or not run with its reason; none left out.
    assert list(outcomes) == [example.where for example in examples(path)]
