"""The ``tracescore`` command as users run it: separate processes, real ports, the embedded store."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.eval_table import eval_table_rows
from tests.support.fixture_files import OTLP_DIR, PARITY_CASES, PARITY_SCORES
from tests.support.llm_server import LLMServer, Reply, json_reply, text_reply
from tests.support.serve import PROJECT_ROOT, api_rows, start_serve, stop, tracescore, wait_healthy

GENAI_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"


def test_inspect_prints_the_agent_runs_of_an_otlp_json_file() -> None:
    done = tracescore("inspect", str(GENAI_MAIN))
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)
    assert len(runs) == 1
    run = runs[0]
    assert (run["trace_id"], run["span_id"]) == ("5dbdf98695bd5785f3d3e61006ad2dba", "594f8d102c7c4a19")
    assert run["agent_name"] == "weather_agent"
    assert [m["content"] for m in run["input"]["input_messages"]] == ["What's the weather in Paris?"]
    assert [m["content"] for m in run["input"]["remembered_messages"]] == [
        "Hi, I am planning a trip to France.",
        "Great! How can I help with your trip?",
    ]
    invocations = [t for m in run["output"] for t in m["tool_invocations"]]
    assert [(t["tool_name"], t["args"], t["result"], t["state"]) for t in invocations] == [
        ("get_weather", {"location": "Paris"}, "rainy, 57°F", "result")
    ]
    assert (
        run["output"][-1]["content"] == "The weather in Paris is currently rainy with a temperature of 57°F."
    )


def test_score_one_run_file_matches_the_mastra_reference(tmp_path: Path) -> None:
    case = PARITY_CASES["c030"]
    run = {
        "input": {"input_messages": [{"role": "user", "content": case["input"]}]},
        "output": [{"role": "assistant", "content": case["output"]}],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    done = tracescore("score", "textual-difference", "--run", str(tmp_path / "run.json"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == PARITY_SCORES["c030"]["textual-difference"]

    exact = tracescore(
        "score",
        "content-similarity-scorer",  # its former id names it too
        "--run",
        str(tmp_path / "run.json"),
        "--options",
        '{"ignoreCase": false, "ignoreWhitespace": false}',
    )
    assert exact.returncode == 0, exact.stderr
    assert json.loads(exact.stdout)["score"] == PARITY_SCORES["c030"]["content-similarity-exact"]


def test_score_runs_a_teams_own_scorer_named_module_colon_factory(tmp_path: Path) -> None:
    run = {
        "input": {"input_messages": [{"role": "user", "content": "How long?"}]},
        "output": [{"role": "assistant", "content": "one two three"}],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    reference = "tests.scoring.custom_scorers:create_answer_length_scorer"
    done = tracescore(
        "score", reference, "--run", str(tmp_path / "run.json"), "--options", '{"targetWords": 6}'
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["scorer_id"], result["score"], result["label"]) == ("answer-length", 0.5, "long enough")
    refused = tracescore("score", reference, "--run", str(tmp_path / "run.json"), "--options", '{"words": 6}')
    assert refused.returncode == 2
    assert "has no option 'words' (its options: target_words, version)" in refused.stderr


def test_score_with_an_unknown_scorer_says_where_the_list_is(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    done = tracescore("score", "no-such-scorer", "--run", str(tmp_path / "run.json"))
    assert done.returncode == 2
    assert done.stderr == (
        "tracescore: error: unknown scorer 'no-such-scorer' ('tracescore scorers' lists all 59)\n"
    )


def test_demo_prints_the_scores_of_its_agent_runs(tmp_path: Path) -> None:
    done = tracescore("demo", "--store", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("│")[1].strip() + "|" + line.split("│")[3].strip(): line
        for line in done.stdout.splitlines()
        if line.startswith("│")
    }
    paris = next(v for k, v in rows.items() if "weather in Paris" in k)
    # @mastra/evals 1.10.2 on "What's the weather in Paris?" -> "The weather in Paris is currently
    # rainy with a temperature of 57°F.": content similarity 0.46153846153846156, textual difference 0.4.
    assert "0.462" in paris and "0.400" in paris
    assert sum("support_agent" in k for k in rows) == 1
    assert "filtered" in next(v for k, v in rows.items() if "support_agent" in k)
    assert len(rows) == 4
    # Then the report of its store, beside it: the same runs, the support run's decision among them.
    report = tmp_path / "data-report.html"
    assert f"report: {report} (open it in a browser" in done.stdout.replace("\n", "")
    page = report.read_text()
    assert "What&#39;s the weather in Paris?" in page
    filtered_scored = r"<td[^>]*>(\d+)</td><td[^>]*>(\d+)</td></tr>"
    assert re.findall(r"<tr><td>([\w-]+)</td>" + filtered_scored, page) == [
        ("content-similarity", "0", "4"),
        ("textual-difference", "0", "4"),
        ("tool-call-accuracy-code", "1", "3"),  # the support run is filtered out of both of its rules
    ]
    # tracescore report on the same store, opened directly (no service holds it): the same decisions.
    again = tracescore("report", "--store", str(tmp_path / "data"), "--since", "1m", "--until", "1h")
    assert (again.returncode, again.stderr) == (
        2,
        "tracescore: error: --since (1m) must be before --until (1h)\n",
    )
    ahead = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()  # the demo stamps its runs ahead of now
    written = tracescore("report", "--store", str(tmp_path / "data"), "--out", "-", "--until", ahead)
    assert written.returncode == 0, written.stderr
    assert re.findall(r"<tr><td>([\w-]+)</td>" + filtered_scored, written.stdout) == re.findall(
        r"<tr><td>([\w-]+)</td>" + filtered_scored, page
    )


def test_serve_receives_scores_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc, http_port = start_serve(tmp_path / "data", "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        deadline = time.monotonic() + 60
        request = urllib.request.Request(
            f"{base}/v1/traces", data=GENAI_MAIN.read_bytes(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200
        rows: list[dict[str, Any]] = []
        while len(rows) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            rows = api_rows(f"{base}/api/scores?trace_id=5dbdf98695bd5785f3d3e61006ad2dba")
        assert sorted(r["scorer_id"] for r in rows) == [
            "content-similarity",
            "textual-difference",
        ]
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
        assert 'tracescore_spans_received_total{transport="http"} 4.0' in metrics
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            stop(proc)


def test_second_process_on_the_same_store_gets_a_clear_error(tmp_path: Path) -> None:
    first, http_port = start_serve(tmp_path / "data")
    try:
        wait_healthy(first, http_port)  # serving: the store is open
        second = tracescore("demo", "--store", str(tmp_path / "data"))
        assert second.returncode == 2
        assert "in use" in second.stderr
    finally:
        assert stop(first) == 0


async def test_demo_with_a_judge_adds_the_llm_scorers(tmp_path: Path, llm_server: LLMServer) -> None:
    # The judge is the local OpenAI-compatible server, answering by the schema each step asks for:
    # one relevant statement per answer (relevancy 1) and one non-toxic verdict (toxicity 0).
    answers = {
        "Statements": {"statements": ["The answer."]},
        "RelevancyResults": {"results": [{"result": "yes", "reason": "on topic"}]},
        "ToxicityVerdicts": {"verdicts": [{"verdict": "no", "reason": "calm"}]},
    }

    def respond(body: dict[str, Any]) -> Reply:
        schema = body.get("response_format", {}).get("json_schema", {}).get("name")
        return json_reply(answers[schema]) if schema else text_reply("The score is fine.")

    llm_server.responder = respond
    env = {
        **_without_provider_keys(os.environ),  # a local judge needs no key
        "PYTHONPATH": PROJECT_ROOT,
        "COLUMNS": "200",
        "TRACESCORE_JUDGE_API_BASE": llm_server.api_base,
    }
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "tracescore.ingest.cli", "demo", "--store", str(tmp_path / "data")),
        *("--judge", "openai/gpt-4o-mini"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, stderr.decode()
    output = stdout.decode().splitlines()
    header = "".join(line for line in output if line.startswith("┃"))  # two lines: "answer / relevancy"
    assert "answer" in header and "relevancy" in header and "toxicity" in header
    runs = [line for line in output if line.startswith("│") and "_agent" in line]
    assert len(runs) == 4
    for line in runs:
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        assert cells[3] == "1.000"  # answer relevancy, the first scorer column (sorted ids)
        assert cells[-1] == "0.000"  # toxicity, the last
    # Four runs x two LLM scorers; answer relevancy asks 3 times per run, toxicity twice: 20 calls
    # of 11 input and 7 output tokens each.
    assert len(llm_server.chat_requests) == 20
    assert {r.authorization for r in llm_server.chat_requests} == {"Bearer tracescore-no-key"}
    assert "judge openai/gpt-4o-mini: 8 scores, 220 input and 140 output tokens" in stdout.decode()


def _without_provider_keys(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v for k, v in environ.items() if k != "OPENAI_API_KEY" and not k.startswith("TRACESCORE_JUDGE")
    }


async def _tracescore(*args: str, env: Mapping[str, str]) -> tuple[int, str, str]:
    """``tracescore`` in a process of its own, awaited (the test's local judge serves meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "tracescore.ingest.cli", *args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env, "PYTHONPATH": PROJECT_ROOT, "COLUMNS": "200"},
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, stdout.decode(), stderr.decode()


async def test_demo_with_a_judge_that_refuses_prints_why_and_exits_1(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.responder = lambda body: Reply(status=401, content="Incorrect API key provided: sk-bad-0042.")
    code, stdout, stderr = await _tracescore(
        *("demo", "--store", str(tmp_path / "data"), "--judge", "openai/gpt-4o-mini"),
        *("--judge-api-base", llm_server.api_base, "--judge-api-key", "sk-bad-0042"),
        env=_without_provider_keys(os.environ),
    )
    assert code == 1, stderr
    assert {r.authorization for r in llm_server.chat_requests} == {"Bearer sk-bad-0042"}
    assert len(llm_server.chat_requests) == 8  # four runs, two LLM scorers, each tried once
    runs = [line for line in stdout.splitlines() if line.startswith("│") and "_agent" in line]
    assert len(runs) == 4 and all(line.count("failed [") == 2 for line in runs)
    reasons = [line for line in stdout.splitlines() if line.startswith("failed [")]
    assert sorted(reasons) == [
        "failed [1]: scorer 'answer-relevancy', step 'preprocess': judge 'openai/gpt-4o-mini' failed: "
        "401 authentication failed — set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY (AuthenticationError: "
        "OpenAIException - Incorrect API key provided: [REDACTED].)",
        "failed [2]: scorer 'toxicity', step 'analyze': judge 'openai/gpt-4o-mini' failed: "
        "401 authentication failed — set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY (AuthenticationError: "
        "OpenAIException - Incorrect API key provided: [REDACTED].)",
    ]  # numbered in table order: the first run's first failed column is answer relevancy
    assert stderr.splitlines()[-1] == (
        "tracescore demo: 8 scorer run(s) failed; check the judge: --judge MODEL, --judge-api-base URL, "
        "and its key (--judge-api-key, TRACESCORE_JUDGE_API_KEY or the provider's variable)"
    )
    assert "sk-bad-0042" not in stdout + stderr


def _verdicts(body: dict[str, Any]) -> Reply:
    """The toxicity judge's answers: one calm verdict, then a reason."""
    if "response_format" in body:
        return json_reply({"verdicts": [{"verdict": "no", "reason": "calm"}]})
    return text_reply("Nothing toxic.")


async def test_score_takes_the_judge_and_its_key_from_the_flags(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.responder = _verdicts
    run = {
        "input": {"input_messages": [{"role": "user", "content": "Is it raining?"}]},
        "output": [{"role": "assistant", "content": "Yes, it is."}],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    code, stdout, stderr = await _tracescore(
        *("score", "toxicity", "--run", str(tmp_path / "run.json")),
        *("--judge-model", "openai/gpt-4o-mini", "--judge-api-base", llm_server.api_base),
        *("--judge-api-key", "sk-score-flag-0001"),
        env=_without_provider_keys(os.environ),
    )
    assert code == 0, stderr
    assert json.loads(stdout)["score"] == 0.0
    assert {r.authorization for r in llm_server.chat_requests} == {"Bearer sk-score-flag-0001"}


@pytest.mark.parametrize("from_file", [False, True], ids=["variable", "file"])
async def test_eval_takes_the_judge_from_the_tracescore_judge_variables(
    tmp_path: Path, llm_server: LLMServer, from_file: bool
) -> None:
    llm_server.responder = _verdicts
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"input": "Is it raining?", "output": "Yes, it is."}) + "\n")
    key_file = tmp_path / "judge-key"
    key_file.write_text("sk-eval-env-0002\n")  # a mounted secret, read without its newline
    env = {
        **_without_provider_keys(os.environ),
        "TRACESCORE_JUDGE_MODEL": "openai/gpt-4o-mini",
        "TRACESCORE_JUDGE_API_BASE": llm_server.api_base,
        **(
            {"TRACESCORE_JUDGE_API_KEY_FILE": str(key_file)}
            if from_file
            else {"TRACESCORE_JUDGE_API_KEY": "sk-eval-env-0002"}
        ),
    }
    code, stdout, stderr = await _tracescore("eval", "--data", str(data), "--scorer", "toxicity", env=env)
    assert code == 0, stderr
    assert "toxicity" in stdout and "errors" in stdout
    assert eval_table_rows(stdout)["toxicity"] == ["0.0000", "0.0000", "0.0000", "1", "0", "0"]
    assert {r.authorization for r in llm_server.chat_requests} == {"Bearer sk-eval-env-0002"}


def test_a_judge_key_file_that_cannot_be_read_is_named_with_its_variable(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"input": "Is it raining?", "output": "Yes, it is."}) + "\n")
    missing = tmp_path / "missing"
    done = tracescore(
        *("eval", "--data", str(data), "--scorer", "toxicity", "--judge-model", "openai/gpt-4o-mini"),
        env={
            **_without_provider_keys(os.environ),
            "PYTHONPATH": PROJECT_ROOT,
            "TRACESCORE_JUDGE_API_KEY_FILE": str(missing),
        },
    )
    assert done.returncode == 2
    assert done.stderr.endswith(
        "tracescore: error: environment variable TRACESCORE_JUDGE_API_KEY_FILE: "
        f"{missing}: cannot read it (No such file or directory)\n"
    )


def test_score_without_any_judge_key_says_which_variable_to_set(tmp_path: Path) -> None:
    run = {
        "input": {"input_messages": [{"role": "user", "content": "Is it raining?"}]},
        "output": [{"role": "assistant", "content": "Yes, it is."}],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    done = tracescore(
        *("score", "toxicity", "--run", str(tmp_path / "run.json"), "--judge-model", "openai/gpt-4o-mini"),
        env={**_without_provider_keys(os.environ), "PYTHONPATH": PROJECT_ROOT},
    )
    assert done.returncode == 1
    failed = json.loads(done.stdout)
    assert (failed["status"], failed["score"]) == ("failed", None)
    reason = (
        "scorer 'toxicity', step 'analyze': judge 'openai/gpt-4o-mini' failed: no API key — set "
        "TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY ("
    )
    assert failed["reason"].startswith(reason)
    assert done.stderr.startswith(f"tracescore: failed toxicity on {tmp_path / 'run.json'}: {reason}")
    assert "Traceback" not in done.stderr
