"""``tracescore eval`` as users run it: a separate process on a JSONL file, checked against Mastra."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.eval_table import eval_table_rows
from tests.support.fixture_files import PARITY_CASES, PARITY_SCORES
from tests.support.serve import tracescore


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _agent_run(case: dict[str, Any]) -> dict[str, Any]:
    """A parity case as AgentRun JSON: the user's turn, one answer carrying the case's tool calls."""
    return {
        "trace_id": "ab" * 16,
        "span_id": case["id"].ljust(16, "0"),
        "input": {"input_messages": [{"role": "user", "content": case["input"]}]},
        "output": [
            {
                "role": "assistant",
                "content": case["output"],
                "tool_invocations": [
                    {"tool_call_id": f"call-{i}", "tool_name": name, "state": "result"}
                    for i, name in enumerate(case.get("tools", []))
                ],
            }
        ],
    }


def test_eval_prints_mastras_means_for_simple_rows_and_agent_runs(tmp_path: Path) -> None:
    ids = ["c000", "c003", "c006"]
    rows: list[Any] = [
        {"input": PARITY_CASES[i]["input"], "output": PARITY_CASES[i]["output"]} for i in ids[:2]
    ]
    rows.append(_agent_run(PARITY_CASES["c006"]))  # the same numbers whichever shape a line has
    data = _write_jsonl(tmp_path / "data.jsonl", [rows[0], "", rows[1], rows[2]])
    out = tmp_path / "items.jsonl"
    done = tracescore(
        "eval",
        "--data",
        str(data),
        "--scorer",
        "textual-difference",
        "--scorer",
        "content-similarity-scorer",  # by its former id: the same scorer
        "--output",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    table = eval_table_rows(done.stdout)
    for scorer_id, reference in [
        ("textual-difference", "textual-difference"),
        ("content-similarity", "content-similarity"),
    ]:
        values = [PARITY_SCORES[i][reference] for i in ids]
        assert table[scorer_id] == [
            f"{sum(values) / 3:.4f}",
            f"{min(values):.4f}",
            f"{max(values):.4f}",
            "3",
            "0",
            "0",
        ]
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert [item["line"] for item in items] == [1, 3, 4]  # the blank line 2 is skipped
    assert [item["scores"]["textual-difference"]["score"] for item in items] == [
        PARITY_SCORES[i]["textual-difference"] for i in ids
    ]
    assert items[2]["run_id"] == f"{'ab' * 16}:c006000000000000"
    assert all(item["errors"] == {} and item["skipped"] == {} and item["error"] is None for item in items)


def test_eval_with_scorer_options_counts_scorer_errors_apart(tmp_path: Path) -> None:
    cases = [
        PARITY_CASES[i] for i in ("c135", "c147", "c123")
    ]  # Mastra: 0, 1, 0 for expectedTool weather-tool
    no_output = {"input": {"input_messages": [{"role": "user", "content": "hi"}]}, "output": []}
    data = _write_jsonl(tmp_path / "tools.jsonl", [*(_agent_run(c) for c in cases), no_output])
    expected = [PARITY_SCORES[c["id"]]["code-tool-call-accuracy"] for c in cases]
    assert expected == [0, 1, 0]
    for scorer_args in (
        ["--scorer", 'tool-call-accuracy-code={"expectedTool": "weather-tool"}'],
        [
            "--scorer",
            "tool-call-accuracy-code",
            "--options",
            '{"tool-call-accuracy-code": {"expected_tool": "weather-tool"}}',
        ],
    ):
        done = tracescore("eval", "--data", str(data), *scorer_args, "--concurrency", "2")
        assert done.returncode == 0, done.stderr
        assert eval_table_rows(done.stdout)["tool-call-accuracy-code"] == [
            f"{1 / 3:.4f}",
            "0.0000",
            "1.0000",
            "3",
            "1",
            "0",  # the tool-call scorer reads only the input: the service would run it on line 4 too
        ]
        # The failing line is named with the scorer's own message.
        assert f"{data}:4: tool-call-accuracy-code: " in done.stderr
        assert "Input and output messages cannot be null or empty" in done.stderr


def test_eval_names_the_bad_line_and_exits_2(tmp_path: Path) -> None:
    good = {"input": "a", "output": "b"}
    for bad, message in [
        ("{not json", "data.jsonl:2:"),
        ('["a list"]', "a JSON list, not an AgentRun or a simple row"),
        ('{"input": "q"}', "not a valid simple row: output: Field required"),
        ('{"input": "q", "output": "a", "groundtruth": 1}', "unknown keys in a simple row: groundtruth"),
        ('{"output": [{"role": "robot"}]}', "not a valid AgentRun: output.0.role: Input should be"),
    ]:
        data = _write_jsonl(tmp_path / "data.jsonl", [good, bad])
        done = tracescore("eval", "--data", str(data), "--scorer", "textual-difference")
        assert done.returncode == 2, (bad, done.stdout)
        assert message in done.stderr, (bad, done.stderr)
        assert "data.jsonl:2:" in done.stderr


def test_eval_refuses_unknown_scorers_and_stray_options(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "data.jsonl", [{"input": "a", "output": "b"}])
    unknown = tracescore("eval", "--data", str(data), "--scorer", "no-such-scorer")
    assert unknown.returncode == 2
    assert "unknown scorer 'no-such-scorer'" in unknown.stderr
    stray = tracescore(
        "eval",
        "--data",
        str(data),
        "--scorer",
        "textual-difference",
        "--options",
        '{"content-similarity": {}}',
    )
    assert stray.returncode == 2
    assert "--options names scorers not given with --scorer: content-similarity" in stray.stderr
    empty = tracescore(
        "eval", "--data", str(_write_jsonl(tmp_path / "empty.jsonl", [""])), "--scorer", "textual-difference"
    )
    assert empty.returncode == 2
    assert "empty.jsonl: the file is empty; accepted: " in empty.stderr
