"""infomark/tools/attest/fileio.py: whole-file reads and writes with the os calls alone."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.tools.attest import fileio
from infomark.tools.attest.carry import _digest


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=3000), st.sampled_from([0, 1, 65535, 65536, 200_001]))
def test_what_is_written_is_read_back_whole(head: bytes, pad: int) -> None:
    data = head + b"z" * pad
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "f")
        fileio.write_path(path, b"longer content first " * 10)
        fileio.write_path(path, data)  # an existing file is truncated
        assert fileio.read_path(path) == data == Path(path).read_bytes()


def test_a_symlink_is_not_followed_when_asked_and_its_digest_is_its_target(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text("X = 1\n")
    (tmp_path / "link.py").symlink_to("real.py")
    with pytest.raises(OSError) as info:
        fileio.read_path(str(tmp_path / "link.py"), os.O_NOFOLLOW)
    assert info.value.errno == errno.ELOOP
    assert fileio.read_path(str(tmp_path / "link.py")) == b"X = 1\n"
    assert _digest(str(tmp_path / "link.py"), "sha256:")[1] == b"real.py"
    assert _digest(str(tmp_path / "real.py"), "sha256:")[1] == b"X = 1\n"
    assert _digest(str(tmp_path / "gone.py"), "sha256:") == (None, None)
    assert _digest(str(tmp_path), "sha256:") == (None, None)  # a directory: not a file
