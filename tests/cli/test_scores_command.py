"""``tracescore scores`` as users run it: a separate process, against a running ``tracescore serve``
(which holds the embedded store, so the command asks its HTTP API) and against the store of a stopped
one (opened directly). The running service's traces are those of ``tests.support.scored_service``."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fixture_files import OTLP_DIR
from tests.support.scored_service import TOKEN, ScoredService, scored_service
from tests.support.serve import ENV, api_rows, free_port, start_serve, stop, tracescore, wait_healthy
from tests.support.service import running_service, service_config
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import OTEL_TRACES_COLUMNS, SCORES_COLUMNS, span_row
from tracescore.schemas.spans import Span

UNKNOWN = "0123456789abcdef0123456789abcdef"
ELSEWHERE = "fedcba9876543210fedcba9876543210"
GENAI_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
GENAI_TRACE = "5dbdf98695bd5785f3d3e61006ad2dba"
DEFAULT_SCORERS = ["content-similarity", "textual-difference"]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoredService]:
    with scored_service(tmp_path_factory.mktemp("scores-command")) as running:
        yield running


def _env(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in ENV.items() if not k.startswith("TRACESCORE_")}
    return {**env, **variables}


def _with_token(**variables: str) -> dict[str, str]:
    return _env(TRACESCORE_AUTH_TOKEN=TOKEN, **variables)


def _scores(service: ScoredService, *args: str, env: dict[str, str] | None = None) -> Any:
    """``tracescore scores --json`` on the running service's store; the parsed stdout."""
    done = tracescore(
        "scores",
        "--store",
        str(service.store),
        "--url",
        service.base,
        "--json",
        *args,
        env=env or _with_token(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _keys(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((row["trace_id"], row["scorer_id"]) for row in rows)


def test_while_the_service_holds_the_store_the_command_asks_its_api(service: ScoredService) -> None:
    shop, travel = service.traces["shop"], service.traces["travel"]
    done = tracescore(
        "scores", "--store", str(service.store), "--url", service.base, "--json", env=_with_token()
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert _keys(rows) == sorted(
        [(shop, "similarity"), (shop, "textual-difference")]
        + [(travel, "similarity"), (travel, "textual-difference")]
    )
    assert "Cannot lock" not in done.stderr  # the held store is seen, not opened
    assert "error" not in done.stderr
    # The service still serves after the command looked at its store.
    assert service.get("/api/scores", {"trace_id": shop}).status == 200


def test_the_default_url_is_the_configured_http_port(service: ScoredService) -> None:
    port = service.base.rsplit(":", 1)[1]
    done = tracescore(
        "scores",
        "--store",
        str(service.store),
        "--json",
        "--limit",
        "1",
        env=_with_token(TRACESCORE_HTTP_PORT=port),
    )
    assert done.returncode == 0, done.stderr
    assert [row["trace_id"] for row in json.loads(done.stdout)] == [service.traces["travel"]]


def test_tracescore_url_without_store_asks_that_service(service: ScoredService) -> None:
    done = tracescore(
        "scores", "--json", "--service", "lab", "--decisions", env=_with_token(TRACESCORE_URL=service.base)
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 4


def test_each_filter_flag(service: ScoredService) -> None:
    shop, travel, lab = service.traces["shop"], service.traces["travel"], service.traces["lab"]
    # Flags in pairs where leaving out either one would show more rows.
    assert _keys(_scores(service, "--trace-id", shop, "--scorer", "similarity")) == [(shop, "similarity")]
    shop_only = _scores(service, "--service", "shop-api", "--limit", "1")
    assert [r["trace_id"] for r in shop_only] == [shop]  # the newest row of all is travel's
    assert {r["trace_id"] for r in _scores(service, "--agent", "weather_agent")} == {shop}
    assert {r["trace_id"] for r in _scores(service, "--since", service.between.isoformat())} == {travel}
    assert {r["trace_id"] for r in _scores(service, "--until", service.between.isoformat())} == {shop}
    failed = _scores(service, "--decision", "failed")  # --decision implies --decisions
    assert [(r["trace_id"], r["scorer_id"], r["decision"]) for r in failed] == [
        (lab, "overconfident", "failed")
    ]


def test_the_table(service: ScoredService) -> None:
    done = tracescore(
        "scores",
        "--store",
        str(service.store),
        "--url",
        service.base,
        "--service",
        "travel-api",
        env=_with_token(),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any("written (UTC)" in line and "scorer" in line and "score" in line for line in lines)
    rows = [line for line in lines if service.traces["travel"][:8] in line]  # ids as git shows them
    assert len(rows) == 2
    assert any("similarity" in line and "travel-api" in line and "travel_agent" in line for line in rows)
    assert lines[-1] == "2 score(s)"
    limited = tracescore("scores", "--url", service.base, "--limit", "1", "--decisions", env=_with_token())
    assert limited.stdout.splitlines()[-1] == "1 decision(s) (the newest 1; --limit for more)"
    nothing = tracescore("scores", "--url", service.base, "--service", "nobody", env=_with_token())
    assert (nothing.returncode, nothing.stdout) == (0, "no scores match\n")


def test_a_trace_without_rows_says_why_and_exits_1(service: ScoredService) -> None:
    lab, waiting = service.traces["lab"], service.traces["waiting"]
    unknown = tracescore("scores", "--url", service.base, "--trace-id", UNKNOWN, env=_with_token())
    assert (unknown.returncode, unknown.stdout) == (
        1,
        f"trace {UNKNOWN}: not received: no span of this trace is in the store\n",
    )
    pending = tracescore(
        "scores", "--url", service.base, "--trace-id", waiting, "--decisions", env=_with_token()
    )
    assert pending.returncode == 1
    assert pending.stdout.startswith(f"trace {waiting}: received, not yet scored: 1 span(s) are stored")
    not_scored = tracescore("scores", "--url", service.base, "--trace-id", lab, "--json", env=_with_token())
    assert not_scored.returncode == 1
    answer = json.loads(not_scored.stdout)
    assert (answer["status"], answer["decisions"]) == (
        "not_scored",
        {"failed": 1, "filtered": 2, "sampled_out": 1},
    )
    assert answer["message"].startswith("received, not scored: no scorer gave this trace a score")
    assert answer["see"] == f"/api/decisions?trace_id={lab}"


def test_without_the_token_the_command_says_which_variable_to_set(service: ScoredService) -> None:
    missing = tracescore("scores", "--url", service.base, env=_env())
    assert missing.returncode == 2
    assert missing.stderr == (
        f"tracescore: error: the service at {service.base} wants a bearer token: set TRACESCORE_AUTH_TOKEN\n"
    )
    wrong = tracescore("scores", "--url", service.base, env=_env(TRACESCORE_AUTH_TOKEN="not-it"))
    assert wrong.returncode == 2
    assert wrong.stderr == (
        f"tracescore: error: the service at {service.base} refused the token of TRACESCORE_AUTH_TOKEN: "
        "set TRACESCORE_AUTH_TOKEN\n"
    )


def test_a_held_store_and_no_service_at_the_url_is_one_line(service: ScoredService) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    done = tracescore("scores", "--store", str(service.store), "--url", nowhere, env=_with_token())
    assert done.returncode == 1
    assert done.stderr == (
        f"tracescore: error: the store {service.store} is held by another process (a running 'tracescore "
        f"serve'?), and no tracescore service answers at {nowhere} (Connection refused); give the --url of "
        "the service that holds it\n"
    )
    assert done.stdout == ""


def test_a_url_where_nothing_answers_is_one_line() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    done = tracescore("scores", "--url", nowhere, env=_env())
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr == f"tracescore: error: no tracescore service answers at {nowhere} (Connection refused)\n"
    )


def test_a_url_that_is_not_tracescore_is_one_line(service: ScoredService) -> None:
    not_the_api = f"{service.base}/metrics"
    done = tracescore("scores", "--url", not_the_api, env=_with_token())
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr
        == f"tracescore: error: {not_the_api}/api/scores did not answer as tracescore does (HTTP 404)\n"
    )


async def test_a_store_failure_behind_the_api_is_one_line(tmp_path: Path) -> None:
    async with running_service(service_config(tmp_path)) as running:
        await running.store.query("DROP TABLE scores")
        base = f"http://127.0.0.1:{running.http.port}"
        done = await asyncio.to_thread(tracescore, "scores", "--url", base, env=_env())
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"tracescore: error: the service at {base} answered 500: the store could not answer (the service log "
        "has the detail)\n"
    )


def test_no_store_is_a_usage_error_and_creates_nothing(tmp_path: Path) -> None:
    port = free_port()
    done = tracescore("scores", "--store", str(tmp_path / "none"), env=_env(TRACESCORE_HTTP_PORT=str(port)))
    assert done.returncode == 2
    assert done.stderr == (
        f"tracescore: error: there is no tracescore store at {tmp_path / 'none'} (from --store): "
        f"'tracescore serve --store {tmp_path / 'none'}' creates one there\n"
    )
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--since", "yesterday"],
            "tracescore: error: --since: 'yesterday' is not a time: give an RFC 3339 time "
            "(2026-11-20T00:00:00Z) or an age (30m, 1h, 7d)\n",
        ),
        (["--limit", "0"], "tracescore: error: --limit: must be a whole number from 1 to 10000\n"),
        (["--trace-id", "xyz"], "tracescore: error: --trace-id: must be 32 hex characters\n"),
    ],
)
def test_a_wrong_flag_exits_2_naming_it(tmp_path: Path, args: list[str], message: str) -> None:
    done = tracescore("scores", "--store", str(tmp_path / "none"), *args, env=_env())
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)


