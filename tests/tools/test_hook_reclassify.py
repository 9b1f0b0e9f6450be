"""A Bash result is recorded with the class its decision found, only when classifying again
could not answer otherwise (``gates/watch.decided_class``, ``gates/shell_fs``): the journal
is the same as when every result is classified again.

Each scenario runs twice through the installed launcher on the JSON Claude Code sends
(``bench/session.py``): as shipped, and with the class kept in each watch marker removed
between PreToolUse and PostToolUse (what the hook did before: classify the result's command
again). Both journals must match, event by event.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench.session import RealSession

_VOLATILE = {"mac", "ts", "at", "elapsed_ms", "key_id"}  # per home, per moment


def _markers(s: RealSession) -> list[Path]:
    return sorted((s.home / "watch").glob("*.mark"))


def _kept(s: RealSession) -> list[list[str]]:
    out = []
    for m in _markers(s):
        found = json.loads(m.read_text()).get("classified")
        if found is not None:
            out.append(found)
    return out


def _strip(s: RealSession) -> None:
    """Make the next record classify again: the marker keeps everything but the class."""
    for m in _markers(s):
        data = json.loads(m.read_text())
        if data.pop("classified", None) is not None:
            m.write_text(json.dumps(data))


def _bash(s: RealSession, command: str, *, strip: bool, between: Any = None) -> list[list[str]]:
    use = s.next_use()
    tool_input = {"command": command}
    s.run(s.payload("PreToolUse", "Bash", tool_input, use))
    kept = _kept(s)
    if between is not None:
        between()
    if strip:
        _strip(s)
    response = {"stdout": "ok\n", "stderr": "", "interrupted": False}
    s.run(s.payload("PostToolUse", "Bash", tool_input, use, response))
    return kept


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str) and value.startswith("ev_"):
        return "ev_"
    return value


def _journal(s: RealSession) -> list[tuple[str, Any]]:
    db = sqlite3.connect(s.home / "ledger.db")
    try:
        rows = db.execute("select type, payload from events order by seq").fetchall()
    finally:
        db.close()
    return [(t, _scrub(json.loads(p))) for t, p in rows]


def _records(journal: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    return [
        (p["record"]["command"], p["record"]["tool_class"])
        for t, p in journal
        if t == "evidence_recorded"
    ]


def _play(work: Path, *, strip: bool) -> tuple[RealSession, dict[str, list[list[str]]]]:
    s = RealSession(work)
    kept: dict[str, list[list[str]]] = {}
    # a plain run: its classification reads no file, its class is kept and reused
    kept["plain"] = _bash(s, "python3 check.py 1", strip=strip)

    # taint recorded between the decision and the result: the agent creates gen.py (a Write,
    # recorded) after `python3 gen.py` was decided; the result is a run of its own file
    def write_gen() -> None:
        s.call("Write", {"file_path": str(s.project / "gen.py"), "content": "print(1)\n"},
               {"type": "create", "filePath": str(s.project / "gen.py")})  # fmt: skip

    kept["taint"] = _bash(s, "python3 gen.py", strip=strip, between=write_gen)
    # a glob reads the directory: nothing is kept, the result is classified again
    kept["glob"] = _bash(s, "ls *.py", strip=strip)
    return s, kept


def test_reused_classes_record_what_classifying_again_records(tmp_path: Path) -> None:
    work = tmp_path / "w"  # both runs at the same paths: the inputs (and their digests) match
    shipped, kept = _play(work, strip=False)
    a = _journal(shipped)
    shutil.rmtree(work)
    again, _ = _play(work, strip=True)
    b = _journal(again)
    # what was kept: the plain run's and the taint case's (both execute when decided), no glob
    assert [k[1] for k in kept["plain"]] == ["execute"]
    assert [k[1] for k in kept["taint"]] == ["execute"]
    assert kept["glob"] == []
    assert _records(a) == _records(b)
    assert ("python3 gen.py", "modify") in _records(a)  # the taint recorded in between counts
    assert ("python3 check.py 1", "execute") in _records(a)
    assert [t for t, _ in a] == [t for t, _ in b]
    assert a == b


def test_the_key_changes_with_everything_the_class_depends_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from infomark.gates.config import Config
    from infomark.gates.watch import classification_key
    from infomark.ledger.calls import ToolCall

    call = ToolCall("Bash", {"command": "python3 check.py 1"}, "t1", cwd="/p")
    monkeypatch.setenv("HOME", "/home/a")
    key = classification_key(Config(), call)
    assert key is not None
    assert classification_key(Config(), ToolCall("Bash", dict(call.input), "t2", cwd="/p")) == key
    others = [
        classification_key(Config(), ToolCall("Bash", {"command": "python3 check.py 2"}, cwd="/p")),
        classification_key(Config(), ToolCall("Bash", dict(call.input), cwd="/q")),
        classification_key(Config(tools={"Bash": "execute"}), call),
        classification_key(
            Config(), ToolCall("Bash", dict(call.input), cwd="/p", annotations={"x": True})
        ),
    ]
    monkeypatch.setenv("HOME", "/home/b")
    others.append(classification_key(Config(), call))
    assert None not in others and key not in others and len(set(others)) == len(others)
    assert classification_key(Config(), ToolCall("Read", {"file_path": "/p/x"})) is None


def test_a_kept_class_the_home_key_did_not_sign_is_not_taken(tmp_path: Path) -> None:
    """The attack: an agent whose commands are not sandboxed runs as the same user and can
    write the watch marker in the home. A class it writes there, with the digest of what the
    class depends on (public: infomark's code computes it), must not stand for the command's
    own classification when its result is recorded; only a pair this home's key signed does."""
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates.fingerprint import marker_classified
    from infomark.gates.watch import _key, _watch_dir, classification_key, decided_class
    from infomark.ledger.calls import ToolCall

    root = tmp_path / "proj"
    root.mkdir()
    with Gatekeeper.open(tmp_path / "home", "s1", root=root) as gk:
        call = ToolCall("Bash", {"command": "ls"}, tool_call_id="t1", cwd=str(root))
        assert gk.authorize(call).allowed
        led, cfg = gk.store, gk.config
        kept = decided_class(led, cfg, call)
        assert kept is not None  # the decision kept its class, signed
        found = marker_classified(_watch_dir(led), _key(led, call))
        assert found is not None and found[0] != classification_key(cfg, call)  # a MAC
        markers = list(Path(_watch_dir(led)).glob("*.mark"))
        assert len(markers) == 1
        data = json.loads(markers[0].read_text())
        forged = "modify" if kept.value != "modify" else "read"
        for pair in (
            [classification_key(cfg, call), forged],  # what the unsigned marker took
            [found[0], forged],  # the signed digest, another class
        ):
            markers[0].write_text(json.dumps({**data, "classified": pair}))
            assert decided_class(led, cfg, call) is None, pair
        markers[0].write_text(json.dumps(data))
        assert decided_class(led, cfg, call) == kept
