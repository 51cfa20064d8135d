"""``tracescore score`` and ``tracescore eval`` read the same inputs, and never invent a score.

Each case runs the real command in its own process (in ``tmp_path``, so messages name files as given):
inputs no scorer can read are refused with the file, the line or index, and the accepted shapes;
the list ``tracescore inspect`` prints and JSON Lines are read by both; a run without content is
skipped (``skipped_empty``) as the service would skip it, never scored.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.eval_table import eval_table_rows
from tests.support.fixture_files import OTLP_DIR, PARITY_CASES, PARITY_SCORES
from tests.support.serve import ENV

GENAI_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
ACCEPTED = (
    "accepted: an AgentRun object, the JSON list `tracescore inspect` prints, or JSON Lines of AgentRuns "
    'or simple rows {"input": "...", "output": "...", "ground_truth": ..., "context": ["..."]}'
)
GOOD_ROW = {"input": "What is the capital of France?", "output": "Paris."}
# A run whose spans carried no message text (content capture off), as `tracescore inspect` prints it.
EMPTY_RUN = {
    "trace_id": "c" * 32,
    "span_id": "d" * 16,
    "input": {"input_messages": []},
    "output": [],
    "content_missing": True,
}
EMPTY_REASON = "run has no input or output text (content capture off or redacted)"
# The scorers that scored such runs a perfect 1.0 before.
TEXT_SCORERS = ("textual-difference", "content-similarity", "completeness")


def cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracescore.ingest.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**ENV, "COLUMNS": "200"},
    )


def jsonl(tmp_path: Path, name: str, rows: list[Any]) -> str:
    (tmp_path / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    return name


def otlp_request() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(GENAI_MAIN.read_text())
    return document


BAD_ITEMS: dict[str, tuple[Any, str]] = {
    "foo": ({"foo": 1}, "unknown keys foo: neither an AgentRun nor a simple row"),
    "question-answer": (
        {"question": "What is 2+2?", "answer": "4"},
        "unknown keys answer, question: neither an AgentRun nor a simple row",
    ),
    "trace-id-only": (
        {"trace_id": "x"},
        'an AgentRun without "input" or "output": nothing a scorer can read',
    ),
}


@pytest.mark.parametrize("command", ["score", "eval"])
@pytest.mark.parametrize("case", sorted(BAD_ITEMS))
def test_an_item_no_scorer_can_read_is_refused_naming_the_line_and_the_shapes(
    tmp_path: Path, command: str, case: str
) -> None:
    item, problem = BAD_ITEMS[case]
    for name, rows, where in [
        ("rows.jsonl", [GOOD_ROW, item], "rows.jsonl:2"),
        ("row.json", [item], "row.json"),  # a file holding just the item: the file names it
        ("rows.json", None, "rows.json[1]"),  # a JSON list: its index names it
    ]:
        if rows is None:
            (tmp_path / name).write_text(json.dumps([GOOD_ROW, item], indent=2))
        else:
            jsonl(tmp_path, name, rows)
        if command == "score":
            done = cli(tmp_path, "score", "textual-difference", "--run", name)
        else:
            done = cli(tmp_path, "eval", "--data", name, "--scorer", "textual-difference")
        assert (done.returncode, done.stdout) == (2, ""), name
        assert done.stderr == f"tracescore: error: {where}: {problem}; {ACCEPTED}\n"


def test_a_misspelt_agent_run_key_is_refused_not_read_as_an_empty_run(tmp_path: Path) -> None:
    run = {"input": {"input_messages": [{"role": "user", "content": "Hi"}]}, "ouput": [{"role": "assistant"}]}
    done = cli(tmp_path, "score", "textual-difference", "--run", jsonl(tmp_path, "run.json", [run]))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "tracescore: error: run.json: unknown keys ouput: neither an AgentRun nor a simple row; "
        f"did you mean 'output'?; {ACCEPTED}\n"
    )


def test_an_otlp_export_request_is_refused_with_the_inspect_command_to_run(tmp_path: Path) -> None:
    shutil.copy(GENAI_MAIN, tmp_path / "trace.json")
    hint = (
        "an OTLP/JSON export request (resourceSpans), not runs: turn it into AgentRuns with "
        "`tracescore inspect trace.json > runs.json` and give runs.json"
    )
    scored = cli(tmp_path, "score", "textual-difference", "--run", "trace.json")
    assert (scored.returncode, scored.stdout) == (2, "")
    assert scored.stderr == f"tracescore: error: trace.json: {hint}; {ACCEPTED}\n"
    evaluated = cli(tmp_path, "eval", "--data", "trace.json", "--scorer", "textual-difference")
    assert (evaluated.returncode, evaluated.stdout) == (2, "")
    assert evaluated.stderr == f"tracescore: error: trace.json: {hint}; {ACCEPTED}\n"

    # The Collector's file exporter writes one request a line; piped in, the file has no name to give.
    piped = cli(
        tmp_path,
        "score",
        "textual-difference",
        "--run",
        "-",
        stdin=json.dumps(GOOD_ROW) + "\n" + json.dumps(otlp_request()) + "\n",
    )
    assert piped.returncode == 2
    assert piped.stderr == (
        "tracescore: error: stdin:2: an OTLP/JSON export request (resourceSpans), not runs: turn it into "
        f"AgentRuns with `tracescore inspect FILE > runs.json` and give runs.json; {ACCEPTED}\n"
    )


def test_the_list_inspect_prints_is_read_by_eval_and_by_score(tmp_path: Path) -> None:
    inspected = cli(tmp_path, "inspect", str(GENAI_MAIN))
    assert inspected.returncode == 0, inspected.stderr
    (tmp_path / "runs.json").write_text(inspected.stdout)
    # @mastra/evals on "What's the weather in Paris?" -> "The weather in Paris is currently rainy ...": 0.4
    evaluated = cli(
        tmp_path, "eval", "--data", "runs.json", "--scorer", "textual-difference", "--output", "o"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert eval_table_rows(evaluated.stdout)["textual-difference"] == [
        "0.4000",
        "0.4000",
        "0.4000",
        "1",
        "0",
        "0",
    ]
    (item,) = [json.loads(line) for line in (tmp_path / "o").read_text().splitlines()]
    assert (item["line"], item["index"]) == (None, 0)  # an item of a list has an index, not a line
    assert item["run_id"] == "5dbdf98695bd5785f3d3e61006ad2dba:594f8d102c7c4a19"

    piped = cli(tmp_path, "eval", "--data", "-", "--scorer", "textual-difference", stdin=inspected.stdout)
    assert piped.returncode == 0, piped.stderr
    assert eval_table_rows(piped.stdout) == eval_table_rows(evaluated.stdout)

    scored = cli(tmp_path, "score", "textual-difference", "--run", "runs.json")
    assert scored.returncode == 0, scored.stderr
    (result,) = json.loads(scored.stdout)
    assert (result["status"], result["score"]) == ("scored", 0.4)


def test_json_lines_of_runs_and_simple_rows_are_scored_in_order(tmp_path: Path) -> None:
    case = PARITY_CASES["c000"]
    as_run = {
        "input": {"input_messages": [{"role": "user", "content": case["input"]}]},
        "output": [{"role": "assistant", "content": case["output"]}],
    }
    name = jsonl(tmp_path, "cases.jsonl", [{"input": case["input"], "output": case["output"]}, as_run])
    done = cli(tmp_path, "score", "textual-difference", "--run", name)
    assert done.returncode == 0, done.stderr
    expected = PARITY_SCORES["c000"]["textual-difference"]  # @mastra/evals' score for the case
    assert [(r["status"], r["score"]) for r in json.loads(done.stdout)] == [("scored", expected)] * 2

    # "expected" is the data sets' other name for the ground truth.
    truths = [{**GOOD_ROW, "expected": "Paris."}, {**GOOD_ROW, "ground_truth": "Lyon."}]
    exact = cli(tmp_path, "score", "exact-match", "--run", jsonl(tmp_path, "truths.jsonl", truths))
    assert exact.returncode == 0, exact.stderr
    assert [r["score"] for r in json.loads(exact.stdout)] == [1.0, 0.0]


@pytest.mark.parametrize("scorer", TEXT_SCORERS)
def test_a_run_without_content_is_skipped_never_scored(tmp_path: Path, scorer: str) -> None:
    case = PARITY_CASES["c000"]
    rows = [{"input": case["input"], "output": case["output"]}, EMPTY_RUN, {"input": "Hi?", "output": ""}]
    name = jsonl(tmp_path, "data.jsonl", rows)
    evaluated = cli(tmp_path, "eval", "--data", name, "--scorer", scorer, "--output", "items.jsonl")
    assert evaluated.returncode == 0, evaluated.stderr
    value = f"{PARITY_SCORES['c000'][scorer]:.4f}"  # @mastra/evals' score for the case
    (row,) = eval_table_rows(evaluated.stdout).values()
    assert row == [value, value, value, "1", "0", "2"]  # one scored, two skipped_empty
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [list(item["skipped"].values()) for item in items] == [
        [],
        [EMPTY_REASON],
        ["run has no output text"],
    ]
    assert items[1]["scores"] == {} and items[2]["scores"] == {}

    scored = cli(tmp_path, "score", scorer, "--run", jsonl(tmp_path, "empty.json", [EMPTY_RUN]))
    assert scored.returncode == 3
    result = json.loads(scored.stdout)
    assert (result["status"], result["score"], result["reason"]) == ("skipped_empty", None, EMPTY_REASON)
    assert result["run_id"] == f"{'c' * 32}:{'d' * 16}"
    assert scored.stderr.endswith(f" on empty.json: {EMPTY_REASON}\n")


def test_eval_of_only_empty_runs_has_no_mean(tmp_path: Path) -> None:
    name = jsonl(tmp_path, "empty.jsonl", [EMPTY_RUN, EMPTY_RUN])
    done = cli(tmp_path, "eval", "--data", name, "--scorer", "textual-difference")
    assert done.returncode == 0, done.stderr
    assert eval_table_rows(done.stdout)["textual-difference"] == ["-", "-", "-", "0", "0", "2"]
