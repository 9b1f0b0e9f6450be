from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from infomark.kernel.errors import KeyFileError
from infomark.ledger.keys import Key, load_key


def test_key_file_created_0600_with_32_bytes(tmp_path: Path) -> None:
    key = load_key(tmp_path / "home")
    path = tmp_path / "home" / "key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_bytes()) == 32
    assert load_key(tmp_path / "home").key_id == key.key_id


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_group_or_world_accessible_key_is_refused(tmp_path: Path, mode: int) -> None:
    load_key(tmp_path)
    os.chmod(tmp_path / "key", mode)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_key(tmp_path)


def test_env_key_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFOMARK_KEY", "ab" * 32)
    key = load_key(tmp_path)
    assert key.secret == bytes.fromhex("ab" * 32)
    assert not (tmp_path / "key").exists()


def test_bad_env_key_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFOMARK_KEY", "not-hex")
    with pytest.raises(KeyFileError, match="hex"):
        load_key(tmp_path)


def test_key_never_in_repr() -> None:
    key = Key.from_bytes(b"s" * 32)
    assert "sss" not in repr(key) and "7373" not in repr(key)


def test_truncated_key_file_refused(tmp_path: Path) -> None:
    load_key(tmp_path)
    (tmp_path / "key").write_bytes(b"short")
    with pytest.raises(KeyFileError, match="32 bytes"):
        load_key(tmp_path)
