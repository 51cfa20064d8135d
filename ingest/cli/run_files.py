"""The runs ``tracescore score`` and ``tracescore eval`` read: one input model for offline scoring.

A file (or standard input) holds one of:

- one AgentRun JSON object, as ``tracescore inspect`` prints them;
- a JSON list of AgentRuns: what ``tracescore inspect`` prints;
- JSON Lines: one AgentRun or simple row a line (blank lines skipped);
- a simple row, alone or in JSON Lines: ``{"input": "...", "output": "...", "ground_truth": ...,
  "context": ["..."], "id": ...}`` (``groundTruth`` and ``expected`` are other names of
  ``ground_truth``), which becomes a run of one user message and one assistant message.

Anything else is refused with one line naming the file and the line (or the list index) and these
shapes: unknown keys (in a simple row, or at the top of an AgentRun), an object with neither
``input`` nor ``output`` (nothing a scorer can read), an OTLP/JSON export request (turn it into runs
with ``tracescore inspect`` first). A run of a valid shape whose content is empty is read as it is:
the scorers skip it (``skipped_empty``) as the service would.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from tracescore.ingest.cli.inspect_command import SIGNAL_KEYS, otlp_signals
from tracescore.ingest.cli.json_documents import NotJsonError, json_documents
from tracescore.schemas import AgentRun
from tracescore.schemas.suggest import did_you_mean
from tracescore.scoring.utils import create_agent_test_run

ACCEPTED = (
    "accepted: an AgentRun object, the JSON list `tracescore inspect` prints, or JSON Lines of AgentRuns "
    'or simple rows {"input": "...", "output": "...", "ground_truth": ..., "context": ["..."]}'
)
STDIN = "-"  # the file argument that reads standard input
STDIN_NAME = "stdin"  # how messages name it


class SimpleRow(BaseModel):
    """A question and the answer to score, as data sets are often written."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    input: str
    output: str
    ground_truth: Any = Field(
        default=None, validation_alias=AliasChoices("ground_truth", "groundTruth", "expected")
    )
    context: list[str] = Field(default_factory=list)
    id: str | int | None = None  # the row's own id, echoed in eval's per-item output

    def to_run(self) -> AgentRun:
        """One user message (the input) and one assistant message (the output); no trace ids."""
        return create_agent_test_run(
            input_messages=self.input,
            output=self.output,
            context=self.context,
            ground_truth=self.ground_truth,
            trace_id="",
            span_id="",
        )


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """One run of a run file and where it came from."""

    run: AgentRun
    where: str  # "runs.jsonl:3", "runs.json[2]", "run.json" (a file of one run): how messages name it
    line: int | None  # its line (None for an item of a JSON list)
    row_id: str | int | None = None  # a simple row's "id"


def _run_keys() -> frozenset[str]:
    keys: set[str] = set()
    for name, field in AgentRun.model_fields.items():
        keys.update({name, field.alias or name})
        if isinstance(field.validation_alias, AliasChoices):
            keys.update(str(choice) for choice in field.validation_alias.choices)
    return frozenset(keys)


RUN_KEYS = _run_keys()


def read_run_file(argument: str) -> tuple[list[LoadedRun], bool]:
    """``read_runs`` of the file named on the command line, or of standard input for ``-``."""
    if argument == STDIN:
        return read_runs(STDIN_NAME, sys.stdin.buffer.read())
    return read_runs(argument, Path(argument).read_bytes())


def read_runs(source: str, payload: bytes) -> tuple[list[LoadedRun], bool]:
    """The runs of a run file and whether it held several (a list or JSON Lines: the results are a
    list too). ``source`` names the file in messages. Raises ``ValueError``, one line naming the file
    and the line or index and what is wrong."""
    try:
        documents, whole = json_documents(payload)
    except NotJsonError as exc:
        if exc.line is None:
            raise ValueError(f"{source}: not JSON: {exc.whole_error}") from None
        error = exc.line_error
        problem = f"{error.msg} at column {error.colno}" if isinstance(error, json.JSONDecodeError) else error
        raise ValueError(f"{source}:{exc.line}: not JSON: {problem}") from None
    if not documents:
        raise ValueError(f"{source}: the file is empty; {ACCEPTED}")
    if whole and isinstance(documents[0][1], list):
        items: list[tuple[str, int | None, Any]] = [
            (f"{source}[{index}]", None, item) for index, item in enumerate(documents[0][1])
        ]
        if not items:
            raise ValueError(f"{source}: the list holds no run; {ACCEPTED}")
    elif whole:  # the file is the run: its name says where
        items = [(source, documents[0][0], documents[0][1])]
    else:
        items = [(f"{source}:{line}", line, document) for line, document in documents]
    loaded = []
    for where, line, item in items:
        try:
            run, row_id = _run_of(item, source)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}; {ACCEPTED}") from None
        loaded.append(LoadedRun(run, where, line, row_id))
    return loaded, not whole or isinstance(documents[0][1], list)


def _run_of(item: Any, source: str) -> tuple[AgentRun, str | int | None]:
    """The run an item of the file stands for, and a simple row's id; ``ValueError`` saying why not."""
    if not isinstance(item, Mapping):
        raise ValueError(f"a JSON {_json_type(item)}, not an AgentRun or a simple row")
    keys = set(item)
    if signals := otlp_signals(item):
        inspect_file = "FILE" if source == STDIN_NAME else source
        held = ", ".join(SIGNAL_KEYS[signal] for signal in signals)
        raise ValueError(
            f"an OTLP/JSON export request ({held}), not runs: turn it into AgentRuns with "
            f"`tracescore inspect {inspect_file} > runs.json` and give runs.json"
        )
    if isinstance(item.get("input"), str) or isinstance(item.get("output"), str):
        try:
            row = SimpleRow.model_validate(item)
        except ValidationError as exc:
            raise ValueError(_simple_row_problems(exc)) from None
        return row.to_run(), row.id
    if unknown := sorted(str(key) for key in keys - RUN_KEYS):
        guess = did_you_mean(unknown[0], AgentRun.model_fields)
        raise ValueError(f"unknown keys {', '.join(unknown)}: neither an AgentRun nor a simple row{guess}")
    if not keys & {"input", "output"}:
        raise ValueError('an AgentRun without "input" or "output": nothing a scorer can read')
    try:
        return AgentRun.model_validate(item), None
    except ValidationError as exc:
        raise ValueError(f"not a valid AgentRun: {validation_problems(exc)}") from None


def _simple_row_problems(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    if unknown := sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"):
        guess = did_you_mean(unknown[0], SimpleRow.model_fields)
        return f"unknown keys in a simple row: {', '.join(unknown)}{guess}"
    return f"not a valid simple row: {validation_problems(exc)}"


def validation_problems(exc: ValidationError) -> str:
    """Pydantic's errors on one line: ``field.path: message`` for each, ``;``-separated."""
    problems = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"])
        problems.append(f"{location}: {error['msg']}" if location else error["msg"])
    return "; ".join(problems)


def _json_type(value: Any) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
