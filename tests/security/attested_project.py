"""A small git project with a real bug, and a Claude Code session over it (real hook process).

Shared by the attested-run tests: ``project(tmp)`` writes ``calc.py`` (``add`` subtracts),
``test_calc.py`` (one test that catches it, one that does not), a ``Makefile`` whose
``test`` target runs pytest, and ``infomark.toml`` with ``[attest] required = true``; then
commits it. :class:`Agent` drives the hook as Claude Code does and counts every denial and
refusal it meets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tools.hook_session import Session

PYTHON = sys.executable
PYTEST = f"{PYTHON} -m pytest -q -p no:cacheprovider"
MAKE = shutil.which("make")
REF = re.compile(r"evidence_ref=(ev_[0-9a-f]{24})")

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)

PYTEST_TOML = '[pytest]\naddopts = ["-k", "zero"]\n'
PYTEST_INI = "[pytest]\naddopts = -k zero\n"

PATCH_RUNNER = (
    "import _pytest.python as _p\n"
    "_orig = _p.Function.runtest\n\n\n"
    "def _runtest(self):\n"
    "    try:\n        _orig(self)\n    except AssertionError:\n        pass\n\n\n"
    "_p.Function.runtest = _runtest\n"
)

#: start-up code that wraps ``_pytest.python.Function.runtest`` so failed assertions pass: at
#: once when ``_pytest.python`` is loaded, else as it is imported (a finder first on
#: ``sys.meta_path``), before any plugin can take a reference to the original
PATCH_AT_IMPORT = """
import importlib.machinery
import sys


def _patch(module):
    original = module.Function.runtest

    def runtest(self):
        try:
            original(self)
        except AssertionError:
            pass

    module.Function.runtest = runtest


class _Finder:
    def find_spec(self, name, path, target=None):
        if name != "_pytest.python":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if "_pytest.python" in sys.modules:
    _patch(sys.modules["_pytest.python"])
else:
    sys.meta_path.insert(0, _Finder())
