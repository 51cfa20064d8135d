"""``tracescore runs --trace-id ID``: what the scorers saw of a stored trace
(``ingest.replay.scorer_inputs``).

Each unit (agent run, model call, chosen span) as the AgentRun JSON its scorers received, each rule's
decision on it with its score, and, when ``scoring.record_judge_io`` kept them, the judge's prompts
and raw answers. A unit without message content names the switch that turns capture on; a trace
without units says why. From the store, or from the service that holds it (``store_access``); both
give the same output. ``--json`` prints the answer of ``GET /api/runs`` as it is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from tracescore.ingest.cli.store_access import (
    Failed,
    ServiceApi,
    add_store_arguments,
    on_store,
    print_trace_status,
    store_config,
    through_front_door,
)
from tracescore.ingest.replay.scorer_inputs import scored_units
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.score_queries import QueryError, TraceStatus, parse_query
from tracescore.scoring.runtime.rule_routing import build_rules

EXIT_NOT_FOUND = 1
KIND_NAMES = {"run": "agent runs", "llm_call": "model calls", "span": "this span"}
INDENT = "    "

Answer = dict[str, Any] | TraceStatus


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "runs",
        help="show the units the scorers saw of a stored trace, with each rule's decision",
        description=(
            "Rebuild the units of a stored trace (agent runs, model calls, spans a rule chooses) from the "
            "spans tracescore received, and print each as the AgentRun JSON its scorers received, with "
            "each rule's decision and score, and the judge's prompts and raw answers when "
            "scoring.record_judge_io kept them. A unit without message content names the switch that "
            "turns content capture on; a trace without units says why. While 'tracescore serve' holds "
            "the embedded store, the service is asked (GET /api/runs at --url, with "
            "TRACESCORE_AUTH_TOKEN). A trace tracescore never received exits with status 1."
        ),
    )
    parser.add_argument("--trace-id", required=True, help="the trace (32 hex characters)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_store_arguments(parser, "YAML or JSON config file (its store, receiver and scoring settings)")
    parser.set_defaults(func=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    try:
        query = parse_query({"trace_id": args.trace_id}, decisions=False)
    except QueryError as exc:
        print(f"tracescore: error: --trace-id: {exc.reason}", file=sys.stderr)
        return 2
    trace_id = query.trace_id or ""
    config = store_config(args)

    async def direct() -> Answer:
        return await _from_store(config, trace_id)

    async def remote(api: ServiceApi) -> Answer:
        found = await api.get("/api/runs", {"trace_id": trace_id})
        if not isinstance(found, dict | TraceStatus):
            raise Failed(f"{api.url} did not answer as tracescore does (not the units of a trace)")
        return found

    try:
        answer = asyncio.run(through_front_door(config, args, direct, remote))
    except Failed as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return exc.status
    if isinstance(answer, TraceStatus):
        print_trace_status(answer, args.json)
        return EXIT_NOT_FOUND
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print("\n".join(render(answer)))
    return 0


async def _from_store(config: ServiceConfig, trace_id: str) -> Answer:
    groups = build_rules(config.scoring.rules, judge=config.scoring.judge)

    async def read(store: Store) -> Answer:
        return await scored_units(store, groups, trace_id, config.assembly.max_spans_per_trace)

    return await on_store(config, read)


def render(answer: dict[str, Any]) -> list[str]:
    """The answer as text: a heading per unit, its decisions (and judge exchanges), its AgentRun JSON."""
    units = answer["units"]
    lines = [
        f"trace {answer['trace_id']}: {answer['spans']} span(s), {answer['log_records']} log record(s) "
        f"received; {len(units)} unit(s)"
    ]
    if "status" in answer:
        lines.append(f"  {answer['status']['message']}")
    if "no_units" in answer:
        lines.append(f"  no unit: {answer['no_units']}")
    for unit in units:
        lines += ["", _heading(unit)]
        if unit["content_capture"]:
            lines.append(f"  no message content: content capture off? {unit['content_capture']}")
        if unit["rules"]:
            lines.append(f"  rules targeting it: {', '.join(unit['rules'])}")
        else:
            lines.append(f"  no rule targets {KIND_NAMES.get(unit['kind'], unit['kind'])}")
        if unit["decisions"]:
            lines.append("  decisions:")
        elif unit["rules"]:
            lines.append("  decisions: none yet")
        for decision in unit["decisions"]:
            lines += _decision(decision)
        lines.append("  as its scorers received it (AgentRun JSON):")
        text = json.dumps(unit["unit"], indent=2, ensure_ascii=False)
        lines += [INDENT + line for line in text.splitlines()]
    if answer["other_decisions"]:
        lines += ["", "decisions on spans that are no unit now:"]
        for decision in answer["other_decisions"]:
            lines += [f"  span {decision['span_id']}", *_decision(decision)]
    return lines


def _heading(unit: dict[str, Any]) -> str:
    run = unit["unit"]
    parts = [f"{unit['kind'].replace('_', ' ')} {unit['span_id']}"]
    for label, key in (("agent", "agent_name"), ("model", "model"), ("service", "service_name")):
        if run.get(key):
            parts.append(f"{label} {run[key]}")
    parts.append(f"status {run['status']}")
    return " · ".join(parts)


def _decision(decision: dict[str, Any]) -> list[str]:
    line = f"    {decision['scorer_id']}: {decision['decision']}"
    if (score := decision.get("score")) is not None:
        value = score.get("score")
        line += f" {value:.3f}" if isinstance(value, int | float) else ""
        if score.get("label"):
            line += f" ({score['label']})"
        if score.get("reason"):
            line += f" — {score['reason']}"
    elif decision.get("detail"):
        line += f" — {decision['detail']}"
    lines = [line]
    for number, exchange in enumerate(decision.get("judge_io", []), start=1):
        lines.append(
            f"      judge request {number}: {exchange.get('model', '')} ({exchange.get('operation')})"
        )
        for message in exchange.get("messages", []):
            lines += _block(f"{message['role']}:", message["content"])
        if exchange.get("answer") is not None:
            lines += _block("answer:", exchange["answer"])
        if exchange.get("error"):
            lines += _block("error:", exchange["error"])
    return lines


def _block(label: str, text: str) -> list[str]:
    body = text.splitlines() or [""]
    return [f"        {label} {body[0]}", *(f"        {' ' * len(label)} {line}" for line in body[1:])]
