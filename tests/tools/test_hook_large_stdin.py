"""A large result through the real command hook, streamed from stdin (issue 28).

The journal records what it recorded when the hook read the payload whole: the output's
digest and size are those of ``stdout + stderr`` (a shell result) or of the sorted JSON dump
(any other dict result) encoded as UTF-8, and the blob holds exactly those bytes. A payload
that breaks inside the large string reaches the agent as ``json``'s own error, as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import claude_sandbox_on

from bench._timing import run_own_rss
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.store.blobs import BlobStore

EXE = str(Path(sys.executable).with_name("infomark"))
SID = "large"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    claude_sandbox_on(project)  # as `infomark install claude-code` leaves it
    return project


def _hook(project: Path, payload: dict[str, Any] | bytes) -> dict[str, Any]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = {**os.environ, "INFOMARK_HOME": str(project / ".infomark")}
    proc = subprocess.run([EXE, "hook", "claude-code"], input=raw, env=env, cwd=project,
                          capture_output=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return out


def _call(project: Path, tool: str, tool_input: dict[str, Any], use: str) -> dict[str, Any]:
    base = {"session_id": SID, "transcript_path": "", "cwd": str(project),
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": use}  # fmt: skip
    assert _hook(project, {**base, "hook_event_name": "PreToolUse"}) == {}  # allowed
    return {**base, "hook_event_name": "PostToolUse"}


def _recorded(project: Path, use: str) -> tuple[dict[str, Any], bytes | None]:
    home = project / ".infomark"
    with Gatekeeper.open(home, SID, root=project) as gk:
        records = [
            e.payload["record"]
            for e in gk.events()
            if e.type == "evidence_recorded" and e.payload["record"].get("tool_call_id") == use
        ]
    assert len(records) == 1, records
    return records[0], BlobStore(home / "blobs").get(records[0]["output_digest"])


def _digest(data: bytes) -> tuple[str, int]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), len(data)


def test_a_large_shell_result_records_the_digest_of_stdout_and_stderr(project: Path) -> None:
    stdout = 'ok é 😀 tab\t"quoted" \\ back\n' * 100_000  # 3.3 MB, escapes on every line
    stderr = "warning: ☃\n" * 10
    post = _call(project, "Bash", {"command": "cat big.log"}, "toolu_sh")
    post["tool_response"] = {"stdout": stdout, "stderr": stderr, "interrupted": False}
    answer = _hook(project, post)
    told = answer["hookSpecificOutput"]["additionalContext"]
    assert told.startswith("[infomark evidence ") or "ev_" in told, told
    record, blob = _recorded(project, "toolu_sh")
    data = (stdout + stderr).encode("utf-8", "surrogatepass")
    assert (record["output_digest"], record["output_size"]) == _digest(data)
    assert blob == data


def test_a_large_dict_result_records_the_digest_of_its_sorted_dump(project: Path) -> None:
    content = "".join(f'{i}\tline «{i}» \\ "x"\n' for i in range(120_000))  # 2.6 MB
    response = {"type": "text", "file": {"filePath": "/x/big.txt", "content": content,
                                         "numLines": 120_000}}  # fmt: skip
    post = _call(project, "Read", {"file_path": str(project / "big.txt")}, "toolu_rd")
    post["tool_response"] = response
    _hook(project, post)
    record, blob = _recorded(project, "toolu_rd")
    data = json.dumps(response, sort_keys=True, ensure_ascii=False).encode()
    assert (record["output_digest"], record["output_size"]) == _digest(data)
    assert blob == data


@pytest.mark.parametrize(
    ("breaks", "name"),
    [
        (lambda raw: raw.replace(b"line 77 ", b"line 77 \\q", 1), "an invalid escape"),
        (lambda raw: raw[: len(raw) // 2], "a payload cut short"),
        (lambda raw: raw.replace(b"line 5 ", b"line 5 \x01", 1), "a raw control character"),
    ],
)
def test_a_broken_large_payload_reaches_the_agent_as_json_s_error(
    project: Path, breaks: Any, name: str
) -> None:
    post = _call(project, "Bash", {"command": "cat big.log"}, "toolu_bad")
    post["tool_response"] = {"stdout": "".join(f"line {i} ok\n" for i in range(300_000))}
    raw = breaks(json.dumps(post).encode())
    assert len(raw) > 1 << 20  # streamed
    try:
        json.loads(raw.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        why = f"JSONDecodeError: {exc}"
    else:
        raise AssertionError(f"{name}: still valid JSON")
    answer = _hook(project, raw)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PostToolUse"
    told = answer["additionalContext"]
    assert "no evidence for this result" in told, told
    assert f"not a usable Claude Code payload (stdin is not usable JSON: {why})" in told, told


# The command hook with a minute more before its watchdog answers: this test measures memory,
# and a loaded machine must not turn it into a test of the 4 s deadline
_UNHURRIED = """
import sys
from infomark.tools.hooks.deadline import extend
extend(60)
sys.argv = ["infomark", "hook", "claude-code"]
from infomark.cli.entry import main
main()
"""


def test_a_100_mb_result_is_recorded_in_bounded_memory(project: Path) -> None:
    """Issue 28's goal: the hook's own peak RSS ≤ 64 MiB for a 100 MB output (read whole,
    it was ~300 MiB). The payload is written piece by piece (this process never holds it)
    and the hook forked from a small interpreter: a child's ``ru_maxrss`` includes its
    spawner's peak (``bench._timing.run_own_rss``)."""
    post = _call(project, "Bash", {"command": "cat big.log"}, "toolu_big")
    post["tool_response"] = {"stdout": "@@", "stderr": "", "interrupted": False}
    head, tail = json.dumps(post).encode().split(b'"@@"')
    block = ("check 4: ok " * 8 + "\n") * 100 + 'é 😀 "quoted" \\ tab\t\n'  # some of each
    piece = json.dumps(block)[1:-1].encode()
    h, size = hashlib.sha256(), 0
    path = project / "payload.json"
    with path.open("wb") as f:
        f.write(head + b'"')
        while size < 100_000_000:
            f.write(piece)
            data = block.encode()
            h.update(data)
            size += len(data)
        f.write(b'"' + tail)
    env = {**os.environ, "INFOMARK_HOME": str(project / ".infomark")}
    run = run_own_rss([sys.executable, "-c", _UNHURRIED], stdin_path=str(path), env=env,
                      cwd=str(project))  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    told = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "no evidence" not in told, told
    record, _blob = _recorded(project, "toolu_big")
    assert (record["output_digest"], record["output_size"]) == ("sha256:" + h.hexdigest(), size)
    assert run.peak_kib / 1024 <= 64, f"peak RSS {run.peak_kib / 1024:.1f} MiB"
