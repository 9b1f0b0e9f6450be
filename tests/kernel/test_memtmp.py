"""Where :func:`infomark.kernel.memtmp.mkdtemp` puts a throwaway directory, and its mode."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from infomark.kernel import memtmp


def _made(path: str) -> Path:
    made = Path(path)
    assert made.is_dir()
    assert made.stat().st_mode & 0o777 == 0o700
    assert made.stat().st_uid == os.getuid()
    return made


@pytest.fixture
def _shm_usable() -> None:
    if not (os.path.isdir(memtmp.SHM) and os.access(memtmp.SHM, os.W_OK | os.X_OK)):
        pytest.skip("no writable /dev/shm on this machine")


@pytest.mark.usefixtures("_shm_usable")
def test_in_memory_when_dev_shm_is_there_and_tmpdir_is_not_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    made = _made(memtmp.mkdtemp("infomark-test-"))
    try:
        assert made.parent == Path(memtmp.SHM)
        assert made.name.startswith("infomark-test-")
        assert memtmp.in_memory()
    finally:
        shutil.rmtree(made)


def test_an_operators_tmpdir_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile caches the directory it chose
    assert not memtmp.in_memory()
    made = _made(memtmp.mkdtemp("infomark-test-"))
    assert made.parent == tmp_path


@pytest.mark.usefixtures("_shm_usable")
def test_too_little_room_in_memory_falls_back_to_the_disk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    free = os.statvfs(memtmp.SHM)
    more_than_free = free.f_bavail * free.f_frsize + (1 << 40)
    assert not memtmp.in_memory(more_than_free)
    made = _made(memtmp.mkdtemp("infomark-test-", min_free=more_than_free))
    try:
        assert made.parent != Path(memtmp.SHM)
    finally:
        shutil.rmtree(made)
