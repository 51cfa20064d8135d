"""The report page (``GET /report``, ``tracescore report``) of a store filled by a real ``tracescore
serve``: runs sent by the real OpenTelemetry SDK, one of them hostile (markup and scripts in its input
and output), scored by rules that score, fail, filter and sample out; before the service starts, the
store gets a week of history (a series whose rule was edited five days ago, an older scorer version
before and the service's own since, that drifts in the last hour; and a judge's scores with their
tokens and cost), and a real drift pass of the service records its findings.

What the page shows is checked against what the service's own API answers (``/api/decisions``, the
drift pass) and what the test wrote, and in headless Chromium as a person sees it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.support.drift import Streams
from tests.support.otlp import send_scenario
from tests.support.report_browser import drawn_share, opened
from tests.support.serve import ENV, free_port, start_serve, stop, tracescore, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, LlmStep, Scenario
from tracescore.ingest.reporting.report_page import plotly_js
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.rules import ScorerRule
from tracescore.scoring.runtime.rule_routing import build_rules

TOKEN = "report-test-token"
OVERCONFIDENT = "tests.scoring.custom_scorers:create_overconfident_scorer"
RULES: list[dict[str, Any]] = [
    {"scorer": "textual-difference", "filter": {"service_name": ["shop-api"]}},
    {"scorer": "content-similarity", "filter": {"service_name": ["shop-api"]}},
    {"use": OVERCONFIDENT, "filter": {"service_name": ["lab"]}},
    {"scorer": "textual-difference", "name": "never-sampled", "sample_rate": 0},
]
HOSTILE_INPUT = "<script>window.pwned = 1</script> What is the weather in Oslo?"
HOSTILE_OUTPUT = '</pre><img src=x onerror="window.pwned = 2"><script>window.pwned = 3</script> Snow in Oslo.'
HOSTILE = Scenario(
    agent="weather_agent",
    system="You are a weather assistant.",
    user=HOSTILE_INPUT,
    steps=(LlmStep(text=HOSTILE_OUTPUT, input_tokens=20, output_tokens=12),),
)
JUDGE = "openai/gpt-4o-mini"
JUDGED = 20  # answer-relevancy scores in the history, each 100 + 20 tokens and $0.0005
OLD_VERSION = "1"  # the history's scorer version before its edit
# The version the service derives for the textual-difference rule (the same in every process): the
# history's since the edit, so drift compares the last five days with the last hour.
VERSION = build_rules([ScorerRule.model_validate(RULES[0])])[0][0].version
EDITED = timedelta(days=5)  # how long ago the history's rule was edited
HEADINGS = [
    "Scores over time",
    "Score distributions",
    "Decisions",
    "Lowest scores",
    "Judge cost",
    "Agreement with human labels",
]


@dataclass
class Reported:
    base: str
    store: Path
    traces: dict[str, str]
    drift: dict[str, Any]  # the drift pass's answer
    since: str
    until: str
    page: Path  # GET /report's page, saved


def _history(now: datetime) -> Streams:
    """A week of textual-difference scores around 0.8 (of ``OLD_VERSION`` until the edit, of
    ``VERSION`` since), then 200 around 0.5 in the last hour; and a judge's scores over the last day."""
    streams = Streams(seed=7, now=now)
    series = ("textual-difference", "shop-api", "weather_agent")
    edited = now - EDITED
    for hours_ago in range(2, 7 * 24):
        start = now - timedelta(hours=hours_ago)
        values = np.clip(streams.rng.normal(0.8, 0.05, 10), 0, 1)
        version, written = (OLD_VERSION, edited) if start < edited else (VERSION, now)
        starts = streams.times(10, start, start + timedelta(hours=1))
        streams.add(series[0], values, starts, *series[1:], version=version, written=written)
    window = np.clip(streams.rng.normal(0.5, 0.05, 200), 0, 1)
    streams.add(
        series[0], window, streams.times(200, now - timedelta(hours=1), now), *series[1:], version=VERSION
    )
    judged = streams.times(JUDGED, now - timedelta(hours=20), now - timedelta(hours=2))
    streams.add("answer-relevancy", np.full(JUDGED, 0.9), judged, "shop-api", "weather_agent")
    for row in streams.scores[-JUDGED:]:
        row[10:15] = [JUDGE, 100, 20, 0.0005, 800.0]  # JudgeModel, tokens in and out, cost, latency
    return streams


async def _seed(store_dir: Path, now: datetime) -> None:
    store = Store(str(store_dir))
    await store.start()
    try:
        await _history(now).write(store)
    finally:
        await store.shutdown()


