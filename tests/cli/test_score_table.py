"""``tracescore scores`` on a terminal, as users run it (a separate process, the embedded store of a
stopped service): a table that fits 80 columns with every score in it, ``--wide`` for full ids, one
name per scorer (rows stored under a prebuilt scorer's former id are found by its name, and by the
former id), and, when ``--scorer`` matches nothing, which scorers do have rows. Also the HTTP API's
filter, which reads the same way."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.serve import ENV, free_port
from tests.support.service import running_service, service_config
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.schemas import Decision, ScoreRecord

TRACE = "5dbdf98695bd5785f3d3e61006ad2dba"
OTHER = "0af7651916cd43dd8448eb211c80319c"
SPAN = "594f8d102c7c4a19"
LONG_REASON = (
    "The answer repeats the question's key terms but never states the forecast it was asked for, so most "
    "of the expected content is missing from it."
)
NOW = datetime(2026, 11, 27, 15, 2, 11, tzinfo=UTC)
CLEAN_ENV = {k: v for k, v in ENV.items() if not k.startswith("TRACESCORE_")}

# (trace, scorer id as stored, score, label, reason): one row stored by an earlier release under the
# former id of content-similarity, one under its name today.
ROWS = [
    (TRACE, "content-similarity-scorer", 0.125, "", "stored before the rename"),
    (OTHER, "content-similarity", 0.875, "similar", LONG_REASON),
    (OTHER, "toxicity", 0.0, "not toxic", "No statement is toxic."),
]


def _records() -> list[ScoreRecord]:
    return [
        ScoreRecord(
            trace_id=trace,
            span_id=SPAN,
            scorer_id=scorer,
            score=score,
            label=label,
            reason=reason,
            service_name="weather-service-production-eu-west",
            agent_name="weather_agent_with_a_long_name",
            created_at=NOW - timedelta(seconds=index),
        )
        for index, (trace, scorer, score, label, reason) in enumerate(ROWS)
    ]


async def _write(store_dir: Path) -> None:
    store = Store(str(store_dir))
    await store.start()
    try:
        decisions = [
            Decision(trace_id=r.trace_id, span_id=r.span_id, scorer_id=r.scorer_id, decision="scored")
            for r in _records()
        ]
        await ClickHouseScoreSink(store).write_scores(_records(), decisions)
    finally:
        await store.shutdown()


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("score-table") / "data"
    asyncio.run(_write(path))
    return path


def _scores(store_dir: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``tracescore scores`` on the store (nothing answers at --url: the store is read directly), its
    stdout piped, at a terminal width of ``columns``."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tracescore.ingest.cli",
            "scores",
            "--store",
            str(store_dir),
            "--url",
            nowhere,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**CLEAN_ENV, "COLUMNS": str(columns)},
    )


def test_the_table_fits_80_columns_with_every_score_and_short_ids(store_dir: Path) -> None:
    done = _scores(store_dir)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "store open" line
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    header, *rows, summary = lines
    assert header.split() == ["written", "(UTC)", "trace", "scorer", "score", "label", "reason"]
    assert summary == "3 score(s)"
    assert [row.split()[:5] for row in rows] == [
        ["11-27", "15:02:11", "5dbdf986", "content-similarity-scorer", "0.125"],
        ["11-27", "15:02:10", "0af76519", "content-similarity", "0.875"],
        ["11-27", "15:02:09", "0af76519", "toxicity", "0.000"],
    ]
    assert "similar" in rows[1] and rows[1].endswith("…")  # the long reason, cut to the line
    assert TRACE not in done.stdout  # ids as git shows them


def test_wider_terminals_add_the_span_service_and_agent(store_dir: Path) -> None:
    done = _scores(store_dir, columns=200)
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 200
    assert lines[0].split() == [
        "written", "(UTC)", "trace", "span", "scorer", "score", "label", "reason", "service", "agent",
    ]  # fmt: skip
    assert "594f8d10" in lines[1] and "weather-service-production-eu-west" in lines[1]


def test_wide_shows_full_ids_and_whole_reasons(store_dir: Path) -> None:
    done = _scores(store_dir, "--wide")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith(f"2026-11-27 15:02:11  {TRACE}  {SPAN}  content-similarity-scorer")
    assert LONG_REASON in lines[2]
    assert "weather_agent_with_a_long_name" in lines[2]


def test_decisions_fit_too(store_dir: Path) -> None:
    done = _scores(store_dir, "--decisions")
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split()[:6] == ["written", "(UTC)", "trace", "span", "scorer", "decision"]
    assert lines[-1] == "3 decision(s)"


def test_a_scorer_is_found_by_its_name_and_by_its_former_id(store_dir: Path) -> None:
    for name in ("content-similarity", "content-similarity-scorer"):
        done = _scores(store_dir, "--scorer", name, "--json")
        assert done.returncode == 0, done.stderr
        found = sorted((row["trace_id"], row["scorer_id"]) for row in json.loads(done.stdout))
        assert found == [(OTHER, "content-similarity"), (TRACE, "content-similarity-scorer")], name
    toxicity = _scores(store_dir, "--scorer", "toxicity-scorer", "--json")  # its former id
    assert [row["score"] for row in json.loads(toxicity.stdout)] == [0.0]


def test_no_match_says_which_scorers_have_rows(store_dir: Path) -> None:
    done = _scores(store_dir, "--scorer", "toxicty")
    assert (done.returncode, done.stdout) == (0, "no scores match\n")
    assert done.stderr == (
        "tracescore: no score of scorer 'toxicty' (did you mean 'toxicity'?); scorers with scores: "
        "content-similarity, content-similarity-scorer, toxicity\n"
    )
    as_json = _scores(store_dir, "--scorer", "nothing-like-it", "--json", "--trace-id", TRACE)
    assert as_json.stdout == "[]\n"
    assert as_json.stderr == (
        "tracescore: no score of scorer 'nothing-like-it'; scorers with scores matching the other filters: "
        "content-similarity-scorer\n"
    )
    decisions = _scores(store_dir, "--scorer", "x", "--decisions", "--service", "elsewhere")
    assert decisions.stderr == "tracescore: no scorer has decisions matching the other filters\n"


async def test_the_api_filter_matches_former_ids_too(tmp_path: Path) -> None:
    async with running_service(service_config(tmp_path)) as running:
        await ClickHouseScoreSink(running.store).write_scores(_records(), [])
        base = f"http://127.0.0.1:{running.http.port}/api/scores?scorer="
        for name in ("content-similarity", "content-similarity-scorer"):
            with await asyncio.to_thread(urllib.request.urlopen, base + name, timeout=10) as resp:
                rows = json.loads(resp.read())
            assert sorted(row["trace_id"] for row in rows) == [OTHER, TRACE], name
