"""The database setting: flag > environment > config file > the store DSN's path > ``default``; a name
that is not accepted is refused naming where it came from and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.schemas.config import ConfigError

SERVER = "http://clickhouse:8123"


def database(
    file: Path | None = None,
    env: dict[str, str] | None = None,
    flag: str | None = None,
    store: str | None = None,
) -> str:
    overrides = {"store_database": flag, "store": store}
    return load_config(file, overrides=overrides, environ=env or {}).database


def test_without_any_setting_the_database_is_default() -> None:
    assert database() == "default"
    assert database(store=SERVER) == "default"
    assert database(store=f"{SERVER}/") == "default"


def test_each_source_beats_the_next(tmp_path: Path) -> None:
    file = tmp_path / "tracescore.yaml"
    file.write_text(f"store: {SERVER}/from_path\n")
    assert database(file) == "from_path"
    file.write_text(f"store: {SERVER}/from_path\nstore_database: from_file\n")
    assert database(file) == "from_file"
    env = {"TRACESCORE_STORE_DATABASE": "from_env"}
    assert database(file, env) == "from_env"
    assert database(file, env, flag="from_flag") == "from_flag"


def test_a_dsn_path_from_any_source_names_the_database(tmp_path: Path) -> None:
    assert database(env={"TRACESCORE_STORE": f"{SERVER}/from_env_dsn"}) == "from_env_dsn"
    assert database(store="https://user@clickhouse:8443/from_flag_dsn?secure=true") == "from_flag_dsn"


def test_a_chdb_path_is_the_data_directory_never_a_database(tmp_path: Path) -> None:
    assert database(store=str(tmp_path / "analytics")) == "default"
    assert database(store=f"chdb://{tmp_path}/analytics") == "default"
    assert database(store=f"chdb://{tmp_path}/analytics", flag="analytics") == "analytics"


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        (
            {"flag": "my-db"},
            "flag --database: store_database: 'my-db' is not a database name tracescore accepts: "
            "use letters, digits and _, not starting with a digit",
        ),
        (
            {"env": {"TRACESCORE_STORE_DATABASE": "1st"}},
            "environment variable TRACESCORE_STORE_DATABASE: store_database: '1st' is not a database name",
        ),
        (
            {"file": "store_database: system\n"},
            "c.yaml:1: store_database: 'system' is ClickHouse's own database",
        ),
        ({"file": "store_database: ''\n"}, "c.yaml:1: store_database: '' is not a database name"),
        (
            {"env": {"TRACESCORE_STORE": f"{SERVER}/team/scores"}},
            "environment variable TRACESCORE_STORE: store: the path of a ClickHouse DSN names one database "
            "(http://host:8123/analytics), not 'team/scores'",
        ),
        (
            {"flag_store": f"{SERVER}/my%20db"},
            "flag --store: store: the DSN's path: 'my%20db' is not a database name tracescore accepts",
        ),
    ],
)
def test_a_name_that_is_not_accepted_is_refused_naming_its_source(
    tmp_path: Path, sources: dict[str, object], message: str
) -> None:
    file = None
    if "file" in sources:
        file = tmp_path / "c.yaml"
        file.write_text(str(sources["file"]))
    overrides = {"store_database": sources.get("flag"), "store": sources.get("flag_store")}
    env = sources.get("env")
    assert env is None or isinstance(env, dict)
    with pytest.raises(ConfigError) as caught:
        load_config(
            file,
            overrides=overrides,
            environ=env or {},
            flags={"store_database": "--database", "store": "--store"},
        )
    assert message in str(caught.value)
