"""What the scorers saw of a stored trace (``GET /api/runs``, ``tracescore runs``).

The units are rebuilt from the spans and log records tracescore received (``span_ledger``), by the
same transform that built them for the scorers: every agent run, one unit per model call, and the
spans that ``span``-target rules choose. Each unit comes as the AgentRun JSON its scorers received,
with the decision each rule made on it (``score_decisions``), the score it gave (``scores``), and what
its judges were sent and answered when ``scoring.record_judge_io`` kept it (``judge_io``). A unit
without message content names the switch that turns content capture on; a trace without any unit
says why (``ingest.transform.diagnose``).

A trace scored in rounds (late spans) shows the units of all its spans, as its last round saw them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from tracescore.ingest.replay.backfill import stored_items
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.store.rows import iso_from_nanos
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.ingest.transform.diagnose import explain_no_run
from tracescore.ingest.transform.scoring_units import build_units
from tracescore.schemas import AgentRun
from tracescore.schemas.rules import SpanTarget
from tracescore.schemas.score_queries import MAX_LIMIT, ResultQuery, TraceStatus
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.runtime.rule_routing import RuleGroup, units_for

UnitKind = str  # "run", "llm_call" or "span"

_JUDGE_IO_SELECT = """
SELECT SpanId, ScorerId, Decision, Exchanges, Version
FROM {database}.judge_io FINAL
WHERE TraceId = {{trace_id:String}}
"""


async def scored_units(
    store: Store, groups: Sequence[RuleGroup], trace_id: str, max_items: int
) -> dict[str, Any] | TraceStatus:
    """The units of ``trace_id`` with their decisions (see the module docstring); the trace's status
    when the store holds nothing of it. ``groups``: the rules, for the units of ``span`` targets and
    for which unit kind each scorer's decisions belong to."""
    stored = (await Ledger(store).load([trace_id])).get(trace_id)
    results = ScoreResults(store)
    query = ResultQuery(trace_id=trace_id, limit=MAX_LIMIT)
    decisions = await results.decisions(query)
    if stored is None and isinstance(decisions, TraceStatus):
        return decisions  # nothing received (or only another exporter's spans)
    spans, logs = stored_items(stored, max_items) if stored is not None else ([], [])
    runs, view = await asyncio.to_thread(build_units, spans, logs, llm_calls=True)
    units = _units(runs, view, groups)
    answer: dict[str, Any] = {
        "trace_id": trace_id,
        "spans": len(spans),
        "log_records": len(logs),
        "units": [
            {
                "kind": kind,
                "span_id": unit.span_id,
                "rules": rules,
                "content_capture": view.content_hint(unit) if unit.content_missing else None,
                "unit": unit.to_json_dict(),
                "decisions": [],
            }
            for kind, unit, rules in units
        ],
        "other_decisions": [],
    }
    if not units:
        answer["no_units"] = explain_no_run(spans, logs) if spans else "no span of this trace was received"
    if isinstance(decisions, TraceStatus):
        answer["status"] = decisions.model_dump(exclude_none=True)
        return answer
    scores = await results.scores(query)
    await _attach(store, answer, decisions, scores if isinstance(scores, list) else [], groups)
    return answer


def _units(
    runs: list[AgentRun], view: TraceView, groups: Sequence[RuleGroup]
) -> list[tuple[UnitKind, AgentRun, list[str]]]:
    """Every run, every model call, and the spans a ``span`` rule chooses that are neither; each
    with the scorer ids of the rules whose target it is."""
    found: list[tuple[UnitKind, AgentRun, list[str]]] = [("run", run, []) for run in runs]
    found += [("llm_call", call, []) for call in view.llm_calls]
    for group in groups:
        kind = _kind(group)
        for unit in units_for(group[0].target, group, runs, view):
            entry = next((e for e in found if e[1].span_id == unit.span_id and kind in (e[0], "span")), None)
            if entry is None:
                entry = ("span", unit, [])
                found.append(entry)
            entry[2].append(group[0].scorer_id)
    return found


def _kind(group: RuleGroup) -> UnitKind:
    target = group[0].target
    return "span" if isinstance(target, SpanTarget) else target


async def _attach(
    store: Store,
    answer: dict[str, Any],
    decisions: list[dict[str, Any]],
    scores: list[dict[str, Any]],
    groups: Sequence[RuleGroup],
) -> None:
    """Each decision (with its score and judge exchanges) under the unit it was made on."""
    sql = _JUDGE_IO_SELECT.format(database=store.quoted_database)
    kept = {
        (row["SpanId"], row["ScorerId"]): row
        for row in await store.query(sql, {"trace_id": answer["trace_id"]})
    }
    by_pair = {(s["span_id"], s["scorer_id"]): s for s in scores}
    kind_of = {group[0].scorer_id: _kind(group) for group in groups}
    units = answer["units"]
    for decision in sorted(decisions, key=lambda d: (d["span_id"], d["scorer_id"])):
        pair = (decision["span_id"], decision["scorer_id"])
        shown: dict[str, Any] = {k: decision[k] for k in ("scorer_id", "decision", "detail", "source")}
        shown["created_at"] = decision["created_at"]
        if (score := by_pair.get(pair)) is not None:
            shown["score"] = {k: score.get(k) for k in ("score", "label", "reason", "judge_model")}
        io = kept.get(pair)
        if io is not None and iso_from_nanos(int(io["Version"])) == decision["created_at"]:
            shown["judge_io"] = json.loads(io["Exchanges"])
        same_span = [u for u in units if u["span_id"] == decision["span_id"]]
        kind = kind_of.get(decision["scorer_id"])
        home = next((u for u in same_span if u["kind"] == kind), same_span[0] if same_span else None)
        if home is None:
            answer["other_decisions"].append({"span_id": decision["span_id"], **shown})
        else:
            home["decisions"].append(shown)
