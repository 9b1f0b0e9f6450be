"""``read_regular``: a file the agent may have replaced is read, or refused, never waited on."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.regular import NotRegular, open_regular, read_regular


@given(data=st.binary(max_size=3 << 20), limit=st.one_of(st.none(), st.integers(0, 4 << 20)))
def test_a_regular_file_reads_as_its_bytes_up_to_the_limit(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, limit: int | None
) -> None:
    path = tmp_path_factory.mktemp("reg") / "f"
    path.write_bytes(data)
    assert read_regular(str(path), limit) == (data if limit is None else data[:limit])


def _fifo(d: Path) -> Path:
    os.mkfifo(d / "fifo")
    return d / "fifo"


def _socket(d: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "sock"))  # the socket file stays after close
    s.close()
    return d / "sock"


def _link_to_fifo(d: Path) -> Path:
    (d / "link").symlink_to(_fifo(d))
    return d / "link"


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (_fifo, "a FIFO"),
        (_link_to_fifo, "a FIFO"),
        (lambda d: d, "a directory"),
        (lambda d: Path("/dev/null"), "a character device"),
    ],
    ids=["fifo", "symlink-to-fifo", "directory", "device"],
)
def test_anything_else_is_refused_at_once_with_what_it_is(
    tmp_path: Path, make: object, kind: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(NotRegular) as raised:
        read_regular(str(path))
    assert raised.value.strerror == f"{kind}, not a file" and raised.value.filename == str(path)


def test_a_socket_cannot_even_be_opened(tmp_path: Path) -> None:
    with pytest.raises(OSError):  # ENXIO: a socket file does not open; never a wait
        read_regular(str(_socket(tmp_path)))


def test_nothing_there_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular(str(tmp_path / "absent"))


def test_open_regular_seeks_a_file_and_refuses_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"0123456789")
    with open_regular(str(tmp_path / "f")) as fh:
        assert fh.seek(0, 2) == 10 and fh.seek(4) == 4 and fh.read(3) == b"456"
    with pytest.raises(NotRegular, match="a FIFO, not a file"):
        open_regular(str(_fifo(tmp_path)))