def _get(base: str, path: str, token: str | None = TOKEN) -> tuple[int, str, str]:
    """Status, Content-Type and body of a GET."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(base + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()


def _post(base: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        return json.loads(resp.read())


def _decisions(base: str, trace_id: str) -> list[dict[str, Any]]:
    status, _, body = _get(base, f"/api/decisions?trace_id={trace_id}")
    return json.loads(body) if status == 200 else []


def _wait_decided(base: str, trace_id: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(_decisions(base, trace_id)) < count:
        assert time.monotonic() < deadline, f"{trace_id} not decided"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reported]:
    tmp = tmp_path_factory.mktemp("report")
    store, now = tmp / "data", datetime.now(UTC)
    asyncio.run(_seed(store, now))
    config = tmp / "tracescore.yaml"
    config.write_text(yaml.safe_dump({"scoring": {"rules": RULES}, "receiver": {"auth_token": TOKEN}}))
    grpc_port = free_port()
    proc, http_port = start_serve(store, "--config", str(config), "--idle", "0.2", grpc_port=grpc_port)
    try:
        base = wait_healthy(proc, http_port)
        traces = {
            "weather": send_scenario(grpc_port, "shop-api", SCENARIOS[0], TOKEN),
            "hostile": send_scenario(grpc_port, "shop-api", HOSTILE, TOKEN),
            "lab": send_scenario(grpc_port, "lab", SCENARIOS[0], TOKEN),
        }
        for trace_id in traces.values():
            _wait_decided(base, trace_id, len(RULES))
        until = datetime.now(UTC) + timedelta(seconds=1)
        drift = _post(base, "/api/drift", {"window": "1h", "baseline": "7d", "until": until.isoformat()})
        since, end = (until - timedelta(days=8)).isoformat(), (until + timedelta(minutes=1)).isoformat()
        query = "?" + urllib.parse.urlencode({"since": since, "until": end})
        status, kind, body = _get(base, "/report" + query)
        assert (status, kind) == (200, "text/html; charset=utf-8"), body[:500]
        page = tmp / "served.html"
        page.write_text(body)
        yield Reported(base, store, traces, drift, since, end, page)
    finally:
        stop(proc)


def _text(html: str) -> str:
    """The page's text, tags dropped and entities left as they are."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_report_wants_the_token_and_names_a_wrong_parameter(reported: Reported) -> None:
    status, kind, body = _get(reported.base, "/report", token=None)
    assert (status, kind) == (401, "application/json; charset=utf-8")
    status, _, body = _get(reported.base, "/report?since=yesterday")
    assert status == 400 and json.loads(body)["parameter"] == "since", body
    status, _, body = _get(reported.base, "/report?since=1h&until=2h")
    assert status == 400 and json.loads(body)["parameter"] == "until", body
    status, _, body = _get(reported.base, "/report?scorer=x")
    assert status == 400 and json.loads(body)["parameter"] == "scorer", body


def test_run_text_is_shown_as_text_never_as_markup(reported: Reported) -> None:
    html = reported.page.read_text()
    assert "window.pwned" in html  # the hostile run is among the lowest scores...
    assert "<script>window.pwned" not in html and 'onerror="window' not in html
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt; What is the weather in Oslo?" in html
    assert "&lt;/pre&gt;&lt;img src=x onerror=&#34;window.pwned = 2&#34;&gt;" in html
    # plotly.js, the chart data and the code drawing them: no other script element
    assert html.count("<script") == 3 + plotly_js().count("<script")


