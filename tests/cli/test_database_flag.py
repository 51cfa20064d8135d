"""The database flag on every command that opens the store, and the store using the setting."""

from __future__ import annotations

import pytest

from tracescore.ingest.cli import build_parser, main
from tracescore.ingest.cli.serve_command import environment_help, service_config
from tracescore.ingest.cli.store_flags import store_overrides
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.dsn import without_database

SERVER = "http://clickhouse:8123"


def test_the_cli_names_the_flag_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--database", "my-db"]) == 2
    err = capsys.readouterr().err
    assert "flag --database: store_database: 'my-db' is not a database name tracescore accepts" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["serve"],
        ["demo"],
        ["scores"],
        ["drift"],
        ["backfill", "--since", "1h"],
        ["schema"],
    ],
)
def test_every_command_that_opens_the_store_takes_the_database_flag(command: list[str]) -> None:
    args = build_parser().parse_args([*command, "--store", f"{SERVER}/from_path", "--database", "from_flag"])
    overrides, flags = store_overrides(args)
    assert overrides == {"store": f"{SERVER}/from_path", "store_database": "from_flag"}
    assert flags["store_database"] == "--database"
    assert load_config(overrides=overrides, environ={}).database == "from_flag"


def test_serve_takes_the_flag_and_lists_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACESCORE_STORE_DATABASE", "from_env")
    assert service_config(build_parser().parse_args(["serve"])).database == "from_env"
    args = build_parser().parse_args(["serve", "--database", "from_flag"])
    assert service_config(args).database == "from_flag"
    assert "  TRACESCORE_STORE_DATABASE" in environment_help()


def test_the_store_uses_the_setting_and_connects_to_the_server_without_the_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Store.from_config(load_config(overrides={"store": f"{SERVER}/from_path"}, environ={}))
    assert (store.database, store.quoted_database) == ("from_path", "`from_path`")
    assert caplog.records == []
    config = load_config(overrides={"store": f"{SERVER}/from_path", "store_database": "other"}, environ={})
    assert Store.from_config(config).database == "other"
    assert [r.getMessage() for r in caplog.records] == [
        "store_database other wins over the database from_path that the store DSN's path names"
    ]
    assert Store(f"{SERVER}/from_path").database == "from_path"
    # clickhouse-connect would ask inside the DSN's database before the store has created it.
    assert (
        without_database("https://u@clickhouse:8443/from_path?compress=0")
        == "https://u@clickhouse:8443?compress=0"
    )
    assert without_database(SERVER) == SERVER
