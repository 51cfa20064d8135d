"""``tracescore annotate``: pick scored units for a person to label, print each as its scorers saw it
(``tracescore runs``' rendering of ``ingest.replay.scorer_inputs``), and the command that sends a label
for it (``POST /api/annotations``).

Picks (``ingest.store.label_candidates``): ``random``, ``lowest`` (a scorer's lowest scores), or
``disagreement`` (where ``--scorer`` and ``--other`` differ most on the same units); units already
labelled under the scorer's id are left out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from datetime import UTC, datetime
from typing import Any

from tracescore.ingest.cli.runs_command import render
from tracescore.ingest.cli.store_access import (
    Failed,
    ServiceApi,
    add_store_arguments,
    on_store,
    service_api,
    store_config,
    through_front_door,
)
from tracescore.ingest.replay.scorer_inputs import scored_units
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.label_candidates import PICKS, Candidate, Pick, pick_units
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.durations import parse_time
from tracescore.schemas.score_queries import TraceStatus
from tracescore.scoring.runtime.rule_routing import build_rules

USER = "$USER"  # the default annotator: whoever runs the printed command
Shown = list[tuple[Candidate, dict[str, Any] | TraceStatus]]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "annotate",
        help="pick scored runs for a person to label and print them",
        description=(
            "Pick units a scorer scored and nobody has labelled under its id yet -- at random, its lowest "
            "scores, or where it and --other disagree most -- and print each as its scorers received it, "
            "with the command that sends a label (POST /api/annotations). While 'tracescore serve' holds "
            "the embedded store, the service is asked (at --url, with TRACESCORE_AUTH_TOKEN)."
        ),
    )
    parser.add_argument("--scorer", required=True, help="the scorer id the labels judge alongside")
    parser.add_argument("--pick", choices=PICKS, default="random", help="how to pick (default random)")
    parser.add_argument("--other", help="the scorer to compare with (--pick disagreement)")
    parser.add_argument("--limit", type=int, default=5, help="how many units (default 5)")
    parser.add_argument("--since", default="7d", help="scores written since: an ISO time or an age (7d)")
    parser.add_argument("--annotator", default=USER, help="who labels, in the printed command")
    add_store_arguments(parser, "YAML or JSON config file (its store, receiver and scoring settings)")
    parser.set_defaults(func=cmd_annotate)


def cmd_annotate(args: argparse.Namespace) -> int:
    if args.pick == "disagreement" and not args.other:
        print("tracescore: error: --pick disagreement needs --other SCORER", file=sys.stderr)
        return 2
    if not 1 <= args.limit <= 200:
        print("tracescore: error: --limit must be between 1 and 200", file=sys.stderr)
        return 2
    since = parse_time(args.since, datetime.now(UTC))
    config = store_config(args)
    pick: Pick = args.pick

    async def direct() -> Shown:
        return await _from_store(config, pick, args.scorer, args.other, args.limit, since)

    async def remote(api: ServiceApi) -> Shown:
        query = {"pick": pick, "scorer": args.scorer, "limit": str(args.limit), "since": since.isoformat()}
        found = await api.get("/api/annotate", query | ({"other": args.other} if args.other else {}))
        picked = [Candidate.model_validate(item) for item in found]
        return [(c, await api.get("/api/runs", {"trace_id": c.trace_id})) for c in picked]

    try:
        shown = asyncio.run(through_front_door(config, args, direct, remote))
    except Failed as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return exc.status
    if not shown:
        print(f"no unlabelled unit of {args.scorer} scored since {since:%Y-%m-%d %H:%M} UTC")
        return 0
    api = service_api(config, args)
    for number, (candidate, answer) in enumerate(shown, start=1):
        print("\n".join(_unit(number, len(shown), candidate, answer, args)))
        print("\n".join(_submit(api, candidate, args.scorer, args.annotator)))
        print()
    return 0


async def _from_store(
    config: ServiceConfig, pick: Pick, scorer: str, other: str | None, limit: int, since: datetime
) -> Shown:
    groups = build_rules(config.scoring.rules, judge=config.scoring.judge)
    max_items = config.assembly.max_spans_per_trace

    async def read(store: Store) -> Shown:
        picked = await pick_units(store, pick, scorer, limit, since, other)
        return [(c, await scored_units(store, groups, c.trace_id, max_items)) for c in picked]

    return await on_store(config, read)


def _unit(
    number: int,
    total: int,
    candidate: Candidate,
    answer: dict[str, Any] | TraceStatus,
    args: argparse.Namespace,
) -> list[str]:
    """The heading of a picked unit (its scores), then the unit as ``tracescore runs`` prints it."""
    scored = f"{args.scorer} {candidate.score:.3f}" + (f" ({candidate.label})" if candidate.label else "")
    if candidate.other_score is not None:
        other = f" ({candidate.other_label})" if candidate.other_label else ""
        scored += f", {args.other} {candidate.other_score:.3f}{other}"
    lines = [f"=== {number}/{total}: trace {candidate.trace_id} span {candidate.span_id}: {scored}"]
    if isinstance(answer, TraceStatus):
        return [*lines, f"  {answer.message}"]
    units = [unit for unit in answer["units"] if unit["span_id"] == candidate.span_id]
    return [*lines, *render({**answer, "units": units, "other_decisions": []})]


def _submit(api: ServiceApi, candidate: Candidate, scorer: str, annotator: str) -> list[str]:
    """The command that sends a label of the unit (a shell line): fill in the value and/or the label.
    An annotator of ``$USER`` is left to the shell to fill in."""
    label = {
        "trace_id": candidate.trace_id,
        "span_id": candidate.span_id,
        "name": scorer,
        "annotator": annotator,
        "value": 1.0,
        "label": "pass",
        "comment": "",
    }
    body = shlex.quote(json.dumps(label))
    if annotator == USER:  # the JSON string "$USER": out of the single quotes, into double ones
        body = body.replace(json.dumps(USER), '"\'"$USER"\'"')
    auth = ' -H "Authorization: Bearer $TRACESCORE_AUTH_TOKEN"' if api.token else ""
    return [
        "  label it (set value and/or label, then run):",
        f"  curl -sS -X POST {api.url}/api/annotations -H 'Content-Type: application/json'{auth} -d {body}",
    ]
