"""The report shows what other parts of tracescore add to the store as soon as it holds it, read
generically: decisions of a kind it does not know (a gate's ``gated``, counted as judge calls avoided),
a scorer's version changes (the distinct ``ScorerVersion`` values of ``scores``), and agreement with
human labels (an ``annotations`` table and the rows of an agreement reader). Rows are written to a real
chDB store the way the service writes them (``tests.support.drift.Streams``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from tests.support.drift import NOW, Streams
from tracescore.ingest.reporting.report_page import build_report
from tracescore.ingest.store.clickhouse import Store

SINCE, UNTIL = NOW - timedelta(days=1), NOW


async def _page(store: Store, **agreement: Any) -> str:
    return await build_report(store, (), SINCE, UNTIL, max_items=1000, **agreement)


async def test_decisions_of_a_new_kind_show_and_gated_ones_count_as_calls_avoided(store: Store) -> None:
    streams = Streams(seed=3, now=NOW)
    starts = streams.times(5, NOW - timedelta(hours=2), NOW)
    streams.add_decisions("toxicity", [False] * 5, starts)
    for row in streams.decisions[:3]:
        row[4], row[5] = "gated", "held by rule tone: score 0.9 is not below 0.5"
    await streams.write(store)
    page = await _page(store)
    assert "<th>gated</th><th>scored</th>" in page.replace("\n", "")
    assert "Judge calls avoided by gates: <strong>3</strong>" in page
    assert "held by rule tone: score 0.9 is not below 0.5" in page


async def test_a_new_scorer_version_is_listed_and_marked(store: Store) -> None:
    streams = Streams(seed=4, now=NOW)
    streams.add(
        "toxicity", np.full(4, 0.2), streams.times(4, NOW - timedelta(hours=20), NOW - timedelta(hours=10))
    )
    streams.add(
        "toxicity", np.full(3, 0.4), streams.times(3, NOW - timedelta(hours=5), NOW - timedelta(hours=1))
    )
    for row in streams.scores[4:]:
        row[5] = "v2-prompt-edited"
    await streams.write(store)
    page = await _page(store)
    assert "<td><code>1</code></td>" in page and "<td><code>v2-prompt-edited</code></td>" in page
    charts = json.loads(
        re.findall(r'<script type="application/json" id="chart-data">(.*?)</script>', page)[0]
    )
    marks = [note["text"] for note in charts["scores-over-time-0"]["layout"]["annotations"]]
    assert marks == ["version v2-prompt-edited"]  # the chart's mark where the new version first scored


async def test_agreement_says_no_labels_until_the_store_has_them_then_shows_the_rows(store: Store) -> None:
    assert "No labels yet: no scorer's scores of this period have human labels" in await _page(store)

    async def agreement_rows(
        reader_store: Store, since: datetime, until: datetime
    ) -> Sequence[Mapping[str, Any]]:
        assert (reader_store, since, until) == (store, SINCE, UNTIL)
        return [{"scorer_id": "<b>tone</b>", "kappa": 0.61, "pairs": 40}]

    page = (await _page(store, agreement=agreement_rows)).replace("\n", "")
    assert "<tr><th>scorer_id</th><th>kappa</th><th>pairs</th></tr>" in page
    assert "<tr><td>&lt;b&gt;tone&lt;/b&gt;</td><td>0.61</td><td>40</td></tr>" in page
