"""Units to label: a scorer's lowest scores, where two scorers disagree most, at random; never one
somebody labelled under the scorer's id already."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tracescore.ingest.store.annotation_rows import insert_annotations
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.label_candidates import pick_units
from tracescore.ingest.store.rows import SCORES_COLUMNS, score_row
from tracescore.schemas import ScoreRecord
from tracescore.schemas.annotations import Annotation

NOW = datetime.now(UTC)
# unit -> (judge's score and label, the cheap check's score and label)
UNITS = {
    1: ((0.9, "pass"), (0.8, "pass")),
    2: ((0.2, "fail"), (0.9, "pass")),  # labels differ
    3: ((0.1, "fail"), (0.7, "fail")),  # the furthest scores with labels alike
    4: ((0.5, "pass"), (0.1, "fail")),  # labels differ, closer scores than unit 2
    5: ((0.05, "fail"), (0.05, "fail")),
}


def ids(unit: int) -> tuple[str, str]:
    return f"{unit:032x}", f"{unit:016x}"


async def scored(store: Store) -> None:
    rows = []
    for unit, scores in UNITS.items():
        for scorer, (score, label) in zip(("judge", "check"), scores, strict=True):
            trace_id, span_id = ids(unit)
            record = ScoreRecord(
                trace_id=trace_id, span_id=span_id, scorer_id=scorer, score=score, label=label, created_at=NOW
            )
            rows.append(score_row(record))
    await store.insert("scores", rows, SCORES_COLUMNS)
    trace_id, span_id = ids(5)
    labelled = Annotation(
        trace_id=trace_id,
        span_id=span_id,
        name="judge",
        label="fail",
        annotator="ann",
        source="api",
        time=NOW,
    )
    await insert_annotations(store, [labelled])


async def test_picks_leave_out_what_is_labelled(store: Store) -> None:
    await scored(store)
    since = NOW - timedelta(days=1)

    lowest = await pick_units(store, "lowest", "judge", 3, since)
    apart = await pick_units(store, "disagreement", "judge", 4, since, other="check")
    anyhow = await pick_units(store, "random", "judge", 10, since)

    assert [ids(3)[0], ids(2)[0], ids(4)[0]] == [c.trace_id for c in lowest]  # unit 5 is labelled
    assert [c.trace_id for c in apart] == [ids(2)[0], ids(4)[0], ids(3)[0], ids(1)[0]]
    assert (apart[0].score, apart[0].label, apart[0].other_score, apart[0].other_label) == (
        0.2,
        "fail",
        0.9,
        "pass",
    )
    assert sorted(c.trace_id for c in anyhow) == sorted(ids(u)[0] for u in (1, 2, 3, 4))
    assert await pick_units(store, "lowest", "judge", 3, NOW + timedelta(minutes=1)) == []
    with pytest.raises(ValueError, match="needs --other"):
        await pick_units(store, "disagreement", "judge", 3, since)
