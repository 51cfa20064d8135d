"""The running service is the store's front door: ``scores``, ``runs``, ``drift`` and ``backfill`` run
as their own processes while ``tracescore serve`` holds the embedded store (chDB allows one process
per data directory), through its HTTP API with the bearer token of TRACESCORE_AUTH_TOKEN, and print
what they print on a store no process holds. A path without a store is a usage error that creates
nothing; ``demo`` keeps its runs in a store of its own.

The comparison: two agent runs are scored by a service with two rules, which then stops; its store
is copied; a service with a third rule serves the original while the commands run against it, then
stops, and the same commands run on the copy, opened directly. Both stores hold the same rows up to
the backfill, which scores the third rule on both.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from tests.support.otlp import send_scenario
from tests.support.serve import ENV, free_port, start_serve, stop, tracescore, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS
from tracescore.ingest.store.engine_open import held_by_another as held

TOKEN = "front-door-token"
WEATHER, TRAVEL = SCENARIOS[0], SCENARIOS[2]
RULES = [{"scorer": "content-similarity"}, {"scorer": "textual-difference"}]
LATE_RULE = {"scorer": "textual-difference", "name": "late-difference"}


def _env(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in ENV.items() if not k.startswith(("TRACESCORE_", "XDG_"))}
    return {**env, **variables}


@dataclass
class Outputs:
    through_service: list[subprocess.CompletedProcess[str]]
    on_the_store: list[subprocess.CompletedProcess[str]]
    commands: list[list[str]]
    traces: dict[str, str]
    backfill_lines: list[dict[str, object]]


def _config(path: Path, rules: Sequence[Mapping[str, object]]) -> Path:
    path.write_text(yaml.safe_dump({"scoring": {"rules": rules}}))
    return path


def _decided(base: str, trace_id: str, count: int) -> None:
    deadline = time.monotonic() + 60
    request = urllib.request.Request(
        f"{base}/api/decisions?trace_id={trace_id}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as resp:
                if len(json.loads(resp.read())) >= count:
                    return
        except urllib.error.HTTPError as exc:
            exc.close()
        assert time.monotonic() < deadline, trace_id
        time.sleep(0.2)


def _backfill_stream(base: str, since: str, until: str) -> list[dict[str, object]]:
    """POST /api/backfill (a dry run) as the command sends it; its JSON lines."""
    body = json.dumps({"since": since, "until": until, "dry_run": True}).encode()
    request = urllib.request.Request(
        f"{base}/api/backfill",
        data=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        assert resp.headers["Content-Type"] == "application/x-ndjson"
        return [json.loads(line) for line in resp.read().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outputs]:
    tmp = tmp_path_factory.mktemp("front-door")
    store, copy = tmp / "data", tmp / "copy"
    first = _config(tmp / "first.yaml", RULES)
    both = _config(tmp / "both.yaml", [*RULES, LATE_RULE])
    serve_env = _env(TRACESCORE_AUTH_TOKEN=TOKEN)
    sent = datetime.now(UTC) - timedelta(minutes=1)
    grpc_port = free_port()
    proc, http_port = start_serve(
        store, "--config", str(first), "--idle", "0.2", grpc_port=grpc_port, env=serve_env
    )
    try:
        base = wait_healthy(proc, http_port)
        traces = {}
        for name, scenario in (("weather", WEATHER), ("travel", TRAVEL)):
            traces[name] = send_scenario(grpc_port, f"{name}-api", scenario, TOKEN)
            _decided(base, traces[name], len(RULES))
    finally:
        assert stop(proc) == 0
    shutil.copytree(store, copy, symlinks=True)  # the engine links tables by relative paths

    since, until = sent.isoformat(), (sent + timedelta(hours=1)).isoformat()
    commands = [
        ["scores", "--json"],
        ["scores", "--decisions"],
        ["runs", "--trace-id", traces["weather"]],
        ["runs", "--trace-id", traces["travel"], "--json"],
        ["drift", "--until", until, "--json"],
        ["drift", "--until", until],
        ["backfill", "--since", since, "--until", until, "--dry-run", "--json"],
        ["backfill", "--since", since, "--until", until],
    ]
    proc, http_port = start_serve(store, "--config", str(both), grpc_port=free_port(), env=serve_env)
    try:
        base = wait_healthy(proc, http_port)
        assert held(str(store))  # the service holds it: the commands cannot open it themselves
        command_env = _env(TRACESCORE_AUTH_TOKEN=TOKEN, TRACESCORE_HTTP_PORT=str(http_port))
        backfill_lines = _backfill_stream(base, since, until)
        through = [
            tracescore(*command, "--store", str(store), "--config", str(both), env=command_env)
            for command in commands
        ]
    finally:
        assert stop(proc) == 0
    nowhere = _env(TRACESCORE_HTTP_PORT=str(free_port()))  # no service: the copy is opened directly
    direct = [
        tracescore(*command, "--store", str(copy), "--config", str(both), env=nowhere) for command in commands
    ]
    yield Outputs(through, direct, commands, traces, backfill_lines)


def _same(output: str) -> str:
    """The output without the time a drift pass took (its last line: "… (0.04 s)")."""
    return re.sub(r"\(\d+\.\d\d s\)", "(… s)", output)


@pytest.mark.parametrize("index", range(8))
def test_each_command_prints_the_same_through_the_service_as_on_the_store(
    outputs: Outputs, index: int
) -> None:
    through, direct = outputs.through_service[index], outputs.on_the_store[index]
    assert through.returncode == 0, (outputs.commands[index], through.stderr)
    assert direct.returncode == 0, (outputs.commands[index], direct.stderr)
    assert through.stdout.strip()
    assert _same(through.stdout) == _same(direct.stdout)
    assert "error" not in through.stderr.lower() and "Cannot lock" not in through.stderr


def test_what_the_commands_printed(outputs: Outputs) -> None:
    """The outputs compared above hold what each command is for."""
    weather, travel = outputs.traces["weather"], outputs.traces["travel"]
    rows = json.loads(outputs.through_service[0].stdout)
    assert sorted((r["trace_id"], r["scorer_id"]) for r in rows) == sorted(
        (t, s) for t in (weather, travel) for s in ("content-similarity", "textual-difference")
    )
    runs = outputs.through_service[2].stdout
    assert runs.startswith(f"trace {weather}: ")
    assert "rules targeting it: content-similarity, textual-difference, late-difference" in runs
    assert "content-similarity: scored" in runs and "as its scorers received it (AgentRun JSON):" in runs
    travel_units = json.loads(outputs.through_service[3].stdout)
    assert travel_units["trace_id"] == travel
    assert travel_units["units"][0]["unit"]["agent_name"] == "travel_agent"
    drift = json.loads(outputs.through_service[4].stdout)
    assert {f["scorer_id"] for f in drift} == {"content-similarity", "textual-difference"}
    assert all(f["state"] == "insufficient" for f in drift)  # two runs are too few to test
    plan = json.loads(outputs.through_service[6].stdout)
    assert (plan["traces"], plan["scorer_runs"], plan["runs"]) == (2, 2, 2)  # only the late rule is new
    backfilled = outputs.through_service[7].stdout.splitlines()
    assert backfilled[1:] == [
        "ran 2 scorer run(s) on 2 run(s); judge calls 0, cost $0.0000",
        "decisions: scored 2",
    ]


def test_a_backfill_in_the_service_streams_its_progress(outputs: Outputs) -> None:
    *progress, last = outputs.backfill_lines
    assert progress and all(set(line) == {"progress"} for line in progress)
    assert progress[-1] == {"progress": {"done": 2, "total": 2}}
    assert last == {
        "report": {
            "traces": 2,
            "not_in_ledger": 0,
            "runs": 2,
            "scorer_runs": 2,
            "judge_calls": 0,
            "cost_usd": 0.0,
            "decisions": {},
        }
    }


@pytest.mark.parametrize(
    "command", [["scores"], ["runs", "--trace-id", "0" * 32], ["drift"], ["backfill", "--since", "1h"]]
)
def test_a_path_without_a_store_is_a_usage_error_that_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    done = tracescore(*command, "--store", "typo", cwd=tmp_path, env=_env())
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"tracescore: error: there is no tracescore store at {tmp_path / 'typo'} (from --store): "
        f"'tracescore serve --store {tmp_path / 'typo'}' creates one there\n"
    )
    assert not (tmp_path / "typo").exists()
    from_env = tracescore(*command, cwd=tmp_path, env=_env(TRACESCORE_STORE=str(tmp_path / "gone")))
    assert from_env.returncode == 2
    assert f"no tracescore store at {tmp_path / 'gone'} (from TRACESCORE_STORE)" in from_env.stderr
    assert not (tmp_path / "gone").exists()


def test_without_the_default_store_or_a_service_the_error_says_both_and_names_an_old_store(
    tmp_path: Path,
) -> None:
    home, port = tmp_path / "home", free_port()
    old = tmp_path / "tracescore-data"
    (old / "metadata").mkdir(parents=True)  # a store made by an earlier version in the working directory
    done = tracescore("drift", cwd=tmp_path, env=_env(HOME=str(home), TRACESCORE_HTTP_PORT=str(port)))
    default = home / ".local" / "share" / "tracescore" / "store"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"tracescore: error: there is no tracescore store at {default} (the default store), and no "
        f"tracescore service answers at http://127.0.0.1:{port} (Connection refused); 'tracescore serve' "
        f"creates it; or give --store, or the --url of a running service; {old} is a store (the default "
        f"of earlier versions): give --store {old}, or move it to {default}\n"
    )
    assert not default.exists()


def test_demo_keeps_its_runs_apart_from_the_served_store(tmp_path: Path) -> None:
    """``serve`` and ``demo`` with their defaults, at once: the demo neither waits for the served store
    nor writes into it."""
    home = tmp_path / "home"
    env = _env(HOME=str(home))
    old = tmp_path / "tracescore-data"
    (old / "metadata").mkdir(parents=True)  # the store of an earlier version, in the working directory
    data = home / ".local" / "share" / "tracescore"
    http_port, log = free_port(), tmp_path / "serve.log"
    with log.open("w") as stderr:
        serve = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracescore.ingest.cli",
                "serve",
                "--grpc-port",
                str(free_port()),
                "--http-port",
                str(http_port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
            env=env,
            cwd=tmp_path,
        )
    try:
        wait_healthy(serve, http_port)
        demo = tracescore("demo", env=env)
        assert demo.returncode == 0, demo.stderr
        assert f"spans and scores are in chdb://{data / 'demo'}" in demo.stdout.replace("\n", "")
        served = tracescore("scores", "--json", env=env | {"TRACESCORE_HTTP_PORT": str(http_port)})
        assert (served.returncode, json.loads(served.stdout)) == (0, [])  # none of the demo's runs
    finally:
        stop(serve)
    logged = log.read_text()
    assert f"no store at {data / 'store'} yet: creating a new, empty one" in logged
    assert (
        f"{old} holds the store of an earlier tracescore (whose default was ./tracescore-data); the default "
        f"is now {data / 'store'}: to keep using it, give --store {old} (or TRACESCORE_STORE), or stop and "
        "move it there"
    ) in logged
    assert sorted(os.listdir(data)) == ["demo", "demo-report.html", "store"]  # the demo's report beside it
