"""What the scorer saw of each of the report's lowest scores: the unit's input and output, rebuilt from
the stored spans by the same transform that built it for the scorers (``ingest.replay.scorer_inputs``,
what ``GET /api/runs`` and ``tracescore runs`` show)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tracescore.ingest.replay.scorer_inputs import scored_units
from tracescore.ingest.reporting.report_reads import LowScore, ReportData
from tracescore.ingest.store.clickhouse import Store
from tracescore.scoring.runtime.rule_routing import RuleGroup

MAX_TEXT_CHARS = 2_000  # of each input and output on the page; the whole unit is a link away

SeenKey = tuple[str, str, str]  # trace id, span id, scorer id


async def with_seen(
    store: Store, data: ReportData, groups: Sequence[RuleGroup], max_items: int
) -> ReportData:
    """``data`` with ``seen`` holding, per lowest score, the unit its scorer was given."""
    seen: dict[SeenKey, dict[str, Any]] = {}
    for trace_id in dict.fromkeys(low.trace_id for low in data.lowest):
        answer = await scored_units(store, groups, trace_id, max_items)
        if not isinstance(answer, dict):
            continue  # the spans are gone (TTL): the score stays, without its text
        for low in data.lowest:
            if low.trace_id == trace_id and (unit := _unit_of(answer["units"], low)) is not None:
                seen[(low.trace_id, low.span_id, low.scorer_id)] = _shown(unit)
    return dataclasses.replace(data, seen=seen)


def _unit_of(units: list[dict[str, Any]], low: LowScore) -> dict[str, Any] | None:
    """The unit that holds the score's decision; else the first unit of its span."""
    same_span = [unit for unit in units if unit["span_id"] == low.span_id]
    for unit in same_span:
        if any(d["scorer_id"] == low.scorer_id for d in unit["decisions"]):
            return unit
    return same_span[0] if same_span else None


def _shown(unit: dict[str, Any]) -> dict[str, Any]:
    """A unit as the page shows it: its kind, the new input, the output, the tools called."""
    run = unit["unit"]
    output = run.get("output", [])
    tools = [call["tool_name"] for message in output for call in message.get("tool_invocations", [])]
    return {
        "kind": unit["kind"],
        "input": _clip(_text(run.get("input", {}).get("input_messages", []))),
        "output": _clip(_text(output)),
        "tools": tools,
        "content_capture": unit["content_capture"],
    }


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(message.get("content") or "") for message in messages).strip()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + " …"
