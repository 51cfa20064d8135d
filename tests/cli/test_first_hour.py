"""What a new user types first and reads back, in separate processes: the version, the scorer list,
"did you mean", errors as one line naming their source (file:line, environment variable, flag), a busy
port, and the one startup summary on stderr."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from tests.support.llm_server import LLMServer, json_reply
from tests.support.serve import ENV, PROJECT_ROOT, free_port, tracescore, wait_healthy

SCORERS_PAGE = Path(PROJECT_ROOT) / "docs" / "scorers.md"


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The command failed with exit 2 and said why on stderr without a traceback; returns the text."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    return done.stderr


def test_version_before_and_after_the_command() -> None:
    declared = tomllib.loads((Path(PROJECT_ROOT) / "pyproject.toml").read_text())["project"]["version"]
    for args in (["--version"], ["-V"], ["serve", "--version"]):
        done = tracescore(*args)
        assert done.returncode == 0
        assert done.stdout == f"tracescore {declared}\n"


def test_verbose_is_accepted_after_the_command() -> None:
    done = tracescore("scorers", "--json", "-v")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


def test_a_mistyped_command_or_flag_gets_a_suggestion() -> None:
    command = one_error_line(tracescore("serv"))
    assert "tracescore: error: argument COMMAND: invalid choice: 'serv'" in command
    assert command.rstrip().endswith("; did you mean 'serve'?")
    flag = one_error_line(tracescore("serve", "--grpc-prot", "4317"))
    assert "tracescore: error: unrecognized arguments: --grpc-prot 4317; did you mean '--grpc-port'?" in flag


def readme_scorer_names() -> set[str]:
    """The short names of the scorer tables of docs/scorers.md (the name in rules, else the id)."""
    section = SCORERS_PAGE.read_text()
    names: set[str] = set()
    for row in re.findall(r"^\| (`.*?) \|", section, re.MULTILINE):
        ticked = re.findall(r"`([^`]+)`", row)
        in_rules = re.search(r"\(`([^`]+)`", row)
        if "…" in row:  # "`contextPrecision`, … (`ragas-context-…`)": a family, not one name
            continue
        if "(formerly `" in row:  # "`content-similarity` (formerly `content-similarity-scorer`)"
            names.add(ticked[0])
        elif in_rules:  # "`exactMatch` (`exact-match`)": the name in rules
            names.add(in_rules.group(1))
        else:
            names.update(ticked)
    return names


def test_scorers_lists_every_scorer_with_what_it_needs() -> None:
    done = tracescore("scorers", "--json")
    assert done.returncode == 0, done.stderr
    scorers = {entry["name"]: entry for entry in json.loads(done.stdout)}
    assert readme_scorer_names() <= set(scorers)
    assert len(scorers) == 59
    # Facts from the page's tables, for one scorer of each kind.
    assert scorers["exact-match"]["needs"] == ["ground_truth", "output"]
    assert scorers["exact-match"]["llm"] is False
    assert scorers["toxicity"]["id"] == "toxicity"
    assert scorers["toxicity"]["llm"] is True
    assert scorers["toxicity"]["needs"] == ["output"]
    assert scorers["check-includes"]["options"] == [
        {"name": "expected", "required": True},
        {"name": "ignore_case", "required": False, "default": True},
    ]
    assert scorers["context-precision"]["needs"] == ["context", "input", "output"]
    assert {entry["version"] for entry in scorers.values()} == {"1"}  # every prebuilt code's first

    table = tracescore("scorers")
    assert table.returncode == 0
    for name in ("textual-difference", "check-includes", "ragas-context-entity-recall", "toxicity"):
        assert name in table.stdout
    assert "expected (required), ignore_case=true" in table.stdout


def test_one_scorer_in_full_with_a_rule_that_loads(tmp_path: Path) -> None:
    done = tracescore("scorers", "check-includes")
    assert done.returncode == 0, done.stderr
    assert "check-includes: Includes Check" in done.stdout
    formerly = tracescore("scorers", "content-similarity-scorer")  # found by its former id too
    assert "content-similarity (formerly content-similarity-scorer): Content Similarity" in formerly.stdout
    assert "options: expected (required), ignore_case=true" in done.stdout
    assert "version: 1 (its scores carry 1+<hash of the rule's options, prompts and judge" in done.stdout
    rule_yaml = done.stdout.split("a rule using it:\n", 1)[1]
    assert yaml.safe_load(rule_yaml) == {
        "scoring": {"rules": [{"scorer": "check-includes", "options": {"expected": "Paris"}}]}
    }
    (tmp_path / "rules.yaml").write_text(rule_yaml)
    # The service accepts it: a config error would exit 2 before the store is opened.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tracescore.ingest.configuration.config_loader import load_config; "
            f"load_config({str(tmp_path / 'rules.yaml')!r})",
        ],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr

    wrong = one_error_line(tracescore("scorers", "check-includs"))
    assert wrong == (
        "tracescore: error: unknown scorer 'check-includs'; did you mean 'check-includes'? "
        "('tracescore scorers' lists them)\n"
    )


def test_scorer_and_option_typos_get_a_suggestion(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"output": [{"role": "assistant", "content": "Paris"}]}))
    scorer = one_error_line(tracescore("score", "textual-differnce", "--run", str(run)))
    assert scorer == (
        "tracescore: error: unknown scorer 'textual-differnce'; did you mean 'textual-difference'? "
        "('tracescore scorers' lists all 59)\n"
    )
    option = one_error_line(
        tracescore("score", "tool-call-accuracy-code", "--run", str(run), "--options", '{"expectedTol": "a"}')
    )
    assert option == (
        "tracescore: error: scorer 'tool-call-accuracy-code' has no option 'expectedTol'; did you mean "
        "'expected_tool'? (its options: expected_tool, strict_mode, expected_tool_order)\n"
    )
    value = one_error_line(
        tracescore(
            "score",
            "tool-call-accuracy-code",
            "--run",
            str(run),
            "--options",
            '{"expected_tool": "a", "strict_mode": "maybe"}',
        )
    )
    # No internal function name (create_tool_call_accuracy_scorer_code), no pydantic URL.
    assert value == (
        "tracescore: error: scorer 'tool-call-accuracy-code': invalid options: 'strict_mode': Input "
        "should be a valid boolean, unable to interpret input (got 'maybe')\n"
    )


def test_config_file_syntax_errors_name_the_file_line_and_column(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "tracescore.yaml"
    bad_yaml.write_text("scoring:\n  rules: [\n")
    message = one_error_line(tracescore("serve", "--config", str(bad_yaml), "--store", str(tmp_path / "d")))
    assert message == (
        f"tracescore: error: config file {bad_yaml}:3:1: invalid YAML: expected the node content, but found "
        "'<stream end>' (while parsing a flow node)\n"
    )
    bad_json = tmp_path / "tracescore.json"
    bad_json.write_text('{"scoring": {"rules": []},\n "store": }\n')
    message = one_error_line(tracescore("drift", "--config", str(bad_json), "--store", str(tmp_path / "d")))
    assert message == f"tracescore: error: config file {bad_json}:2:11: invalid JSON: Expecting value\n"
    missing = one_error_line(tracescore("serve", "--config", str(tmp_path / "nope.yaml")))
    assert message != missing
    nope = tmp_path / "nope.yaml"
    assert missing == f"tracescore: error: config file {nope}: cannot read it (No such file or directory)\n"


def test_config_errors_name_where_each_value_came_from(tmp_path: Path) -> None:
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        "receiver:\n"
        "  host: 127.0.0.1\n"
        "scoring:\n"
        "  rules:\n"
        "    - scorer: textual-difference\n"
        "    - scorer: tone\n"
        "      samplerate: 0.5\n"
    )
    done = tracescore(
        "serve",
        "--config",
        str(config),
        "--memory-limit",
        "1MB",
        env={**ENV, "TRACESCORE_GRPC_PORT": "four"},
    )
    assert one_error_line(done).splitlines() == [
        "tracescore: error: invalid configuration (3 errors):",
        "  environment variable TRACESCORE_GRPC_PORT: receiver.grpc_port: Input should be a valid integer, "
        "unable to parse string as an integer (got 'four')",
        "  flag --memory-limit: memory_limit: Input should be greater than or equal to 268435456 (got '1MB')",
        f"  {config}:7: scoring.rules[1] (tone): samplerate: unknown key; did you mean 'sample_rate'?",
    ]  # flags and variables first, then the file's errors by line


def test_a_secret_value_is_never_repeated_in_an_error(tmp_path: Path) -> None:
    config = tmp_path / "tracescore.yaml"
    config.write_text("store_password: 12345\n")
    message = one_error_line(tracescore("serve", "--config", str(config)))
    assert "12345" not in message
    assert "store_password" in message


def test_a_bug_is_one_line_and_its_traceback_comes_with_verbose(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"output": [{"role": "assistant", "content": "Paris"}]}))
    broken = "tests.cli.broken_scorers:create_broken_scorer"
    done = tracescore("score", broken, "--run", str(run))
    assert done.returncode == 1
    assert done.stderr == (
        "tracescore: error: score failed unexpectedly: RuntimeError: the factory is broken\n"
        "(run it again with -v for the traceback, and please report it)\n"
    )
    verbose = tracescore("score", broken, "--run", str(run), "-v")
    assert verbose.returncode == 1
    assert "Traceback (most recent call last)" in verbose.stderr
    assert "RuntimeError: the factory is broken" in verbose.stderr


def start(tmp_path: Path, *args: str, http_port: int, grpc_port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracescore.ingest.cli",
            "serve",
            "--store",
            str(tmp_path / "data"),
            "--http-port",
            str(http_port),
            "--grpc-port",
            str(grpc_port),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def test_one_startup_summary_on_stderr_with_rules_judge_and_kafka(tmp_path: Path) -> None:
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        "scoring:\n"
        "  judge: {model: openai/gpt-4o-mini, api_base: 'http://127.0.0.1:9/v1'}\n"
        "  rules:\n"
        "    - scorer: textual-difference\n"
        "    - name: polite\n"
        "      scorer: toxicity\n"
        "      sample_rate: 0.1\n"
    )
    http_port, grpc_port = free_port(), free_port()
    proc = start(tmp_path, "--config", str(config), http_port=http_port, grpc_port=grpc_port)
    try:
        wait_healthy(proc, http_port)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out == ""  # serve has no machine output: everything it says is a log line on stderr
    assert err.count(" serving (replica ") == 1
    summary = err.split(" serving (replica ", 1)[1].splitlines()[1:9]
    rules = summary.pop(5)
    assert summary == [
        f"  OTLP/gRPC  127.0.0.1:{grpc_port}",
        f"  OTLP/HTTP  127.0.0.1:{http_port} (also /api/scores, /healthz, /metrics)",
        f"  store      chdb://{tmp_path / 'data'}, database default (embedded: one process at a time)",
        "  kafka      off (no kafka.bootstrap)",
        "  judge      openai/gpt-4o-mini at http://127.0.0.1:9/v1",
        "  drift      every 5m, 0 webhooks",
        "  export     off",
    ]
    # Each rule's derived version: the prebuilt scorers' declared 1, and the hash of their configuration.
    assert re.fullmatch(
        r"  rules      2: textual-difference \(every run, version 1\+[0-9a-f]{8}\), "
        r"polite \(toxicity, 10% of runs, version 1\+[0-9a-f]{8}\)",
        rules,
    )


def test_a_busy_port_names_the_receiver_and_the_flag(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        proc = start(tmp_path, http_port=busy, grpc_port=free_port())
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"tracescore: error: OTLP/HTTP receiver cannot listen on 127.0.0.1:{busy}: Address already in use "
        "(another tracescore or an OpenTelemetry Collector?); choose another port with --http-port, "
        "TRACESCORE_HTTP_PORT or receiver.http_port"
    )


async def tracescore_async(*args: str) -> subprocess.CompletedProcess[str]:
    """``tracescore`` in a subprocess while this test's event loop serves the local judge."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tracescore.ingest.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**ENV, "COLUMNS": "200"},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return subprocess.CompletedProcess(list(args), proc.returncode or 0, out.decode(), err.decode())


