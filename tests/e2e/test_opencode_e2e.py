"""A whole scripted fix session through the real OpenCode with infomark's plugin installed.

The plugin comes from the real installer (``infomark install opencode``); the model is a
:class:`ModelStub` speaking the OpenAI Chat Completions API on 127.0.0.1 (an
``@ai-sdk/openai-compatible`` provider given in ``OPENCODE_CONFIG_CONTENT``).

Observed on OpenCode 1.18.33 (besides the plugin protocol, :mod:`infomark.tools.hosts.opencode`):

* it sends a title request (no ``tools``) beside the session's first request; the stub
  answers it without consuming the script;
* for every config directory (``~/.config/opencode``, the project's ``.opencode``) it runs
  an npm install of ``@opencode-ai/plugin`` in the background, unless that directory has a
  ``node_modules`` and a ``package-lock.json`` whose root lists every dependency: the test
  lays both down (the plugin imports nothing from npm), points every proxy variable at a
  closed port on 127.0.0.1 and sets ``npm_config_offline``, so nothing leaves the machine;
  ``OPENCODE_DISABLE_MODELS_FETCH``, ``OPENCODE_DISABLE_AUTOUPDATE``,
  ``OPENCODE_DISABLE_DEFAULT_PLUGINS``, ``OPENCODE_DISABLE_LSP_DOWNLOAD`` and
  ``OPENCODE_DISABLE_SHARE`` turn off its other downloads;
* ``opencode run --format json`` prints one JSON event a line, each with ``sessionID``, and
  exits when the session goes idle.

OpenCode runs the agent's commands outside any sandbox infomark configures, so (issue 27) its
own runs ground nothing in the enforcing profiles: the model grounds C1 with
``infomark check C1``, which the hook answers by running the oracle in infomark's sandbox.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .hosts_harness import (
    HOST_VERSIONS,
    check_fix_journal,
    host_binary,
    host_env,
    install_hooks,
    run_host,
)
from .hosts_harness import LEDGER as _LEDGER
from .model_stubs import Call, ModelStub, Request, Turn
from .scripts_infomark import BUGGY_BODY, FIXED_BODY, ORACLE, oracle_env, write_project

CHECK = "infomark check C1"
# infomark attests a runner it knows (its report says which tests ran): pytest runs the
# project's unittest file
PYTEST = "python3 -m pytest -q test_parser.py"
LEDGER = _LEDGER.replace(ORACLE, PYTEST)
EVIDENCE_REF = re.compile(r"evidence_ref=(ev_[0-9a-f]{24})")  # in infomark's attested answer
_LOCK = {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}
_CLOSED = "http://127.0.0.1:9"  # discard port: nothing listens, a request fails at once


def _no_npm_install(directory: Path) -> None:
    """What makes OpenCode skip its background ``npm install`` in a config directory."""
    (directory / "node_modules").mkdir(parents=True, exist_ok=True)
    (directory / "package-lock.json").write_text(json.dumps(_LOCK), encoding="utf-8")


def _offline_env(home: Path, url: str) -> dict[str, str]:
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "stub",
        "options": {"baseURL": f"{url}/v1", "apiKey": "stub-not-a-key"},
        "models": {"m": {"name": "m", "tool_call": True}},
    }
    config = {"provider": {"stub": provider}, "model": "stub/m", "small_model": "stub/m",
              "autoupdate": False, "share": "disabled"}  # fmt: skip
    extra = {
        **oracle_env(),
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",  # start-up work the test needs not
        "OPENCODE_DISABLE_FFF": "1",
        "npm_config_offline": "true",
        "npm_config_registry": _CLOSED,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        extra[name] = _CLOSED
    return host_env(home, extra)


def _session(stdout: str) -> str:
    for line in stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if isinstance(event.get("sessionID"), str):
            return str(event["sessionID"])
    raise AssertionError(f"no sessionID in opencode's output: {stdout[-2000:]}")


@dataclass
class _Fix:
    parser: Path
    refs: list[str] = field(default_factory=list)
    seen: dict[str, str] = field(default_factory=dict)

    def _edit(self) -> Call:
        return Call(
            "edit",
            {"filePath": str(self.parser), "oldString": BUGGY_BODY, "newString": FIXED_BODY},
        )

    @staticmethod
    def _oracle() -> Call:
        return Call("bash", {"command": CHECK, "description": "run the tests"})

    def script(self) -> list[object]:
        return [
            Turn(text=LEDGER, calls=(self._edit(),)),
            self._after_deny,
            self._after_oracle,
            self._after_edit,
            self._after_refusal,
            self._finish,
        ]

    def _after_deny(self, request: Request) -> Turn:
        self.seen["deny"] = request.since_model()
        self.seen["parser_after_deny"] = self.parser.read_text(encoding="utf-8")
        return Turn(text="Grounding C1 first.", calls=(self._oracle(),))

    def _ref(self, request: Request) -> str:
        refs = EVIDENCE_REF.findall(request.since_model())
        assert len(refs) == 1, f"expected one evidence ref, got {refs}: {request.since_model()}"
        return refs[0]

    def _after_oracle(self, request: Request) -> Turn:
        self.seen["oracle"] = request.since_model()
        self.refs.append(self._ref(request))  # infomark stamped its own run
        return Turn(text="C1 is grounded.", calls=(self._edit(),))

    def _after_edit(self, request: Request) -> Turn:
        self.seen["edit"] = request.since_model()
        return Turn(text="Done, all tests pass.")

    def _after_refusal(self, request: Request) -> Turn:
        self.seen["refusal"] = request.since_model()
        return Turn(text="Re-running the oracle.", calls=(self._oracle(),))

    def _finish(self, request: Request) -> Turn:
        self.refs.append(self._ref(request))
        return Turn(text="Done.")


@pytest.mark.e2e
def test_opencode_fix_session_is_denied_grounded_refused_then_finishes(tmp_path: Path) -> None:
    binary = host_binary("opencode")
    project, home = tmp_path / "project", tmp_path / "home"
    parser = write_project(project)
    original = parser.read_text(encoding="utf-8")
    install_hooks("opencode", project)
    _no_npm_install(project / ".opencode")
    _no_npm_install(home / ".config" / "opencode")
    model = _Fix(parser)

    with ModelStub("chat", model.script()) as stub:
        env = _offline_env(home, stub.url)
        args = [str(binary), "run", "--format", "json",
                "Fix parse() so fields lose surrounding blanks."]  # fmt: skip
        proc = run_host(args, project, env, timeout=120)
    stub.check(complete=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    plugin = project / ".opencode" / "plugins" / "infomark.js"
    assert plugin.is_file() and (plugin.parent / "infomark-hook").is_file()
    assert not (project / ".opencode" / "node_modules" / "@opencode-ai").exists()  # no npm ran

    first = stub.scripted[0]
    assert "infomark protocol" in first.all_text()  # session.start context: the system prompt
    assert "commands are NOT sandboxed" in first.all_text()  # ... with the sandbox warning

    # 1. The ledger and the edit in one message: the plugin sent the text, the hook read the
    #    ledger, then denied the edit (a thrown error: the model reads it as the tool result).
    assert "C1 (Hypothetical" in model.seen["deny"] and f"`{PYTEST}`" in model.seen["deny"]
    assert model.seen["parser_after_deny"] == original

    # 2. infomark ran the oracle itself; its evidence tag reached the model with the answer.
    assert "infomark ran this check itself" in model.seen["oracle"]
    assert model.refs[0] in model.seen["oracle"]

    # 3. Stamped by infomark, the same edit ran.
    assert parser.read_text(encoding="utf-8") == original.replace(BUGGY_BODY, FIXED_BODY)

    # 4. "Done" with no evidence newer than the edit: refused, and the reason reached the
    #    model as a user message, so the session went on instead of ending.
    refusal = model.seen["refusal"].lower()
    assert "no claim is exact on evidence produced after the last edit" in refusal
    assert "C1" in model.seen["refusal"]

    # 5. The fresh run and stamp finished; the journal verifies.
    check_fix_journal(
        project,
        _session(proc.stdout),
        model.refs,
        [("edit", "deny"), ("edit", "allow")],  # `infomark check` is infomark's run
        oracle=PYTEST,
    )
    print(f"\n[e2e opencode {HOST_VERSIONS['opencode']}] requests {len(stub.scripted)}")
