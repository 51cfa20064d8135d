"""The store flags of the commands that open the store or print its DDL (serve, demo, scores, backfill,
drift, schema): ``--store`` and ``--database``, over ``TRACESCORE_STORE``/``TRACESCORE_STORE_DATABASE``
and the config file's ``store``/``store_database`` (``ingest.configuration.config_loader``)."""

from __future__ import annotations

import argparse
from typing import Any

from tracescore.schemas.config import DEFAULT_DATABASE

# Each store flag and the config key it sets.
STORE_FLAG_KEYS = {"--store": "store", "--database": "store_database"}

DATABASE_HELP = (
    "the ClickHouse database of tracescore's tables (default $TRACESCORE_STORE_DATABASE, the config's "
    f"store_database, else a server DSN's path, else {DEFAULT_DATABASE})"
)


def add_database_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database", metavar="NAME", help=DATABASE_HELP)


def store_overrides(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """The store flags' config overrides, and the flag of each key (named by ``load_config``'s errors)."""
    overrides = {key: getattr(args, flag[2:]) for flag, key in STORE_FLAG_KEYS.items()}
    return overrides, {key: flag for flag, key in STORE_FLAG_KEYS.items()}