def test_the_page_shows_each_section_from_what_the_store_holds(reported: Reported) -> None:
    html = reported.page.read_text()
    assert re.findall(r"<h2 id=\"[a-z-]+\">([^<]+)</h2>", html) == HEADINGS
    text = _text(html)
    # The decision mix: each scorer's decisions as /api/decisions counts them.
    counted: Counter[tuple[str, str]] = Counter(
        (d["scorer_id"], d["decision"])
        for t in reported.traces.values()
        for d in _decisions(reported.base, t)
    )
    assert counted[("overconfident", "failed")] == 1  # lab's run; shop-api's are filtered out
    assert counted[("never-sampled", "sampled_out")] == 3
    row = re.search(r"<tr><td>never-sampled</td>(.*?)</tr>", html, re.S)
    assert row is not None and ">3</td>" in row.group(1)
    # Why not scored: the failure's recorded reason, grouped.
    [failure] = [d for d in _decisions(reported.base, reported.traces["lab"]) if d["decision"] == "failed"]
    assert failure["detail"] and failure["detail"][:60] in text.replace("&#39;", "'").replace("&#34;", '"')
    # Drift: the pass found the history's series drifted; the page lists it.
    drifted = [f for f in reported.drift["findings"] if f["state"] == "drifted"]
    assert [f["scorer_id"] for f in drifted] == ["textual-difference"], reported.drift
    assert re.search(r'<tr class="drift"><td>[^<]+</td><td>textual-difference</td><td>shop-api</td>', html)
    # Versions: the history's and the service's, both listed.
    versions = re.findall(r"<tr><td>textual-difference</td><td><code>([^<]+)</code>", html)
    assert versions[0] == OLD_VERSION and len(versions) == 2 and versions[1] != OLD_VERSION
    # Judge cost: what the history's judge rows add up to.
    cost = re.search(rf"<tr><td>answer-relevancy</td><td>{JUDGE}</td>(.*?)</tr>", html, re.S)
    assert cost is not None
    cells = re.findall(r">([^<]*)</td>", cost.group(1))
    assert cells[:5] == [str(JUDGED), str(100 * JUDGED), str(20 * JUDGED), f"{0.0005 * JUDGED:.6f}", "0.5000"]
    assert "Judge calls avoided by gates: <strong>0</strong>" in html
    assert "No labels yet: no scorer's scores of this period have human labels" in text


def test_the_lowest_runs_link_to_what_their_scorer_saw(reported: Reported) -> None:
    html = reported.page.read_text()
    hostile = reported.traces["hostile"]
    link = f"{reported.base}/api/runs?trace_id={hostile}"
    assert f'href="{link}"' in html
    status, _, body = _get(reported.base, link.removeprefix(reported.base))
    seen = json.loads(body)
    assert status == 200 and seen["trace_id"] == hostile
    assert seen["units"][0]["unit"]["output"][0]["content"] == HOSTILE_OUTPUT


def test_the_command_writes_the_same_page_through_the_service(reported: Reported, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = tracescore(
        *("report", "--store", str(reported.store), "--url", reported.base),
        *("--since", reported.since, "--until", reported.until, "--out", str(out)),
        env={**ENV, "TRACESCORE_AUTH_TOKEN": TOKEN},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)

    def steady(html: str) -> str:  # what differs between two makings of one page
        return re.sub(r"nonce-[\w-]+|nonce=\"[\w-]+\"|made [\d: -]+ UTC", "", html)

    assert steady(out.read_text()) == steady(reported.page.read_text())


def test_a_person_sees_the_page_drawn_offline_in_chromium(reported: Reported, tmp_path: Path) -> None:
    with opened(reported.page) as seen:
        page = seen.page
        charts = page.evaluate(
            """() => Array.from(document.querySelectorAll("div.chart")).map(chart => ({
                id: chart.id,
                kind: chart.dataset.chart,
                svgs: chart.querySelectorAll("svg.main-svg").length,
                marks: chart.querySelectorAll(".scatterlayer .trace path, .barlayer .point path").length,
                labels: Array.from(chart.querySelectorAll(".annotation-text")).map(a => a.textContent),
            }))"""
        )
        headings = page.locator("h2").all_inner_texts()
        lowest = page.locator("tr.lowest-run").all_inner_texts()
        pwned = page.evaluate("() => window.pwned === undefined")
        png = page.screenshot(full_page=True)
        (tmp_path / "report.png").write_bytes(png)
        drawn = drawn_share(page, png)
    assert seen.console == [], seen.console
    assert seen.requests == [reported.page.as_uri()], "the page asked the network for something"
    assert headings == HEADINGS
    assert pwned, "a script in a run's text ran"
    assert any(HOSTILE_INPUT in row and HOSTILE_OUTPUT in row for row in lowest), lowest
    # Every chart drawn: plotly's SVG layers, with marks in them. Scorers: textual-difference,
    # content-similarity, overconfident never scored (it failed), answer-relevancy (history).
    kinds = Counter(chart["kind"] for chart in charts)
    assert kinds == {"over-time": 3, "distribution": 3, "decisions": 1}, charts
    assert all(chart["svgs"] >= 2 and chart["marks"] >= 1 for chart in charts), charts
    labels = [label for chart in charts for label in chart["labels"]]
    assert any(label.startswith("drift (") for label in labels), labels
    assert any(label.startswith("version ") for label in labels), labels
    assert 0.03 < drawn < 0.9, f"{drawn:.1%} of the screenshot is drawn"
