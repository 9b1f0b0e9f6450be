"""Run the real Gemini CLI, Codex CLI and OpenCode offline against a ModelStub on 127.0.0.1.

Pinned versions (``scripts/install-agent-host.sh`` installs them into
``<e2e cache>/hosts/<name>``). Observed on them, besides the hook protocols (their modules
in ``infomark/tools/hosts/``):

* Gemini CLI 0.61.0: ``GOOGLE_GEMINI_BASE_URL`` points it at the stub, but that alone selects
  the "gateway" auth type, which ``-p`` refuses ("Invalid auth method selected"); the user
  settings must say ``security.auth.selectedType: "gemini-api-key"`` (with any
  ``GEMINI_API_KEY``). Project hooks run only in a trusted folder
  (``~/.gemini/trustedFolders.json``: ``{"<dir>": "TRUST_FOLDER"}``). With the default model
  the router first sends a ``:generateContent`` side call; ``-m gemini-2.5-pro`` skips it.
  ``--yolo`` approves every tool call; ``-o json`` prints ``{"session_id", "response", …}``.
* Codex 0.171.0: ``CODEX_HOME`` holds ``config.toml``; a ``[model_providers.<id>]`` with
  ``base_url = "http://127.0.0.1:<port>/v1"``, ``wire_api = "responses"`` and ``env_key``
  makes ``codex exec`` talk to the stub without a login. Project hooks
  (``<project>/.codex/hooks.json``) load only when ``[projects."<dir>"] trust_level =
  "trusted"``, and non-managed hooks run only once trusted in ``/hooks`` (or with
  ``--dangerously-bypass-hook-trust``, for automation that vets its hooks itself).
* OpenCode 1.18.33: see tests/e2e/test_opencode_e2e.py (its provider config, the switches
  that keep it offline, and the npm install it must be kept from running).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

from .claude_harness import _run, cache_dir
from .scripts_infomark import ORACLE

__all__ = [
    "EVIDENCE_REF",
    "HOST_VERSIONS",
    "LEDGER",
    "check_fix_journal",
    "codex_home",
    "gemini_home",
    "host_binary",
    "host_env",
    "install_hooks",
    "run_host",
    "stamp",
]

HOST_VERSIONS = {"gemini": "0.61.0", "codex": "0.171.0", "opencode": "1.18.33"}
_REPO = Path(__file__).resolve().parents[2]
_INSTALLER = _REPO / "scripts" / "install-agent-host.sh"
_INSTALL_TIMEOUT = 1200
_PASSED_THROUGH = ("PATH", "TMPDIR")


def _unavailable(name: str, reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true requires the {name} CLI for the e2e tests: {reason}", pytrace=False)
    pytest.skip(f"SKIPPED LOUDLY: the {name} CLI is not available: {reason}")


def host_binary(name: str) -> Path:
    """The pinned binary of host ``name``, installed on first use (one installer at a time)."""
    if shutil.which("npm") is None or shutil.which("bash") is None:
        _unavailable(name, f"npm (or bash) is not on PATH; run {_INSTALLER} {name}")
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = subprocess.run(
                ["bash", str(_INSTALLER), name],
                capture_output=True,
                text=True,
                timeout=_INSTALL_TIMEOUT,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            _unavailable(name, f"{_INSTALLER} did not finish within {_INSTALL_TIMEOUT} s")
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        _unavailable(name, f"{_INSTALLER} {name} failed: {done.stderr.strip()[-2000:]}")
    return Path(lines[-1])


def host_env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED_THROUGH if k in os.environ}
    env.update({"HOME": str(home), "LANG": "C.UTF-8", "NO_COLOR": "1"})
    env.update(extra)
    return env


def gemini_home(home: Path, project: Path) -> None:
    """User settings that let ``gemini -p`` use an API key, and trust ``project``."""
    config = home / ".gemini"
    config.mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (config / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (config / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")


def run_host(
    args: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run a host CLI with stdin closed; on timeout kill its process group and raise."""
    return _run(list(args), cwd, dict(env), timeout)


def codex_home(cache: Path, url: str, project: Path) -> Path:
    """A ``CODEX_HOME`` whose provider is the stub at ``url``, trusting ``project``.

    Outside ``/tmp``: Codex refuses to create its sandbox helper under a temporary directory
    (then every command fails with ``bwrap: execvp codex-linux-sandbox``).
    """
    import tempfile

    cache.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="codex-home-", dir=cache))
    config = f"""model = "gpt-5.5"
model_provider = "stub"
approval_policy = "never"

[model_providers.stub]
name = "stub"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"

[projects."{project.resolve()}"]
trust_level = "trusted"
"""
    (home / "config.toml").write_text(config, encoding="utf-8")
    return home


EVIDENCE_REF = re.compile(r"\[infomark evidence_ref=(ev_[0-9a-f]{24}) ")
LEDGER = f"""I will fix the whitespace handling in parse().

claim_ledger:
  claims:
    - id: C1
      text: "test_parser.py passes on parser.py; the fix must keep it passing"
      status: Exact
      falsifier: "test_parser.py fails"
      oracle: "{ORACLE}"
  premises_for_plan: [C1]
"""


def stamp(ref: str) -> str:
    return f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS"


def install_hooks(name: str, project: Path) -> None:
    """Run the installed ``infomark install <name> --root PROJECT``."""
    exe = Path(sys.executable).with_name("infomark")
    done = subprocess.run(
        [str(exe), "install", name, "--root", str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def check_fix_journal(
    project: Path,
    session: str,
    refs: list[str],
    decisions: list[tuple[str, str]],
    oracle: str = ORACLE,
) -> None:
    """The fix session's journal: C1 Exact on the last run, the gate at G9, the chain verified,
    both oracle runs PASS evidence, no hook error, ``decisions`` in order, and one refused
    finish (no evidence after the edit) before the allowed one."""
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.evidence import Outcome

    with Gatekeeper.open(project / ".infomark", session, root=project) as gk:
        view = gk.ledger()
        audit = gk.audit(verify=True)
        events = list(gk.events())
        evidence = [gk.evidence(ref) for ref in refs]
    assert view.status("C1") == "Exact" and view.grounded and view.gate == "G9"
    assert audit.verified is True and audit.problems == []
    for ev in evidence:
        assert ev is not None and ev.outcome is Outcome.PASS and ev.command == oracle
    by_type: dict[str, list[dict[str, object]]] = {}
    for event in events:
        by_type.setdefault(event.type, []).append(event.payload)
    assert "hook_error" not in by_type
    assert [(d["tool"], d["decision"]) for d in by_type["decision"]] == decisions
    assert [(f["allow"], f["code"]) for f in by_type["finish_decision"]] == [
        (False, "completion_without_evidence"),
        (True, "allowed"),
    ]
