"""What ``tracescore`` leaves on the terminal, in separate processes as users run it: its own lines
only (no chDB, gRPC or kafka-python lines), quiet ends of broken pipes, bind errors in the OS's words,
one line when serve is interrupted, a broker that is down logged once, unknown ``TRACESCORE_*``
variables named, and every config error at once with its file:line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.kafka import start_broker, stop_broker
from tests.support.serve import ENV, free_port, start_serve, stop, tracescore, wait_healthy

CLEAN_ENV = {k: v for k, v in ENV.items() if not k.startswith(("TRACESCORE_", "GRPC_"))}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``tracescore ARGS`` without the TRACESCORE_* and GRPC_* variables of the test's environment."""
    return subprocess.run(
        [sys.executable, "-m", "tracescore.ingest.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or CLEAN_ENV,
    )


def _closed_early(*args: str) -> tuple[int, str]:
    """``tracescore ARGS | true``: the reader of stdout is gone before anything is written."""
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracescore.ingest.cli", *args],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        env=CLEAN_ENV,
    )
    os.close(write)
    os.close(read)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    for args in (("scorers", "--json"), ("scorers",), ("scorers", "toxicity")):
        assert _closed_early(*args) == (0, ""), args
    # As a shell runs it: head takes three lines and leaves.
    piped = subprocess.run(
        [
            "bash",
            "-c",
            f"{sys.executable} -m tracescore.ingest.cli scorers --json | head -n 3; exit ${{PIPESTATUS[0]}}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=CLEAN_ENV,
    )
    assert (piped.returncode, piped.stdout.splitlines()[0], piped.stderr) == (0, "[", "")


@contextmanager
def _held(store: Path) -> Iterator[None]:
    """The embedded store ``store`` open in another process until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys\n"
            "from tracescore.ingest.store.clickhouse import Store\n"
            "async def main():\n"
            f"    store = Store({str(store)!r})\n"
            "    await store.start()\n"
            "    print('open', flush=True)\n"
            "    await asyncio.to_thread(sys.stdin.read)\n"
            "    await store.shutdown()\n"
            "asyncio.run(main())\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=CLEAN_ENV,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)


def test_a_store_held_by_another_process_is_our_one_line_only(tmp_path: Path) -> None:
    store = tmp_path / "data"
    with _held(store):
        for args in (("drift",), ("backfill", "--since", "1h")):
            # No service answers at the default address: the command says so, in one line of its own.
            done = _run(
                *args, "--store", str(store), env={**CLEAN_ENV, "TRACESCORE_HTTP_PORT": str(free_port())}
            )
            assert done.returncode == 1, args
            (line,) = done.stderr.splitlines()  # no "Code: 76. DB::Exception: Cannot lock file"
            assert line.startswith(f"tracescore: error: the store {store} is held by another process"), line
            assert "give the --url of the service that holds it" in line


def test_no_store_open_line_by_default_and_the_engine_s_with_v(tmp_path: Path) -> None:
    store = tmp_path / "data"
    with _held(store):  # a store to open: commands other than serve never create one
        pass
    quiet = _run("drift", "--store", str(store), "--json")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    verbose = _run("-v", "drift", "--store", str(store), "--json")
    assert verbose.returncode == 0, verbose.stderr
    assert f"DEBUG tracescore.ingest.store.clickhouse: store open: chdb://{store}" in verbose.stderr


def test_bind_errors_say_what_the_os_said(tmp_path: Path) -> None:
    # 192.0.2.1 is TEST-NET-1: documentation only, never an address of this machine.
    done = _run("serve", "--store", str(tmp_path / "data"), "--host", "192.0.2.1", "--http-port", "0")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "tracescore: error: OTLP/gRPC receiver cannot listen on 192.0.2.1:4317: Cannot assign requested "
        "address (no network interface of this machine has that address); choose another host with "
        "--host, TRACESCORE_HOST or receiver.host"
    )
    assert "add_port.cc" not in done.stderr and "Failed to add port" not in done.stderr  # gRPC's C++ line
    assert "port is in use" not in done.stderr
    verbose = _run("-v", "serve", "--store", str(tmp_path / "data"), "--host", "192.0.2.1")
    assert "Failed to add port to server" in verbose.stderr  # with -v, gRPC's own line is there

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        clash = _run("serve", "--store", str(tmp_path / "data"), "--grpc-port", str(busy), "--http-port", "0")
    assert clash.returncode == 2
    assert clash.stderr.splitlines()[-1] == (
        f"tracescore: error: OTLP/gRPC receiver cannot listen on 127.0.0.1:{busy}: Address already in use "
        "(another tracescore or an OpenTelemetry Collector?); choose another port with --grpc-port, "
        "TRACESCORE_GRPC_PORT or receiver.grpc_port"
    )


def test_ctrl_c_on_serve_prints_one_shutdown_line(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    proc, http_port = start_serve(tmp_path / "data", stderr_file=log, env=CLEAN_ENV)
    try:
        wait_healthy(proc, http_port)
        before = log.read_text()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        stop(proc)
    after = log.read_text()[len(before) :].splitlines()
    assert len(after) == 1, after
    assert after[0].endswith(
        "INFO tracescore: SIGINT: shutting down, finishing the work in hand (SIGINT again stops at once)"
    )


def _lines_about_kafka(log: Path) -> list[str]:
    """The log's lines about Kafka, but the startup summary's."""
    lines = log.read_text().splitlines()
    return [line for line in lines if "kafka" in line.lower() and not line.startswith("  kafka ")]


def test_an_unreachable_broker_is_logged_once_and_once_more_when_reached(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there yet
    log = tmp_path / "serve.log"
    proc, http_port = start_serve(
        tmp_path / "data",
        "--kafka-bootstrap",
        f"127.0.0.1:{port}",
        "--kafka-topic",
        "otlp_spans",
        stderr_file=log,
        env=CLEAN_ENV,
    )
    broker = None
    try:
        wait_healthy(proc, http_port)
        deadline = time.monotonic() + 60
        while not _lines_about_kafka(log):  # the first attempt failed
            assert time.monotonic() < deadline, "no line about the unreachable broker"
            time.sleep(0.2)
        time.sleep(5)  # several more attempts, at most 0.5, 1, 2 s apart (kafka-python logs each many times)
        down = _lines_about_kafka(log)
        assert len(down) == 1, down
        assert (
            f"WARNING tracescore.ingest.receivers.kafka: kafka receiver failed on 127.0.0.1:{port}:"
            in down[0]
        )
        assert "trying again with backoff" in down[0]
        broker = start_broker(port)
        deadline = time.monotonic() + 90
        while len(_lines_about_kafka(log)) < 2:
            assert time.monotonic() < deadline, _lines_about_kafka(log)
            time.sleep(0.5)
        back = _lines_about_kafka(log)
        assert len(back) == 2, back
        assert f"kafka receiver reached 127.0.0.1:{port} again after " in back[1]
    finally:
        stop(proc)
        if broker is not None:
            stop_broker(broker)


def test_an_unknown_tracescore_variable_is_named_with_the_one_meant() -> None:
    done = _run("scorers", "--json", env={**CLEAN_ENV, "TRACESCORE_GRPCPORT": "4317", "TRACESCORE_FOO": "1"})
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].endswith(
        "WARNING tracescore: environment variable TRACESCORE_FOO is not one tracescore reads; it is ignored "
        "('tracescore serve --help' lists them)"
    )
    assert lines[1].endswith(
        "WARNING tracescore: environment variable TRACESCORE_GRPCPORT is not one tracescore reads; it is "
        "ignored; did you mean TRACESCORE_GRPC_PORT?"
    )
    known = _run(
        "scorers", "--json", env={**CLEAN_ENV, "TRACESCORE_GRPC_PORT": "4317", "TRACESCORE_URL": "x"}
    )
    assert known.stderr == ""


def test_every_config_error_at_once_each_with_its_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        "receiver:\n"
        "  grpc_port: lots\n"  # 2: the model's
        "scoring:\n"
        "  rules:\n"
        "    - scorer: tonee\n"  # 5: no such scorer
        "    - scorer: check-includes\n"
        "      options:\n"
        "        expectd: Paris\n"  # 8: no such option
        "        ignoreCase: maybe\n"  # 9: not a boolean
        "    - scorer: textual-difference\n"
        "      sample_rate: 2\n"  # 11: the model's, in a rule
    )
    done = _run("serve", "--config", str(config), "--store", str(tmp_path / "data"))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "tracescore: error: invalid configuration (5 errors):\n"
        f"  {config}:2: receiver.grpc_port: Input should be a valid integer, unable to parse string as an "
        "integer (got 'lots')\n"
        f"  {config}:5: scoring.rules[0] (tonee): scorer: unknown scorer 'tonee'; did you mean 'tone'? "
        "('tracescore scorers' lists all 59)\n"
        f"  {config}:8: scoring.rules[1] (check-includes): options.expectd: scorer 'check-includes' has no "
        "option 'expectd'; did you mean 'expected'? (its options: expected, ignore_case)\n"
        f"  {config}:9: scoring.rules[1] (check-includes): options.ignoreCase: scorer 'check-includes': "
        "invalid options: 'ignore_case': Input should be a valid boolean, unable to interpret input "
        "(got 'maybe')\n"
        f"  {config}:11: scoring.rules[2] (textual-difference): sample_rate: Input should be less than or "
        "equal to 1 (got 2)\n"
    )
    assert not (tmp_path / "data").exists()  # refused before anything was opened
    # backfill and drift read the same rules, and say the same.
    for command in (("backfill", "--since", "1h"), ("drift",)):
        again = _run(*command, "--config", str(config), "--store", str(tmp_path / "data"))
        assert (again.returncode, again.stderr) == (2, done.stderr), command


def test_the_rules_together_are_checked_once_each_rule_is_right(tmp_path: Path) -> None:
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        "scoring:\n  rules:\n    - scorer: tone\n    - scorer: tone-scorer\n"  # both store as 'tone'
    )
    done = tracescore("serve", "--config", str(config), "--store", str(tmp_path / "data"), env=CLEAN_ENV)
    assert done.returncode == 2
    assert done.stderr == (
        "tracescore: error: invalid configuration (1 error):\n"
        f"  {config}:2: scoring.rules: scoring rules 0 and 1 both store scores as 'tone' for the same runs; "
        "give one of them a distinct name\n"
    )


def test_a_command_imports_its_own_module_only_and_help_lists_every_command() -> None:
    """Each command pulls in what it runs (the service, the store, litellm): a command started as a
    process pays for its own module, not for the others'."""
    probe = (
        "import sys\n"
        "from tracescore.ingest.cli import COMMAND_MODULES, build_parser\n"
        "build_parser(sys.argv[1:])\n"
        "print(' '.join(n for n in COMMAND_MODULES if f'tracescore.ingest.cli.{n}_command' in sys.modules))\n"
    )

    def imported(*argv: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=ENV, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert imported("-v", "schema", "--database", "x") == ["schema"]
    assert imported("scorers") == ["scorers"]
    every = imported("--help")
    assert len(every) == 14
    assert {"serve", "score", "eval", "schema", "report", "agreement", "annotate"} <= set(every)
    assert imported("scorer") == every  # a mistyped command: every command, for "did you mean"
    done = tracescore("scorer")
    assert done.returncode == 2 and "did you mean 'scorers'" in done.stderr, done.stderr
