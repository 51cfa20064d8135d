"""``tracescore serve``: the service, configured from flags, ``TRACESCORE_*`` variables and a config file."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import signal
from typing import Any

from tracescore.ingest.cli.judge_flags import JUDGE_FLAG_KEYS, add_judge_arguments
from tracescore.ingest.cli.store_access import is_store
from tracescore.ingest.cli.store_flags import STORE_FLAG_KEYS, add_database_argument
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.store.dsn import resolve_dsn
from tracescore.schemas.config import ENV_KEYS, ServiceConfig
from tracescore.schemas.store_config import LEGACY_STORE, default_store
from tracescore.scoring.runtime.rule_check import rule_errors

log = logging.getLogger("tracescore")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "serve",
        help="run the service (OTLP gRPC/HTTP, optional Kafka)",
        description="Run the service: receive spans, score agent runs, write scores to the store.",
        epilog=environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", help="YAML or JSON config file")
    parser.add_argument(
        "--store",
        help=f"chDB data directory (default {default_store()}, created when missing) or "
        "http(s)://clickhouse DSN",
    )
    add_database_argument(parser)
    parser.add_argument("--host", help="address the receivers listen on (default 127.0.0.1)")
    parser.add_argument("--grpc-port", type=int, help="OTLP/gRPC port (default 4317)")
    parser.add_argument("--http-port", type=int, help="OTLP/HTTP and API port (default 4318)")
    parser.add_argument(
        "--health-port",
        type=int,
        help="a port of its own for /healthz and /readyz, which crowds on the OTLP/HTTP port cannot reach",
    )
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
    parser.add_argument(
        "--no-kafka",
        action="store_true",
        help="turn the Kafka section off, whatever the config file and TRACESCORE_KAFKA_* say",
    )
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
        help="bound on the memory tracescore allocates, e.g. 2GiB (default); a request is admitted when "
        "what it will cost fits (docs/operations/memory.md)",
    )
    add_judge_arguments(parser)
    parser.set_defaults(func=cmd_serve)


# Each flag of ``serve`` and the dotted config key it sets (over the environment and the file).
FLAG_KEYS = {
    **STORE_FLAG_KEYS,
    "--host": "receiver.host",
    "--grpc-port": "receiver.grpc_port",
    "--http-port": "receiver.http_port",
    "--health-port": "receiver.health_port",
    "--tls-cert": "receiver.tls_cert",
    "--tls-key": "receiver.tls_key",
    "--kafka-bootstrap": "kafka.bootstrap",
    "--kafka-topic": "kafka.topic",
    "--kafka-logs-topic": "kafka.logs_topic",
    "--kafka-group": "kafka.group",
    "--idle": "assembly.idle_seconds",
    "--max-wait": "assembly.max_wait_seconds",
    "--replica-id": "replica.id",
    "--memory-limit": "memory_limit",
    **JUDGE_FLAG_KEYS,
}


def service_config(args: argparse.Namespace) -> ServiceConfig:
    """The service config of ``serve``'s flags over the environment and the config file."""
    overrides: dict[str, Any] = {
        key: getattr(args, flag[2:].replace("-", "_")) for flag, key in FLAG_KEYS.items()
    }
    flags = {key: flag for flag, key in FLAG_KEYS.items()}
    if args.no_kafka:
        given = [
            flag for flag, key in FLAG_KEYS.items() if key.startswith("kafka.") and overrides[key] is not None
        ]
        if given:
            raise ValueError(f"--no-kafka turns Kafka off; drop the Kafka flags ({', '.join(given)})")
        overrides["kafka"] = {}  # after the file and the environment: the whole section, reset
        flags["kafka"] = "--no-kafka"
    return load_config(args.config, overrides=overrides, flags=flags, checks=rule_errors)


def environment_help() -> str:
    """``serve --help``'s epilog: where settings come from, and every environment variable's config key."""
    width = max(len(var) for var in ENV_KEYS)
    lines = [
        "Settings come from, highest first: flags, TRACESCORE_* environment variables, the config file",
        "(--config or TRACESCORE_CONFIG; YAML or JSON, keys as in deploy/tracescore.example.yaml and",
        "docs/configuration.md), then the defaults.",
        "",
        "environment variables (config key):",
        *(f"  {var:<{width}}  {key}" for var, key in ENV_KEYS.items()),
    ]
    return "\n".join(lines)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def serve(config: ServiceConfig) -> None:
    """Run the service until SIGINT or SIGTERM, then shut it down (flushing what it holds), saying so
    in one line. A second signal stops the process at once."""
    from tracescore.ingest.service import Service

    service = Service(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping(sig: signal.Signals) -> None:
        if stop.is_set():
            log.warning("%s again: stopping at once; the next start recovers what was not scored", sig.name)
            os._exit(128 + sig.value)
        log.info("%s: shutting down, finishing the work in hand (%s again stops at once)", sig.name, sig.name)
        stop.set()

    # Before the start: /healthz answers while it is still under way, and a probe's answer may be
    # followed by a SIGTERM at once (a rollout, a test); that stops the service as any other.
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopping, sig)
    await service.start()
    tune_garbage_collector()
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


def announce_new_store(config: ServiceConfig) -> None:
    """Say so when the service is about to create its embedded store: a mistyped --store, or a store
    of the working directory's ./tracescore-data of earlier versions left behind, shows at once."""
    dsn = resolve_dsn(config.store)
    path = dsn.removeprefix("chdb://")
    if path == dsn or is_store(path):
        return
    log.info("no store at %s yet: creating a new, empty one", path)
    legacy = os.path.abspath(LEGACY_STORE)
    if "store" not in config.model_fields_set and is_store(legacy):
        log.warning(
            "%s holds the store of an earlier tracescore (whose default was ./tracescore-data); the default "
            "is now %s: to keep using it, give --store %s (or TRACESCORE_STORE), or stop and move it there",
            legacy,
            path,
            legacy,
        )


def cmd_serve(args: argparse.Namespace) -> int:
    config = service_config(args)
    announce_new_store(config)
    asyncio.run(serve(config))
    return 0
