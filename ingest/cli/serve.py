"""``tracescore serve``: the service, configured from flags, ``TRACESCORE_*`` variables and a config file."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import signal

from ingest.cli.judge_flags import add_judge_arguments, judge_overrides
from schemas.config import ServiceConfig, load_config


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("serve", help="run the service (OTLP gRPC/HTTP, optional Kafka)")
    parser.add_argument("--config", help="YAML or JSON config file")
    parser.add_argument(
        "--store", help="chDB data directory (default ./tracescore-data) or http(s)://clickhouse DSN"
    )
    parser.add_argument("--host", help="address the receivers listen on (default 127.0.0.1)")
    parser.add_argument("--grpc-port", type=int, help="OTLP/gRPC port (default 4317)")
    parser.add_argument("--http-port", type=int, help="OTLP/HTTP and API port (default 4318)")
    parser.add_argument("--tls-cert", help="PEM certificate: both receivers speak TLS (with --tls-key)")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
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
    parser.add_argument(
        "--replica-id",
        help="this replica's stable name among those sharing the store (default: the host name)",
    )
    parser.add_argument(
        "--memory-limit",
        help="resident memory bound, e.g. 2GiB (default); over 85%% of it, intake is refused for a while",
    )
    add_judge_arguments(parser)
    parser.set_defaults(func=cmd_serve)


def service_config(args: argparse.Namespace) -> ServiceConfig:
    """The service config of ``serve``'s flags over the environment and the config file."""
    overrides = {
        "store": args.store,
        "receiver.host": args.host,
        "receiver.grpc_port": args.grpc_port,
        "receiver.http_port": args.http_port,
        "receiver.tls_cert": args.tls_cert,
        "receiver.tls_key": args.tls_key,
        "kafka.bootstrap": args.kafka_bootstrap,
        "kafka.topic": args.kafka_topic,
        "kafka.logs_topic": args.kafka_logs_topic,
        "kafka.group": args.kafka_group,
        "assembly.idle_seconds": args.idle,
        "assembly.max_wait_seconds": args.max_wait,
        "replica.id": args.replica_id,
        "memory_limit": args.memory_limit,
        **judge_overrides(args),
    }
    return load_config(args.config, overrides=overrides)


async def serve(config: ServiceConfig) -> None:
    """Run the service until SIGINT or SIGTERM, then shut it down (flushing what it holds)."""
    from ingest.service import Service

    service = Service(config)
    await service.start()
    tune_garbage_collector()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    tls = " (TLS)" if config.receiver.tls else ""
    print(
        f"tracescore: OTLP/gRPC {config.receiver.host}:{service.grpc.port}{tls}, "
        f"OTLP/HTTP {config.receiver.host}:{service.http.port}{tls}, store {service.store.description}, "
        f"replica {service.membership.replica_id}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await service.shutdown()


# Spans in flight are many small objects: with the default thresholds the cycle collector's full passes
# stopped the event loop for 0.2 s while a 90,000-span request was stored (measured); with these,
# 0.02 s, and storing it took half as long.
GC_THRESHOLDS = (100_000, 50, 100)


def tune_garbage_collector() -> None:
    """Keep startup objects out of every collection, and collect young objects less often."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def cmd_serve(args: argparse.Namespace) -> int:
    asyncio.run(serve(service_config(args)))
    return 0
