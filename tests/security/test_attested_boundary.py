"""The sandbox's boundary, tested from inside an attested run (real bubblewrap, real pytest).

The project's own test file (part of the baseline) probes the boundary: the ledger home, its
key and the operator token, the host's transcript cannot be read; the project the agent
works in (the baseline's place) cannot be written; the network is closed (a real PostgreSQL
or any listener on 127.0.0.1 is out of reach). The copy itself is writable, private (0700)
and in memory (``/dev/shm``) where the rule of :func:`infomark.tools.attest.sandboxed.workdir`
puts it. The attested run PASSes only if every probe holds, and a runaway oracle is stopped
by the configured limit.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.kernel import memtmp
from infomark.ledger.calls import ToolCall
from infomark.tools import sandbox
from infomark.tools.agent_sandbox import agent_policy
from infomark.tools.attest import check
from infomark.tools.attest.sandboxed import SHM_MIN_FREE, workdir
from tests.security.attested_project import PYTEST, git, ledger, need_bwrap

PROBE = """import os
import socket

import pytest

HOME = {home!r}
TRANSCRIPT = {transcript!r}
TOKEN = {token!r}
PROJECT = {project!r}
IN_MEMORY = {in_memory!r}


def _unreadable(path):
    try:
        with open(path, "rb") as fh:
            return fh.read() == b""
    except OSError:
        return True


def test_the_home_and_its_key_cannot_be_read():
    assert _unreadable(os.path.join(HOME, "key"))
    assert not os.path.exists(os.path.join(HOME, "ledger.db"))


def test_the_operator_token_and_the_transcript_cannot_be_read():
    assert _unreadable(TOKEN)
    assert _unreadable(TRANSCRIPT)


def test_the_project_the_agent_works_in_cannot_be_written():
    with pytest.raises(OSError):
        with open(os.path.join(PROJECT, "calc.py"), "a") as fh:
            fh.write("# written from inside")


def test_the_network_is_closed():
    for port in (5432, 80, 443):
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_the_copy_is_writable_private_and_where_the_rule_puts_it():
    with open("written_inside.txt", "w") as fh:  # the copy: the run's own place
        fh.write("x")
    here = os.getcwd()
    assert here.startswith("/dev/shm/") is IN_MEMORY
    top = here
    while not os.path.basename(top).startswith("infomark-attest-"):
        top = os.path.dirname(top)
        assert top != "/"
    assert os.stat(top).st_mode & 0o777 == 0o700
    assert os.stat(top).st_uid == os.getuid()
    if IN_MEMORY:  # the sandbox's own /dev: nothing of the host's /dev/shm but the copy's place
        assert os.listdir("/dev/shm") == [os.path.basename(top)]


def test_the_environment_is_clean():
    assert "SECRET_OF_THE_HOST" not in os.environ
    assert "PYTHONSTARTUP" not in os.environ
"""


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    need_bwrap()


def _session(tmp_path: Path, oracle: str, config: str = "") -> tuple[Gatekeeper, Path]:
    root = tmp_path / "proj"
    root.mkdir()
    home = tmp_path / "home"
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text('{"secret": "the transcript"}\n')
    token = home / "token"
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "test_boundary.py").write_text(
        PROBE.format(
            home=str(home),
            transcript=str(transcript),
            token=str(token),
            project=str(root),
            in_memory=memtmp.in_memory(SHM_MIN_FREE),
        )
    )
    (root / "infomark.toml").write_text("[attest]\nrequired = true\n" + config)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    gk = Gatekeeper.open(home, "boundary", root=root)
    token.write_text("operator-token-value")
    gk.host_files = (str(transcript),)
    gk.ingest(ledger(oracle))
    gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))  # baseline
    return gk, root


def test_an_attested_run_cannot_reach_past_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_OF_THE_HOST", "x")
    monkeypatch.setenv("PYTHONSTARTUP", "/nonexistent")
    gk, root = _session(tmp_path, PYTEST)
    with gk:
        result = check(gk, "C1")
        assert result.outcome == "PASS", result.text
        assert result.status == "Exact"
        record = result.evidence.record if result.evidence else {}
        attested = record["attested"]
        assert attested["sandbox"] == "bubblewrap"
        assert attested["network"] is False
        assert attested["report"]["passed"] == 6
    assert (root / "calc.py").read_text().endswith("a + b\n")  # not written


def test_a_runaway_oracle_is_stopped_by_its_limit(tmp_path: Path) -> None:
    gk, _ = _session(
        tmp_path, "python3 -c 'while True: pass'", config="cpu_seconds = 2\nwall_seconds = 60\n"
    )
    with gk:
        result = check(gk, "C1")
        assert result.outcome == "FAIL", result.text
        assert "limit" in result.text
        record = result.evidence.record if result.evidence else {}
        assert "cpu" in record["attested"]["limits_hit"]
        assert gk.state.claims["C1"].status != "Exact"


def test_the_agents_sandboxed_commands_cannot_reach_a_copy_in_memory(tmp_path: Path) -> None:
    """A copy in ``/dev/shm`` is out of reach of the agent's commands under bubblewrap (their
    own ``/dev``); one under the host's ``/tmp``, which they share, is not."""
    if not memtmp.in_memory(SHM_MIN_FREE):
        pytest.skip("the attested copy does not go to /dev/shm on this machine")
    if sandbox.probe().backend is not sandbox.SandboxBackend.BWRAP:
        pytest.skip("the agent's commands run under Landlock here: /dev stays writable")
    project = tmp_path / "proj"
    project.mkdir()
    policy = agent_policy(tmp_path / "home", project, env=dict(sandbox.clean_env()))
    in_memory = Path(workdir("infomark-attest-"))
    on_disk = Path(tempfile.mkdtemp(prefix="infomark-attest-"))
    try:
        for scratch in (in_memory, on_disk):
            (scratch / "calc.py").write_text("def add(a, b):\n    return a - b\n")
            done = sandbox.run(["/bin/sh", "-c", f"echo x >> {scratch}/calc.py"], policy)
            reached = (scratch / "calc.py").read_text().endswith("x\n")
            assert reached is (scratch == on_disk), (scratch, done.stderr)
    finally:
        shutil.rmtree(in_memory)
        shutil.rmtree(on_disk)