async def test_with_an_llm_judge_stdout_is_only_the_json(tmp_path: Path, llm_server: LLMServer) -> None:
    llm_server.responder = lambda body: json_reply({"verdicts": [{"verdict": "no", "reason": "calm"}]})
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"output": [{"role": "assistant", "content": "Paris is lovely in spring."}]}))
    judge = {"model": "openai/gpt-4o-mini", "api_base": llm_server.api_base, "api_key": "test-key"}
    done = await tracescore_async(
        "score", "toxicity", "--run", str(run), "--options", json.dumps({"judge": judge})
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # nothing but the result: no litellm lines
    assert (result["scorer_id"], result["score"]) == ("toxicity", 0.0)
    assert "LiteLLM" not in done.stderr

    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"input": "Hi", "output": f"Answer {i}."}) + "\n" for i in range(4)))
    scorer = "toxicity=" + json.dumps({"judge": judge})
    evaluated = await tracescore_async("eval", "--data", str(data), "--scorer", scorer)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "LiteLLM" not in evaluated.stdout + evaluated.stderr
    table = [line for line in evaluated.stdout.splitlines() if "toxicity" in line]
    assert len(table) == 1
    assert len(evaluated.stdout.splitlines()) < 12  # the results table, not two lines per judge call
    assert len(llm_server.chat_requests) == 10  # toxicity asks twice per run (verdicts, reason): 5 runs
