"""Choosing the store, and refusing a wrong one with a clear message (issue 19).

Precedence (``--store`` > ``INFOMARK_STORE`` > configuration > ``<home>/store`` > SQLite),
a bad value, schema versions (none, older, newer), a host with the wrong key, and a
password that never reaches a message. The attacks an agent would try on the store's
selection (rewrite ``<home>/store``, override ``INFOMARK_STORE`` for infomark) are denied.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from store_backends import Backend

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import ConfigError, StoreError
from infomark.ledger.calls import ToolCall
from infomark.ledger.engine import Ledger
from infomark.ledger.init import init_home
from infomark.ledger.keys import Key
from infomark.ledger.store import pg_schema
from infomark.ledger.store.select import STORE_ENV, pick_store, remember_store, resolve_store

EXE = str(Path(sys.executable).with_name("infomark"))


def test_precedence_explicit_env_config_home_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    assert resolve_store(home) is None  # nothing chosen: the home's SQLite file
    remember_store(home, "postgresql://u@db/file")
    assert resolve_store(home) == "postgresql://u@db/file"
    assert resolve_store(home, pick_store(None, "postgresql://u@db/config")) == (
        "postgresql://u@db/config"
    )
    assert resolve_store(home, pick_store(None, "sqlite")) == "postgresql://u@db/file"
    monkeypatch.setenv(STORE_ENV, "postgresql://u@db/env")
    assert resolve_store(home, pick_store(None, "postgresql://u@db/config")) == (
        "postgresql://u@db/env"
    )
    assert resolve_store(home, pick_store("sqlite", "postgresql://u@db/config")) is None
    assert (home / "store").stat().st_mode & 0o077 == 0  # it may hold a password


@pytest.mark.parametrize("value", ["mysql://x/y", "ledger.db", "postgresql:/x"])
def test_a_bad_store_is_a_clear_error_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(STORE_ENV, value)
    with pytest.raises(ConfigError, match='store must be "sqlite" or a postgresql:// URL'):
        Ledger(tmp_path / "h", "s")
    monkeypatch.delenv(STORE_ENV)
    proc = subprocess.run(
        [EXE, "events", "--home", str(tmp_path / "h"), "--store", value],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert "store must be" in proc.stderr and "Traceback" not in proc.stderr


def test_a_password_never_reaches_a_message(tmp_path: Path) -> None:
    url = "postgresql://postgres:s3cret-pw@127.0.0.1:9/test?connect_timeout=2"
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError) as info:
        Ledger(tmp_path / "h", "s", store=url)
    assert "s3cret-pw" not in str(info.value)
    assert "postgresql://postgres@127.0.0.1:9/test" in str(info.value)


@pytest.mark.postgres_only
@pytest.mark.usefixtures("backend")
def test_schema_versions_none_older_newer(tmp_path: Path, backend: Backend) -> None:
    from infomark.ledger.store.pg import init_store

    assert backend.url is not None
    key = Key.from_bytes(secrets.token_bytes(32))
    Ledger(tmp_path / "h", "s", key=key).close()  # version 1: opens
    backend.sql(tmp_path, ("INSERT INTO infomark_schema VALUES (99, 'x', 'x', 'x')", ()))
    with pytest.raises(StoreError, match=r"schema version 99, newer than this infomark's \(1\)"):
        Ledger(tmp_path / "h", "s", key=key)
    with pytest.raises(StoreError, match="upgrade infomark"):
        init_store(backend.url)
    backend.sql(tmp_path, ("DELETE FROM infomark_schema WHERE version = 99", ()))


@pytest.mark.postgres_only
@pytest.mark.usefixtures("backend")
def test_an_older_schema_is_migrated_only_by_init(
    tmp_path: Path, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infomark.ledger.store.pg import init_store

    assert backend.url is not None
    v2 = (2, "a test migration", "CREATE TABLE extra_v2 (x INTEGER)")
    monkeypatch.setattr(pg_schema, "MIGRATIONS", (*pg_schema.MIGRATIONS, v2))
    monkeypatch.setattr(pg_schema, "SCHEMA_VERSION", 2)
    with pytest.raises(StoreError, match=r"schema version 1, older than this infomark's \(2\)"):
        Ledger(tmp_path / "h", "s")  # a plain open never upgrades a shared store
    assert init_store(backend.url)["applied"] == [2]
    Ledger(tmp_path / "h", "s").close()
    assert backend.rows(tmp_path, "SELECT max(version) FROM infomark_schema") == [(2,)]
    assert init_store(backend.url)["applied"] == []  # idempotent


@pytest.mark.postgres_only
@pytest.mark.usefixtures("backend")
def test_a_host_with_another_key_cannot_join(
    tmp_path: Path, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV)
    init_home(tmp_path / "a", store=backend.url)
    with Ledger(tmp_path / "a", "s", store=backend.url) as led, led.transaction():
        led.emit("decision", {"decision": "deny"})
    with pytest.raises(StoreError, match="was not signed by this home's key"):
        init_home(tmp_path / "b", store=backend.url)  # its own new key
    assert not list((tmp_path / "b").glob("store-*.created"))


def test_an_agent_cannot_repoint_the_store(tmp_path: Path) -> None:
    with Gatekeeper.open(tmp_path / ".infomark", "s", root=tmp_path) as gk:
        for call in (
            ToolCall("Write", {"file_path": ".infomark/store", "content": "postgresql://x/y"}),
            ToolCall("Bash", {"command": "echo postgresql://x/y > .infomark/store"}),
            ToolCall("Bash", {"command": "INFOMARK_STORE=sqlite infomark audit"}),
            ToolCall("Write", {"file_path": "infomark.toml", "content": 'store = "sqlite"'}),
        ):
            assert gk.authorize(call).verdict.value == "deny", call
