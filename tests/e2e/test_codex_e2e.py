"""A whole scripted fix session through the real Codex CLI with infomark's hooks installed.

The hooks come from the real installer (``infomark install codex``); the model is a
:class:`ModelStub` speaking the Responses API on 127.0.0.1. Codex tells a PostToolUse hook
a command's output but not its exit status, so a shell run's evidence tag reaches the model
with its next tool call (here a ``cat``, as an agent that looks before it edits would).
Codex runs non-managed hooks only once the user trusted them in ``/hooks``; an automated
run says ``--dangerously-bypass-hook-trust`` instead, as this test does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper

from .claude_harness import cache_dir
from .hosts_harness import (
    EVIDENCE_REF,
    HOST_VERSIONS,
    LEDGER,
    check_fix_journal,
    codex_home,
    host_binary,
    host_env,
    install_hooks,
    run_host,
    stamp,
)
from .model_stubs import Call, ModelStub, Request, Turn
from .scripts_infomark import BUGGY_BODY, FIXED_BODY, ORACLE, oracle_env, write_project

_PATCH = f"""*** Begin Patch
*** Update File: parser.py
@@
-    {BUGGY_BODY}
+    {FIXED_BODY}
*** End Patch
"""


def _session(proc: subprocess.CompletedProcess[str]) -> str:
    """The session id ``codex exec --json`` reports first (``thread.started``)."""
    for line in proc.stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "thread.started":
            return str(event["thread_id"])
    raise AssertionError(f"no thread.started event in codex's output: {proc.stdout[-2000:]}")


@dataclass
class _Fix:
    parser: Path
    refs: list[str] = field(default_factory=list)
    seen: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def _edit() -> Call:
        return Call("apply_patch", {}, custom=_PATCH)

    @staticmethod
    def _shell(command: str) -> Call:
        return Call("exec_command", {"cmd": command})

    def script(self) -> list[object]:
        return [
            Turn(text=LEDGER, calls=(self._edit(),)),
            self._after_deny,
            self._look("oracle"),
            self._after_look,
            self._after_edit,
            self._after_refusal,
            self._look("rerun"),
            self._finish,
        ]

    def _after_deny(self, request: Request) -> Turn:
        self.seen["deny"] = request.since_model()
        self.seen["parser_after_deny"] = self.parser.read_text(encoding="utf-8")
        return Turn(text="Grounding C1 first.", calls=(self._shell(ORACLE),))

    def _look(self, name: str) -> object:
        def step(request: Request) -> Turn:
            self.seen[name] = request.since_model()
            return Turn(text="Looking at the parser.", calls=(self._shell("cat parser.py"),))

        return step

    def _ref(self, request: Request) -> str:
        refs = EVIDENCE_REF.findall(request.since_model())
        assert refs, f"no evidence ref reached the model: {request.since_model()}"
        return refs[0]  # the oracle run's (the cat's follows with the next call)

    def _after_look(self, request: Request) -> Turn:
        self.seen["look"] = request.since_model()
        self.refs.append(self._ref(request))
        return Turn(text=stamp(self.refs[-1]), calls=(self._edit(),))

    def _after_edit(self, request: Request) -> Turn:
        self.seen["edit"] = request.since_model()
        return Turn(text="Done, all tests pass.")

    def _after_refusal(self, request: Request) -> Turn:
        self.seen["refusal"] = request.since_model()
        return Turn(text="Re-running the oracle.", calls=(self._shell(ORACLE),))

    def _finish(self, request: Request) -> Turn:
        self.refs.append(self._ref(request))
        return Turn(text="Done.\n\n" + stamp(self.refs[-1]))


@pytest.fixture(autouse=True)
def _no_planted_tmp_git() -> Iterator[None]:
    """Codex's sandbox plants ``.git`` mount points in the writable roots it protects, ``/tmp``
    among them; an empty ``/tmp/.git`` left behind makes every directory under ``/tmp`` look
    like a git work tree to every later program. Remove what the run planted (only that)."""
    planted = Path("/tmp/.git")  # the path Codex plants, not a temp file of ours
    before = planted.exists()
    yield
    if not before and planted.is_dir():
        shutil.rmtree(planted, ignore_errors=True)


@pytest.mark.e2e
def test_codex_fix_session_is_denied_grounded_refused_then_finishes(tmp_path: Path) -> None:
    binary = host_binary("codex")
    project = tmp_path / "project"
    parser = write_project(project)
    original = parser.read_text(encoding="utf-8")
    install_hooks("codex", project)
    model = _Fix(parser)

    with ModelStub("responses", model.script()) as stub:
        home = codex_home(cache_dir() / "codex-homes", stub.url, project)
        try:
            env = host_env(
                tmp_path, {**oracle_env(), "CODEX_HOME": str(home), "STUB_API_KEY": "stub"}
            )
            args = [str(binary), "exec", "--skip-git-repo-check",
                    "--dangerously-bypass-hook-trust", "--json",
                    "Fix parse() so fields lose surrounding blanks."]  # fmt: skip
            proc = run_host(args, project, env)
            sessions = sorted((home / "sessions").rglob("rollout-*.jsonl"))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    stub.check(complete=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(sessions) == 1

    installed = json.loads((project / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    assert {"SessionStart", "PreToolUse", "PostToolUse", "Stop"} <= set(installed["hooks"])

    assert "infomark protocol" in stub.scripted[0].all_text()  # SessionStart context

    # 1. The ledger and the patch in one turn: the hook read the ledger, then denied.
    assert "C1 (Hypothetical" in model.seen["deny"] and f"`{ORACLE}`" in model.seen["deny"]
    assert model.seen["parser_after_deny"] == original

    # 2. The oracle ran; Codex gives no exit status to the hook: the tag follows...
    assert "OK" in model.seen["oracle"] and "comes with your next tool call" in model.seen["oracle"]
    # ... with the next call, read from Codex's own rollout.
    assert model.refs[0] in model.seen["look"]

    # 3. Stamped, the same patch ran.
    assert parser.read_text(encoding="utf-8") == original.replace(BUGGY_BODY, FIXED_BODY)

    # 4. "Done" with no evidence newer than the edit: refused, naming the oracle.
    assert (
        "no claim is exact on evidence produced after the last edit"
        in model.seen["refusal"].lower()
    )
    assert f"`{ORACLE}` (C1)" in model.seen["refusal"]

    # 5. A fresh run and stamp finished; the journal verifies.
    session = _session(proc)
    check_fix_journal(
        project,
        session,
        model.refs,
        [
            ("apply_patch", "deny"),
            ("Bash", "allow"),
            ("Bash", "allow"),
            ("apply_patch", "allow"),
            ("Bash", "allow"),
            ("Bash", "allow"),
        ],
    )
    print(f"\n[e2e codex {HOST_VERSIONS['codex']}] requests {len(stub.scripted)}")


_PROBE = """import os
home = chr(46) + "info" + "mark"  # built at run time: no classifier sees the path
for read in (lambda: open(os.path.join(home, "key")).read(), lambda: os.listdir(home)):
    try:
        print("READ", read())
    except OSError as exc:
        print("DENIED", exc)
