"""``tracescore score`` on what users have at hand: one run, the list ``tracescore inspect`` prints
(from a file or piped), runs lacking what the scorer needs, scorers that fail, and files that hold
no valid run. Each case runs the command in its own process and reads its exit code, stdout and stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.fixture_files import OTLP_DIR
from tests.support.serve import ENV, tracescore

GENAI_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
QUESTION = {"input_messages": [{"role": "user", "content": "What is the capital of France?"}]}
PARIS = [{"role": "assistant", "content": "Paris."}]
ACCEPTED = (
    "; accepted: an AgentRun object, the JSON list `tracescore inspect` prints, or JSON Lines of AgentRuns "
    'or simple rows {"input": "...", "output": "...", "ground_truth": ..., "context": ["..."]}'
)


def write(tmp_path: Path, name: str, document: Any) -> str:
    (tmp_path / name).write_text(json.dumps(document))
    return name


def score(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``tracescore score ARGS`` in ``tmp_path`` (so the file names in messages are as given)."""
    return subprocess.run(
        [sys.executable, "-m", "tracescore.ingest.cli", "score", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=ENV,
    )


def test_the_list_inspect_prints_is_scored_run_by_run_from_stdin(tmp_path: Path) -> None:
    inspected = tracescore("inspect", str(GENAI_MAIN))
    assert inspected.returncode == 0, inspected.stderr
    assert isinstance(json.loads(inspected.stdout), list)
    done = score(tmp_path, "textual-difference", "--run", "-", stdin=inspected.stdout)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    results = json.loads(done.stdout)
    assert isinstance(results, list) and len(results) == 1
    (result,) = results
    assert result["status"] == "scored"
    assert result["run_id"] == "5dbdf98695bd5785f3d3e61006ad2dba:594f8d102c7c4a19"
    # @mastra/evals on "What's the weather in Paris?" -> "The weather in Paris is currently rainy ...": 0.4
    assert result["score"] == 0.4


def test_each_run_of_a_list_gets_its_result_in_order_and_index_picks_one(tmp_path: Path) -> None:
    runs = [
        {"input": QUESTION, "output": PARIS},
        {"input": QUESTION, "output": [{"role": "assistant", "content": "What is the capital of France?"}]},
    ]
    name = write(tmp_path, "runs.json", runs)
    done = score(tmp_path, "content-similarity", "--run", name)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["status"] for r in results] == ["scored", "scored"]
    assert results[1]["score"] == 1.0 and results[0]["score"] < 1.0

    second = score(tmp_path, "content-similarity", "--run", name, "--index", "1")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["score"] == 1.0  # one object, not a list

    beyond = score(tmp_path, "content-similarity", "--run", name, "--index", "2")
    assert beyond.returncode == 2 and beyond.stdout == ""
    assert beyond.stderr == "tracescore: error: --index 2: runs.json holds 2 run(s), numbered from 0\n"


def test_a_ground_truth_scorer_on_a_run_without_ground_truth_is_skipped_with_its_reason(
    tmp_path: Path,
) -> None:
    name = write(tmp_path, "run.json", {"input": QUESTION, "output": PARIS})
    done = score(tmp_path, "exact-match", "--run", name)
    assert done.returncode == 3
    assert done.stderr == "tracescore: skipped exact-match on run.json: run has no ground truth\n"
    assert json.loads(done.stdout) == {
        "scorer_id": "exact-match",
        "run_id": None,
        "status": "skipped_empty",
        "score": None,
        "reason": "run has no ground truth",
    }

    with_truth = write(tmp_path, "truth.json", {"input": QUESTION, "output": PARIS, "ground_truth": "Paris."})
    scored = score(tmp_path, "exact-match", "--run", with_truth)
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["score"] == 1.0


def test_a_list_with_a_skipped_run_scores_the_others_and_exits_3(tmp_path: Path) -> None:
    runs = [
        {
            "trace_id": "a" * 32,
            "span_id": "b" * 16,
            "input": QUESTION,
            "output": PARIS,
            "ground_truth": "Paris.",
        },
        {"trace_id": "c" * 32, "span_id": "d" * 16, "input": QUESTION, "output": [], "content_missing": True},
    ]
    done = score(tmp_path, "levenshtein", "--run", write(tmp_path, "runs.json", runs))
    assert done.returncode == 3
    assert done.stderr == (
        "tracescore: skipped levenshtein on runs.json[1]: "
        "run has no output text and no ground truth (content capture off or redacted)\n"
    )
    first, second = json.loads(done.stdout)
    assert (first["status"], first["score"]) == ("scored", 1.0)
    assert second["status"] == "skipped_empty" and second["run_id"] == f"{'c' * 32}:{'d' * 16}"


def test_a_scorer_that_fails_gives_a_failed_result_and_exit_1(tmp_path: Path) -> None:
    name = write(tmp_path, "run.json", {"input": QUESTION, "output": PARIS})
    done = score(tmp_path, "tests.scoring.custom_scorers:create_overconfident_scorer", "--run", name)
    assert done.returncode == 1
    reason = "scorer 'overconfident', step 'generate_score': returned 1.7, outside its scale [0, 1]"
    assert done.stderr == f"tracescore: failed overconfident on run.json: {reason}\n"
    result = json.loads(done.stdout)
    assert (result["status"], result["score"], result["reason"]) == ("failed", None, reason)


def test_a_file_without_a_valid_run_is_one_line_naming_the_file_and_the_problem(tmp_path: Path) -> None:
    cases = {
        "wrong.json": (
            {"input": 5},
            "wrong.json: not a valid AgentRun: input: Input should be a valid dictionary or instance of "
            f"RunInput{ACCEPTED}",
        ),
        "list.json": (
            [{"output": PARIS}, {"output": "Paris."}],
            f"list.json[1]: not a valid simple row: input: Field required{ACCEPTED}",
        ),
        "number.json": (7, f"number.json: a JSON number, not an AgentRun or a simple row{ACCEPTED}"),
        "empty.json": ([], f"empty.json: the list holds no run{ACCEPTED}"),
    }
    for name, (document, message) in cases.items():
        done = score(tmp_path, "textual-difference", "--run", write(tmp_path, name, document))
        assert done.returncode == 2, name
        assert done.stdout == "", name
        assert done.stderr == f"tracescore: error: {message}\n", name

    (tmp_path / "broken.json").write_text('{"input": ')
    broken = score(tmp_path, "textual-difference", "--run", "broken.json")
    assert broken.returncode == 2
    assert (
        broken.stderr
        == "tracescore: error: broken.json: not JSON: Expecting value: line 1 column 11 (char 10)\n"
    )

    piped = score(tmp_path, "textual-difference", "--run", "-", stdin="nope")
    assert piped.returncode == 2
    assert piped.stderr == "tracescore: error: stdin: not JSON: Expecting value: line 1 column 1 (char 0)\n"


def test_options_that_are_not_a_json_object_are_refused(tmp_path: Path) -> None:
    name = write(tmp_path, "run.json", {"input": QUESTION, "output": PARIS})
    done = score(tmp_path, "content-similarity", "--run", name, "--options", "{ignore_case: false}")
    assert done.returncode == 2
    assert done.stderr.startswith("tracescore: error: --options is not JSON: Expecting property name")
    listed = score(tmp_path, "content-similarity", "--run", name, "--options", "[1]")
    assert (listed.returncode, listed.stderr) == (2, "tracescore: error: --options must be a JSON object\n")