"""

REPRO = "from calc import add\n\n\ndef test_negative():\n    assert add(-1, -2) == -3\n"


def need_bwrap() -> None:
    from infomark.tools import sandbox

    status = sandbox.probe()
    if not status.available:
        pytest.skip(f"NO SANDBOX HERE, attested runs cannot be tested: {status.detail}")


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def git_project(tmp: Path, files: dict[str, str], *, config: str = "", attest: bool = True) -> Path:
    """``tmp/proj``: ``files``, an infomark.toml of ``config`` (first asking for attested runs
    in so many words when ``attest``), committed to a new git repository (the baseline)."""
    root = tmp / "proj"
    root.mkdir()
    for rel, text in files.items():
        (root / rel).write_text(text)
    (root / "infomark.toml").write_text(("[attest]\nrequired = true\n" if attest else "") + config)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def project(tmp: Path, *, config: str = "") -> Path:
    files = {"calc.py": BUGGY, "test_calc.py": TESTS, "Makefile": f"test:\n\t{PYTEST}\n"}
    return git_project(tmp, {**files, ".gitignore": "transcript.jsonl\n"}, config=config)


def ledger(
    oracle: str,
    *,
    expect_fail: bool = False,
    cid: str = "C1",
    also: tuple[tuple[str, str, bool], ...] = (),
    premises: tuple[str, ...] | None = None,
) -> str:
    """A claim_ledger: ``cid`` with ``oracle`` (and the ``also`` claims: id, oracle, expect
    FAIL); the premises are ``premises`` (default: ``cid``)."""
    items = []
    for one, orc, fails in ((cid, oracle, expect_fail), *also):
        expect = "\n      expect: FAIL" if fails else ""
        items.append(
            f"    - id: {one}\n"
            '      text: "add adds"\n'
            "      status: Hypothetical\n"
            '      falsifier: "the tests fail"\n'
            f'      oracle: "{orc}"{expect}\n'
        )
    plan = ", ".join(premises if premises is not None else (cid,))
    return "claim_ledger:\n  claims:\n" + "".join(items) + f"  premises_for_plan: [{plan}]\n"


class Agent:
    """An agent in Claude Code: every call goes through the real hook process."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.cc = Session(root)
        self.home = home
        self.n = 0
        self.denials: list[str] = []  # every deny / ask / block the agent met

    def _env(self) -> dict[str, str]:
        return {"INFOMARK_HOME": str(self.home)}

    def hook(self, event: str, **fields: Any) -> Any:
        old = {k: os.environ.get(k) for k in self._env()}
        os.environ.update(self._env())
        try:
            code, out, err = self.cc.hook(event, **fields)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        assert code in (0, 2), err
        return out

    def say(self, text: str) -> None:
        """The agent writes ``text``; the hook reads it at the next call (a Read here)."""
        self.cc.say(text)
        self.call("Read", {"file_path": str(self.root / "calc.py")})

    def call(self, tool: str, tool_input: dict[str, Any], *, user_approves: bool = False) -> str:
        """PreToolUse; if allowed, run it for real (Bash, Write, Read) and PostToolUse. Returns
        the text the agent sees (the deny reason or the evidence tag). ``user_approves``: an
        ``ask`` is answered yes by the user in Claude Code's prompt (not a denial)."""
        self.n += 1
        uid = f"toolu_{self.n}"
        self.cc.say(f"calling {tool}", tool_use_id=uid)
        out = self.hook("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=uid)
        spec = (out or {}).get("hookSpecificOutput") or {}
        asked = spec.get("permissionDecision") == "ask"
        if spec.get("permissionDecision") == "deny" or (asked and not user_approves):
            reason = str(spec.get("permissionDecisionReason", ""))
            self.denials.append(reason)
            return reason
        result: dict[str, Any]
        if tool == "Bash":
            done = subprocess.run(
                tool_input["command"], shell=True, cwd=self.root, capture_output=True, text=True
            )
            result = {
                "stdout": done.stdout,
                "stderr": done.stderr,
                "interrupted": False,
                "exit_code": done.returncode,
            }
            event = "PostToolUse" if done.returncode == 0 else "PostToolUseFailure"
        elif tool == "Read":
            result = {
                "type": "text",
                "file": {"content": Path(tool_input["file_path"]).read_text()},
            }
            event = "PostToolUse"
        else:
            path = Path(tool_input["file_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tool_input["content"])
            result = {"type": "create", "filePath": str(path)}
            event = "PostToolUse"
        fields: dict[str, Any] = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": uid}
        if event == "PostToolUse":
            fields["tool_response"] = result
        else:
            fields["error"] = f"Exit code {result['exit_code']}\n{result['stdout']}"
        post = self.hook(event, **fields)
        ctx = ((post or {}).get("hookSpecificOutput") or {}).get("additionalContext", "")
        return str(ctx)

    def write(self, rel: str, content: str, *, user_approves: bool = False) -> str:
        tool_input = {"file_path": str(self.root / rel), "content": content}
        return self.call("Write", tool_input, user_approves=user_approves)

    def sneak(self, rel: str, content: str) -> None:
        """A file appears in the tree by a way the gate did not see (a script's side effect,
        a held edit the agent got around): the attested copy must hold regardless."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)

    def bash(self, command: str) -> str:
        return self.call("Bash", {"command": command})

    def check(self, cid: str = "C1") -> str:
        """``infomark check C1`` typed as a command: answered by the hook (deny + result)."""
        before = len(self.denials)
        text = self.call("Bash", {"command": f"infomark check {cid}"})
        assert len(self.denials) == before + 1, "the shell must never run `infomark check`"
        self.denials.pop()  # the protocol's own step: its answer comes as a deny
        return text

    def stop(self, text: str = "Done: the bug is fixed.") -> tuple[bool, str]:
        self.say(text)
        out = self.hook("Stop", stop_hook_active=False, last_assistant_message=text)
        if out and out.get("decision") == "block":
            self.denials.append(str(out.get("reason")))
            return False, str(out.get("reason"))
        return True, ""

    def status(self, cid: str = "C1") -> str:
        from infomark.gatekeeper import Gatekeeper

        with Gatekeeper.open(self.home, self.cc.sid, root=self.root) as gk:
            return gk.state.claims[cid].status

    def verify(self) -> None:
        done = subprocess.run(
            [str(Path(PYTHON).with_name("infomark")), "audit", "--verify", "--session",
             self.cc.sid, "--home", str(self.home)],
            cwd=self.root, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    def evidence(self, ref: str) -> dict[str, Any]:
        from infomark.gatekeeper import Gatekeeper

        with Gatekeeper.open(self.home, self.cc.sid, root=self.root) as gk:
            ev = gk.evidence(ref)
            assert ev is not None
            return json.loads(json.dumps(dict(ev.record)))
