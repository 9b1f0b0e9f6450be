"""A 100 MB tool result on a disk that stalls: never dropped in silence (issue 28).

The hook's watchdog answers in its place: the model is told the result is not evidence and
why (in every profile), the journal gets a ``hook_error`` with the payload's size and what
the agent was told, the half-written blob is removed, and no evidence exists for the call.
A temp blob left by a writer that died is swept when the blob store is next opened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.store.blobs import BlobStore

HOOK = Path(__file__).with_name("rel_slow_disk_hook.py")
SIZE = 100_000_000


def _pre_and_post(project: Path, use: str) -> tuple[bytes, bytes]:
    base = {
        "session_id": "big",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "cat big.log"},
        "tool_use_id": use,
    }
    pre = json.dumps(base).encode()
    response = {"stdout": "y" * SIZE, "stderr": "", "interrupted": False}
    post = {**base, "hook_event_name": "PostToolUse", "tool_response": response}
    return pre, json.dumps(post).encode()


@pytest.mark.parametrize(
    "profile",
    [  # ~20 s each (100 MB through a real hook): the fast suite runs the default profile
        pytest.param("observe", marks=pytest.mark.slow),
        "ledger",
        pytest.param("strict", marks=pytest.mark.slow),
    ],
)
def test_a_100_mb_result_on_a_stalled_disk_is_answered_and_journaled(
    tmp_path: Path, profile: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "infomark.toml").write_text(f'profile = "{profile}"\n')
    home = project / ".infomark"
    env = {**os.environ, "INFOMARK_HOME": str(home)}
    pre, post = _pre_and_post(project, "toolu_big")
    exe = Path(sys.executable).with_name("infomark")
    first = subprocess.run([str(exe), "hook", "claude-code"], input=pre, env=env, cwd=project,
                           capture_output=True, timeout=120, check=False)  # fmt: skip
    assert first.returncode == 0, first.stderr
    ready_r, ready_w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, str(HOOK), str(ready_w)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=project, pass_fds=(ready_w,),
    )  # fmt: skip
    os.close(ready_w)
    out, err = proc.communicate(post, timeout=300)
    stalled = os.read(ready_r, 1)
    os.close(ready_r)
    assert stalled == b"x", "the blob write never started: the stall was not exercised"
    assert proc.returncode == 0, err[-2000:]
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PostToolUse"
    told = answer["additionalContext"]
    assert "no evidence for this result" in told and "100 MB" in told, told
    assert "not" in told and "recorded" in told
    # the half-written blob is gone, and nothing else was left in the blob store
    left = [p for p in (home / "blobs").rglob("*") if p.is_file()]
    assert all(p.stat().st_size < 1_000_000 for p in left), left
    assert not list((home / "blobs" / ".tmp").iterdir())
    with Gatekeeper.open(home, "big", root=project) as gk:
        errors = [e for e in gk.events() if e.type == "hook_error"]
        recorded = [e for e in gk.events() if e.type == "evidence_recorded"]
        assert gk.audit(verify=True).verified is True
    assert len(errors) == 1, errors
    p = errors[0].payload
    assert p["event"] == "PostToolUse" and p["watchdog"] is True
    assert p["payload_bytes"] > SIZE and p["partial_blobs_removed"] == 1
    assert p["told"] == told[:1000] and p["tool_use_id"] == "toolu_big"
    assert p["failed_closed"] is False
    assert not [e for e in recorded if e.payload["record"].get("call_id") == "toolu_big"]


def test_orphaned_temp_blobs_are_swept_at_open(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    (root / ".tmp").mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = root / ".tmp" / f"{'a' * 16}.{dead.pid}.0badf00d"
    orphan.write_bytes(b"z" * 4096)
    live = root / ".tmp" / f"{'b' * 16}.{os.getpid()}.0badf00d"  # ours: being written
    live.write_bytes(b"z")
    store = BlobStore(root)
    assert not orphan.exists() and live.exists()
    digest = store.put(b"hello")
    assert store.verify(digest) is True
