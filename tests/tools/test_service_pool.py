"""The service's session pool: one open gatekeeper per (project, session), reopened only when
the configuration it was opened with changed (a real Gatekeeper on a real SQLite home)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.tools.protocol import SessionLike
from infomark.tools.service_pool import SessionPool


def _pool(tmp_path: Path, opened: list[Config]) -> SessionPool:
    home = tmp_path / ".infomark"

    def opener(session: str, root: Path, config: Config) -> SessionLike:
        opened.append(config)
        return Gatekeeper.open(home, session, root=root, config=config)

    return SessionPool(home, tmp_path, load_config(tmp_path, home), opener, max_open=8)


def test_the_hook_route_and_the_api_routes_share_one_open_session(tmp_path: Path) -> None:
    """The hook route loads the project's configuration itself; an equal copy of the
    service's own must not close and reopen the session on every alternation."""
    opened: list[Config] = []
    pool = _pool(tmp_path, opened)

    async def calls() -> None:
        for _ in range(3):
            await pool.run("s", lambda gk: gk.gate())  # an API route: the service's config
            config, error = await pool.project_config(tmp_path)  # the hook route's
            assert error is None
            await pool.run("s", lambda gk: gk.gate(), root=tmp_path, config=config)

    try:
        anyio.run(calls)
    finally:
        pool.close()
    assert len(opened) == 1


def test_a_changed_project_config_still_reopens_the_session(tmp_path: Path) -> None:
    opened: list[Config] = []
    pool = _pool(tmp_path, opened)

    async def calls() -> list[str]:
        profiles = []
        for text in ('profile = "strict"\n', 'profile = "strict"\n', 'profile = "observe"\n'):
            (tmp_path / "infomark.toml").write_text(text)
            config, error = await pool.project_config(tmp_path)
            assert error is None
            profiles.append(
                await pool.run("s", lambda gk: gk.config.profile, root=tmp_path, config=config)
            )
        return profiles

    try:
        assert anyio.run(calls) == ["strict", "strict", "observe"]
    finally:
        pool.close()
    assert [c.profile for c in opened] == ["strict", "observe"]


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path: Path) -> None:
    """An in-place rewrite of the same size with its modification time put back
    (``touch -d``): the change time gives it away, and a file changed in the last
    moments is read again on every call anyway (file times are coarse)."""
    config_file = tmp_path / "infomark.toml"
    opened: list[Config] = []
    pool = _pool(tmp_path, opened)
    old = (1_700_000_000, 1_700_000_000)

    async def profile() -> str:
        config, error = await pool.project_config(tmp_path)
        assert error is None
        return config.profile

    try:
        config_file.write_text('profile = "strict"\n')
        os.utime(config_file, old)
        assert anyio.run(profile) == "strict"
        with config_file.open("r+") as f:  # same inode, same size
            f.write('profile = "ledger"\n')
        os.utime(config_file, old)
        assert anyio.run(profile) == "ledger"
    finally:
        pool.close()
