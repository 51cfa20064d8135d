"""``tracescore schema``: print the DDL, for one node or for a ClickHouse cluster."""

from __future__ import annotations

import argparse

from clickhouse_connect.driver.binding import quote_identifier

from tracescore.ingest.cli.store_flags import add_database_argument, store_overrides
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.store.schema import SchemaOptions, schema_ddl


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "schema",
        help="print the ClickHouse DDL (one node, or a cluster with --cluster)",
        description=(
            "Print the DDL of every tracescore table, in the database the service uses (the same "
            "--database, TRACESCORE_STORE_DATABASE, store_database or DSN path; default 'default'). The "
            "service applies the single-node DDL itself on start; with --cluster, apply the printed DDL "
            "once (e.g. clickhouse-client --multiquery) before starting the replicas: "
            "Replicated*MergeTree tables <name>_local on every node and Distributed tables <name> over them."
        ),
    )
    parser.add_argument("--cluster", help="the cluster name of the server's remote_servers config")
    parser.add_argument("--config", help="YAML or JSON config file (its store and store_database)")
    parser.add_argument("--store", help="the store DSN, whose path may name the database")
    add_database_argument(parser)
    parser.add_argument(
        "--ttl-days", type=int, help="expire spans, ledger, scores and decisions after this many days"
    )
    parser.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    if args.ttl_days is not None and args.ttl_days <= 0:
        raise ValueError("--ttl-days must be a positive number of days")
    if args.cluster is not None and not args.cluster.strip():
        raise ValueError("--cluster needs a cluster name")
    overrides, flags = store_overrides(args)
    database = load_config(args.config, overrides=overrides, flags=flags).database
    options = SchemaOptions(database=database, cluster=args.cluster, ttl_days=args.ttl_days)
    print(f"CREATE DATABASE IF NOT EXISTS {_database(options)};\n")
    for statement in schema_ddl(options):
        print(f"{statement};\n")
    return 0


def _database(options: SchemaOptions) -> str:
    quoted = quote_identifier(options.database)
    if options.cluster is None:
        return quoted
    return f"{quoted} ON CLUSTER {quote_identifier(options.cluster)}"
