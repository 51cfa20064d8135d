"""The store keys of the service config (``store``, ``store_database``, ``store_*``): where the tables
are, how to reach a ClickHouse server, and the store disk's free-space floor.

They sit at the top level of the config file, beside the sections; ``schemas.config.ServiceConfig``
takes them from ``StoreConfig``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from pydantic import BaseModel, ByteSize, ConfigDict, Field, SecretStr, field_validator, model_validator

from tracescore.schemas.store_database import check_database, dsn_database, resolve_database

# The embedded stores, under the user's data directory ($XDG_DATA_HOME, else ~/.local/share), so that
# every command finds the same one whatever directory it runs in (cron, systemd, a shell anywhere):
# ``serve`` and the commands that read it use "store"; ``demo`` keeps its runs apart in "demo".
DATA_DIR_NAME = "tracescore"
DEFAULT_STORE_NAME = "store"
DEFAULT_DEMO_STORE_NAME = "demo"
LEGACY_STORE = "./tracescore-data"  # the default before: relative to the working directory
# The store disk's free-space floor: below it nothing is written (ingest.store.free_space). It must
# hold the largest write in flight (a group commit, a merge's reservation) with room to spare.
DEFAULT_STORE_MIN_FREE_BYTES = 256 * 1024**2

# The keys that mean something to a ClickHouse server store only.
_STORE_SERVER_KEYS = (
    "store_user",
    "store_password",
    "store_password_file",
    "store_tls_ca",
    "store_tls_cert",
    "store_tls_key",
    "store_verify",
)


def default_store(name: str = DEFAULT_STORE_NAME, environ: Mapping[str, str] | None = None) -> str:
    """The absolute path of a default embedded store: ``$XDG_DATA_HOME/tracescore/<name>``, or
    ``~/.local/share/tracescore/<name>`` (a relative XDG_DATA_HOME is ignored, as the XDG base
    directory specification asks)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, DATA_DIR_NAME, name)


class StoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    store: str = Field(default_factory=default_store)
    # The ClickHouse database of every tracescore table, in either store; unset: the server DSN's path
    # (http://host:8123/analytics), else "default". See schemas.store_database and docs/store.md.
    store_database: str | None = None
    # A ClickHouse server store (http(s)://host:port) without secrets in the DSN: the user, the
    # password (TRACESCORE_STORE_PASSWORD, or a file holding it), the CA that signed the server's
    # certificate, a client certificate and key (mutual TLS), and whether to check the server's
    # certificate at all. Applied by ingest.store.clickhouse; none of them means anything to chDB.
    store_user: str | None = None
    store_password: SecretStr | None = None
    store_password_file: str | None = None
    store_tls_ca: str | None = None
    store_tls_cert: str | None = None
    store_tls_key: str | None = None
    store_verify: bool = True
    # The store disk's free-space floor: the larger of the two. Below it tracescore writes nothing
    # (OTLP 503 with Retry-After, Kafka paused, merges stopped) until space is back; 0 and 0: no floor.
    store_min_free_bytes: ByteSize = Field(default=ByteSize(DEFAULT_STORE_MIN_FREE_BYTES), ge=0)
    store_min_free_ratio: float = Field(default=0.0, ge=0.0, lt=1.0)

    @field_validator("store")
    @classmethod
    def _store_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("store must be a path or a DSN")
        dsn_database(value)  # a path that names no valid database is refused here, naming its source
        return value

    @field_validator("store_database")
    @classmethod
    def _a_database_name(cls, value: str | None) -> str | None:
        return None if value is None else check_database(value)

    @property
    def database(self) -> str:
        """The database in use: store_database (flag, environment, file), else the store DSN's path,
        else "default"."""
        return resolve_database(self.store_database, self.store)

    @model_validator(mode="after")
    def _server_store_options(self) -> StoreConfig:
        server_keys = [key for key in _STORE_SERVER_KEYS if key in self.model_fields_set]
        scheme = urlsplit(self.store.strip()).scheme.lower()
        if server_keys and scheme not in ("http", "https"):
            raise ValueError(
                f"{', '.join(server_keys)} apply to a ClickHouse server store (store: https://host:8443), "
                "not to the embedded store"
            )
        tls_keys = [key for key in server_keys if key.startswith(("store_tls_", "store_verify"))]
        if tls_keys and scheme != "https":
            raise ValueError(f"{', '.join(tls_keys)} need an https:// store")
        if self.store_password is not None and self.store_password_file:
            raise ValueError("give store_password or store_password_file, not both")
        if (self.store_password is not None or self.store_password_file) and urlsplit(self.store).password:
            raise ValueError("the store DSN holds a password already: give it there or in store_password")
        if self.store_tls_key and not self.store_tls_cert:
            raise ValueError("store_tls_key needs store_tls_cert (the client certificate)")
        return self
