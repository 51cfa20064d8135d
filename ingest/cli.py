"""The ``tracescore`` command: serve, demo, inspect, score, eval."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.config import ServiceConfig, load_config

log = logging.getLogger("tracescore")


def _add_service_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML or JSON config file")
    parser.add_argument(
        "--store", help="chDB data directory (default ./tracescore-data) or http(s)://clickhouse DSN"
    )
    parser.add_argument("--host", help="address the receivers listen on (default 127.0.0.1)")
    parser.add_argument("--grpc-port", type=int, help="OTLP/gRPC port (default 4317)")
    parser.add_argument("--http-port", type=int, help="OTLP/HTTP and API port (default 4318)")
    parser.add_argument("--kafka-bootstrap", help="Kafka bootstrap servers HOST:PORT[,HOST:PORT]")
    parser.add_argument(
        "--kafka-topic", help="topic of OTLP export requests (the collector writes otlp_spans)"
    )
    parser.add_argument(
        "--kafka-logs-topic", help="topic of OTLP logs export requests (the collector writes otlp_logs)"
    )
    parser.add_argument("--kafka-group", help="consumer group (default tracescore)")
    parser.add_argument("--idle", type=float, help="seconds a trace must be quiet before scoring (default 2)")
    parser.add_argument(
        "--max-wait", type=float, help="seconds after which a trace is scored anyway (default 300)"
    )


def _service_config(args: argparse.Namespace) -> ServiceConfig:
    overrides = {
        "store": args.store,
        "receiver.host": args.host,
        "receiver.grpc_port": args.grpc_port,
        "receiver.http_port": args.http_port,
        "kafka.bootstrap": args.kafka_bootstrap,
        "kafka.topic": args.kafka_topic,
        "kafka.logs_topic": args.kafka_logs_topic,
        "kafka.group": args.kafka_group,
        "assembly.idle_seconds": args.idle,
        "assembly.max_wait_seconds": args.max_wait,
    }
    return load_config(args.config, overrides=overrides)


async def _serve(config: ServiceConfig) -> None:
    from ingest.service import Service

    service = Service(config)
    await service.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    print(
        f"tracescore: OTLP/gRPC {config.receiver.host}:{service.grpc.port}, "
        f"OTLP/HTTP {config.receiver.host}:{service.http.port}, store {service.store.description}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await service.shutdown()


def cmd_serve(args: argparse.Namespace) -> int:
    asyncio.run(_serve(_service_config(args)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ingest.demo import run_demo

    if not args.verbose:
        logging.getLogger().setLevel(logging.WARNING)  # the table is the output
    model = args.judge or os.environ.get("TRACESCORE_JUDGE_MODEL")
    api_base = args.judge_api_base or os.environ.get("TRACESCORE_JUDGE_API_BASE")
    judge = {"model": model, "api_base": api_base} if model else None
    return asyncio.run(run_demo(args.store, limit_s=args.timeout, judge=judge))


def cmd_inspect(args: argparse.Namespace) -> int:
    from ingest.decode import decode_logs, decode_traces
    from ingest.transform import build_runs

    batch = decode_traces("otlp_json", Path(args.otlp_json).read_bytes())
    logs = decode_logs("otlp_json", Path(args.logs).read_bytes()) if args.logs else None
    for error in [*batch.errors, *(logs.errors if logs else [])]:
        print(f"warning: {error}", file=sys.stderr)
    by_trace: dict[str, list[Any]] = {}
    for span in batch.spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    # Each trace gets the log records of the same trace, as the assembler hands them to the transform.
    logs_by_trace: dict[str, list[Any]] = {}
    for record in logs.logs if logs else []:
        logs_by_trace.setdefault(record.trace_id, []).append(record)
    runs = [
        run.to_json_dict()
        for trace_id, spans in by_trace.items()
        for run in build_runs(spans, logs_by_trace.get(trace_id, []))
    ]
    json.dump(runs, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


async def _score_once(scorer: Any, run: Any) -> Any:
    from scoring.judge import close_clients

    try:
        return await scorer.run(run)
    finally:
        await close_clients()


def cmd_score(args: argparse.Namespace) -> int:
    from schemas.agent_run import AgentRun
    from scoring.registry import build_scorer

    options = json.loads(args.options) if args.options else {}
    if not isinstance(options, dict):
        raise ValueError("--options must be a JSON object")
    scorer = build_scorer(args.scorer_id, options)
    run = AgentRun.model_validate_json(Path(args.run).read_bytes())
    result = asyncio.run(_score_once(scorer, run))
    json.dump(result.model_dump(mode="json"), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracescore", description="Score live LLM-agent traces.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the service (OTLP gRPC/HTTP, optional Kafka)")
    _add_service_flags(serve)
    serve.set_defaults(func=cmd_serve)

    demo = sub.add_parser("demo", help="send demo agent traces through the service and print their scores")
    demo.add_argument("--store", default=None, help="chDB data directory (default ./tracescore-data)")
    demo.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the scores")
    demo.add_argument(
        "--judge",
        help="a litellm model (e.g. openai/gpt-4o-mini) to add LLM-judge scorers; "
        "default $TRACESCORE_JUDGE_MODEL, none: heuristic scorers only",
    )
    demo.add_argument(
        "--judge-api-base", help="the judge's OpenAI-compatible endpoint (default $TRACESCORE_JUDGE_API_BASE)"
    )
    demo.set_defaults(func=cmd_demo)

    inspect = sub.add_parser("inspect", help="print the AgentRuns an OTLP/JSON export request produces")
    inspect.add_argument("otlp_json", help="file holding an OTLP/JSON ExportTraceServiceRequest")
    inspect.add_argument(
        "--logs",
        metavar="OTLP_LOGS_JSON",
        help="file holding an OTLP/JSON ExportLogsServiceRequest whose records belong to those spans",
    )
    inspect.set_defaults(func=cmd_inspect)

    score = sub.add_parser("score", help="score one AgentRun JSON file with one scorer")
    score.add_argument("scorer_id", help="scorer name or id, e.g. textual-difference")
    score.add_argument("--run", required=True, help="AgentRun JSON file")
    score.add_argument("--options", help="scorer options as a JSON object")
    score.set_defaults(func=cmd_score)

    from ingest.eval_cli import add_eval_parser

    add_eval_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from ingest.store import StoreError

    try:
        return int(args.func(args) or 0)
    except (ValidationError, ValueError, OSError, StoreError) as exc:
        print(f"tracescore: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