"""


@pytest.mark.e2e
def test_codex_sandbox_keeps_the_ledger_home_from_a_script_the_hook_cannot_read(
    tmp_path: Path,
) -> None:
    """The hook refuses commands that name the ledger home, or compute a path it cannot
    resolve; a script file it cannot look into is allowed to run, and Codex's sandbox (the
    profile `infomark install codex` wrote) is what keeps the home from it."""
    binary = host_binary("codex")
    project = tmp_path / "project"
    write_project(project)
    (project / "probe.py").write_text(_PROBE, encoding="utf-8")  # say, a file of the repo
    install_hooks("codex", project)
    seen: list[str] = []

    def after(request: Request) -> Turn:
        seen.append(request.since_model())
        return Turn(text="Nothing there.")

    run = Call("exec_command", {"cmd": "python3 probe.py"})
    with ModelStub("responses", [Turn(text="Running the probe.", calls=(run,)), after]) as stub:
        home = codex_home(cache_dir() / "codex-homes", stub.url, project)
        try:
            env = host_env(
                tmp_path, {**oracle_env(), "CODEX_HOME": str(home), "STUB_API_KEY": "stub"}
            )
            args = [str(binary), "exec", "--skip-git-repo-check",
                    "--dangerously-bypass-hook-trust", "--json", "run the probe"]  # fmt: skip
            proc = run_host(args, project, env, timeout=120)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    stub.check(complete=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (output,) = seen
    assert output.count("DENIED [Errno 13] Permission denied") == 2 and "READ" not in output
    key = (project / ".infomark" / "key").read_bytes().strip()
    assert key and key.decode("ascii", "replace") not in stub.requests[-1].all_text()
    config = (project / ".codex" / "config.toml").read_text(encoding="utf-8")
    assert 'default_permissions = "infomark"' in config and '".infomark" = "none"' in config
    with Gatekeeper.open(project / ".infomark", _session(proc), root=project) as gk:
        decisions = [e.payload for e in gk.events() if e.type == "decision"]
        assert gk.audit(verify=True).verified is True
    assert [(d["tool"], d["decision"]) for d in decisions] == [("Bash", "allow")]
