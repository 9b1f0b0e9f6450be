"""Issue 10's property, through the real hook process: whatever the payload (malformed,
deep, huge, wrong types) and whatever was done to the ledger home (key mode, key bytes,
database bytes, a held ``BEGIN EXCLUSIVE``, missing files), a mutating PreToolUse is never
allowed in an enforcing profile, and the hook answers within its time bound (< 5 s).

The session starts with an ungrounded premise and one witnessed journal head, so a
healthy home denies too: the property says a broken one never does better.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_hook import HookResult, HookSession, run_hook
from rel_support import examples, ledger_block

BOUND_S = 5.0
MUTATIONS: list[tuple[str, dict[str, Any]]] = [
    ("Write", {"file_path": "app.py", "content": "x = 1\n"}),
    ("Edit", {"file_path": "app.py", "old_string": "x = 0", "new_string": "x = 2"}),
    ("MultiEdit", {"file_path": "app.py", "edits": [{"old_string": "x", "new_string": "y"}]}),
    ("Bash", {"command": "rm -rf build"}),
    ("Bash", {"command": "echo x > app.py"}),
    ("Write", {"file_path": "infomark.toml", "content": 'profile = "observe"\n'}),
]


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, Any]:
    tool, tool_input = draw(st.sampled_from(MUTATIONS))
    tool_input = dict(tool_input)
    kind = draw(st.sampled_from(["plain", "deep", "huge", "wrong_name", "wrong_input", "junk"]))
    name: Any = tool
    if kind == "deep":
        tool_input["extra"] = {"raw_depth": draw(st.integers(10, 3000))}
    elif kind == "huge":
        tool_input["content"] = "x" * draw(st.integers(100_000, 2_000_000))
    elif kind == "wrong_name":
        name = draw(st.one_of(st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2)))
    elif kind == "wrong_input":
        tool_input = draw(st.one_of(st.text(max_size=20), st.integers(), st.lists(st.none())))
    elif kind == "junk":
        tool_input[draw(st.text(max_size=10))] = draw(st.one_of(st.none(), st.floats(), st.text()))
    return name, tool_input


CORRUPTIONS = st.one_of(
    st.just(("none", None)),
    st.tuples(st.just("key_mode"), st.sampled_from([0o644, 0o604, 0o640, 0o666, 0o000])),
    st.tuples(st.just("key_bytes"), st.binary(max_size=64)),
    st.tuples(
        st.just("db_bytes"), st.tuples(st.integers(0, 1 << 16), st.binary(min_size=1, max_size=512))
    ),
    st.tuples(st.just("db_truncate"), st.integers(0, 1 << 15)),
    st.just(("lock", None)),
    st.tuples(
        st.just("missing"),
        st.sampled_from(["key", "ledger.db", "ledger.db-wal", "config.cache.json", ".gitignore"]),
    ),
)


def _corrupt(home: Path, corruption: tuple[str, Any]) -> AbstractContextManager[Any]:
    kind, arg = corruption
    if kind == "key_mode":
        (home / "key").chmod(arg)
    elif kind == "key_bytes":
        (home / "key").write_bytes(arg)
    elif kind == "db_bytes":
        offset, data = arg
        db = home / "ledger.db"
        with db.open("r+b") as f:
            f.seek(min(offset, max(db.stat().st_size - 1, 0)))
            f.write(data)
    elif kind == "db_truncate":
        with (home / "ledger.db").open("r+b") as f:
            f.truncate(arg)
    elif kind == "missing":
        (home / arg).unlink(missing_ok=True)
    elif kind == "lock":
        return _Locked(home / "ledger.db")
    return nullcontext()


class _Locked:
    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, timeout=0)

    def __enter__(self) -> None:
        self.db.execute("BEGIN EXCLUSIVE")

    def __exit__(self, *exc: object) -> None:
        self.db.execute("ROLLBACK")
        self.db.close()


def _allowed(result: HookResult) -> bool:
    if result.code == 2:
        return False
    spec = (result.out or {}).get("hookSpecificOutput") or {}
    return spec.get("permissionDecision") not in ("deny", "ask")


@settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
@given(payload=payloads(), corruption=CORRUPTIONS, strict=st.booleans())
def test_a_mutating_pretooluse_is_never_allowed(
    payload: tuple[str, Any], corruption: tuple[str, Any], strict: bool
) -> None:
    project = Path(tempfile.mkdtemp(prefix="im-prop-"))
    try:
        (project / "app.py").write_text("x = 0\n")
        if strict:
            (project / "infomark.toml").write_text('profile = "strict"\n')
        cc = HookSession(project)
        cc.say(ledger_block())
        response = {"stdout": "x", "stderr": "", "interrupted": False}
        post = cc.hook(
            "PostToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_response=response
        )
        cc.witness(post)
        name, tool_input = payload
        body = cc.payload("PreToolUse", tool_name=name, tool_input=tool_input)
        raw = json.dumps(body).encode()
        if isinstance(tool_input, dict) and "extra" in tool_input:
            depth = tool_input["extra"]["raw_depth"]
            nested = b'{"a": ' * depth + b'"x"' + b"}" * depth
            raw = raw.replace(b'{"raw_depth": %d}' % depth, nested)
        with _corrupt(cc.home, corruption):
            start = time.monotonic()
            result = run_hook(raw, project, timeout=30)
            took = time.monotonic() - start
        assert result.code in (0, 2), result
        assert not _allowed(result), (corruption, name, result.err[-500:])
        assert took < BOUND_S, f"{took:.2f} s for {corruption}"
    finally:
        os.chmod(project, 0o700)
        shutil.rmtree(project, ignore_errors=True)