def test_an_unknown_decision_kind_is_a_usage_error(tmp_path: Path) -> None:
    done = tracescore("scores", "--decision", "lost", env=_env())
    assert done.returncode == 2
    assert "argument --decision: invalid choice: 'lost'" in done.stderr


async def _replay_one_score(store_dir: Path, scorer_id: str, reason: str) -> None:
    """Write one stored score row again, newer and with another reason, as a replay would; and two
    spans of another trace straight into otel_traces, as another exporter sharing the store would."""
    store = Store(str(store_dir))
    await store.start()
    try:
        now = time.time_ns()
        spans = [
            Span(
                trace_id=ELSEWHERE,
                span_id=span_id,
                name="GET /",
                start_time_unix_nano=now,
                end_time_unix_nano=now,
            )
            for span_id in ("00000000000000a1", "00000000000000a2")
        ]
        await store.insert("otel_traces", [span_row(span) for span in spans], OTEL_TRACES_COLUMNS)
        [row] = await store.query(
            f"SELECT {', '.join(SCORES_COLUMNS)} FROM scores WHERE ScorerId = {{scorer:String}}",
            {"scorer": scorer_id},
        )
        replayed = {**row, "Reason": reason, "Version": row["Version"] + 1}
        await store.insert("scores", [[replayed[column] for column in SCORES_COLUMNS]], SCORES_COLUMNS)
        [count] = await store.query("SELECT count() AS n FROM scores")  # both copies are there
        assert count["n"] == 3
    finally:
        await store.shutdown()


def test_a_stopped_services_store_is_read_directly_and_a_replay_counts_once(tmp_path: Path) -> None:
    store = tmp_path / "data"
    proc, http_port = start_serve(store, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        request = urllib.request.Request(
            f"{base}/v1/traces", data=GENAI_MAIN.read_bytes(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200
        deadline = time.monotonic() + 60
        while len(api_rows(f"{base}/api/scores?trace_id={GENAI_TRACE}")) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            stop(proc)

    asyncio.run(_replay_one_score(store, "textual-difference", "replayed"))
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing answers there: the rows come from the store
    done = tracescore("scores", "--store", str(store), "--url", nowhere, "--json", env=_env())
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert sorted(r["scorer_id"] for r in rows) == DEFAULT_SCORERS
    assert {r["scorer_id"]: r["reason"] for r in rows}["textual-difference"] == "replayed"

    decisions = tracescore(
        "scores", "--store", str(store), "--url", nowhere, "--decisions", "--json", env=_env()
    )
    assert sorted((r["scorer_id"], r["decision"]) for r in json.loads(decisions.stdout)) == [
        (scorer, "scored") for scorer in DEFAULT_SCORERS
    ]
    unknown = tracescore(
        "scores", "--store", str(store), "--url", nowhere, "--trace-id", UNKNOWN, "--json", env=_env()
    )
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout)["status"] == "not_received"
    elsewhere = tracescore(
        "scores", "--store", str(store), "--url", nowhere, "--trace-id", ELSEWHERE, env=_env()
    )
    assert (elsewhere.returncode, elsewhere.stdout) == (
        1,
        f"trace {ELSEWHERE}: not received: 2 span(s) of this trace are in otel_traces, written by another "
        "exporter; tracescore scores only the spans sent to it\n",
    )
