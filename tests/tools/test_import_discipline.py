"""The decision path imports only the standard library (plus tree-sitter for shell)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import claude_sandbox_on

if TYPE_CHECKING:
    from conftest import Service

HEAVY = (
    "lark",
    "pydantic",
    "sqlite_utils",
    "httpx",
    "click",
    "rich",
    "starlette",
    "uvicorn",
    "mcp",
    "cryptography",
    "anyio",
    "psycopg",  # the PostgreSQL store (issue 19): only when a home's store is a URL
    "psycopg_pool",
    "opentelemetry",  # the OTel export (INFOMARK_OTEL=1 only, after the answer is out)
    "google",  # protobuf, for OTLP
    "requests",
)

_SCRIPT = """
import io, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from infomark.cli.entry import main
out = io.StringIO(); real = sys.stdout; sys.stdout = out
code = main(["hook", "claude-code"])
sys.stdout = real
modules = sorted(sys.modules)  # before this script's own json import
import json
print(json.dumps({"code": code, "out": out.getvalue(), "modules": modules}))
"""


def _run(project: Path, payload: dict[str, object], *args: str) -> dict[str, object]:
    if not args:  # the session's first action records its baseline (once): not the steady state
        first = {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}}
        warm = {"session_id": "imp", "cwd": str(project), "transcript_path": "", **first}
        subprocess.run(
            [sys.executable, "-m", "infomark", "hook", "claude-code"],
            input=json.dumps(warm),
            capture_output=True,
            text=True,
            cwd=project,
            timeout=60,
            check=True,
        )
    payload = {"session_id": "imp", "cwd": str(project), "transcript_path": "", **payload}
    script = _SCRIPT.replace('["hook", "claude-code"]', repr(["hook", "claude-code", *args]))
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(payload)],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# Standard-library modules the hook once imported and no longer needs: each costs start-up
# time in a process that lives for one tool call (docs/performance.md, "the hook's cold start").
SLOW_STDLIB = (
    "dataclasses",  # inspect, ast, tokenize, dis: infomark.kernel.records instead (standins/)
    "inspect",
    "ast",
    "tokenize",
    "typing",  # annotations only (TYPE_CHECKING); the Policy protocol loads it on use
    "contextlib",  # infomark.kernel.contexts (standins/)
    "shutil",  # bz2, lzma, zlib
    "bz2",
    "lzma",
    "secrets",  # os.urandom
    "random",
    "uuid",  # platform, socket
    "socket",
    "platform",
    "subprocess",
    "copy",
    "email",
    "logging",
    "tempfile",
    "hashlib",  # OpenSSL's start-up (~3 ms): infomark.kernel.digest, built-in SHA-256
    "hmac",
    "_hashlib",
    "threading",  # the watchdog is a bare _thread
    "datetime",  # sqlite3's adapters: the journal opens _sqlite3 itself
    "sqlite3",
    "json",  # re and five compiles: infomark.kernel.jsonc drives _json itself
    "pathlib",  # with urllib.parse and ipaddress ~15 M instructions: os.path on str
    "urllib",
    "ipaddress",
)

# Banned at module level on the hook path too (ruff TID253), but not asserted absent at run
# time: ``re`` imports it, and a call that needs ``re`` loads it (a project with no test yet
# matches its files with fnmatch at every PreToolUse; tree-sitter's binding imports re).
# ~6 M to import and ~1 M a class: infomark.kernel.enums builds the hook's enums without it.
STATIC_ONLY = ("enum",)

# Every infomark module a steady-state PreToolUse (no new ledger text) loads: the session's
# second call (its first records the baseline and the agent's sandbox, once). A module
# added to this path is a start-up cost: add it here deliberately, or import it lazily.
PRETOOL_MODULES = {
    "infomark",
    "infomark._version",
    "infomark.cli",
    "infomark.cli.entry",
    "infomark.gatekeeper",
    "infomark.gates",
    "infomark.gates.authorize",
    "infomark.gates.classify",
    "infomark.gates.config",
    "infomark.gates.decision",
    "infomark.gates.grading",
    "infomark.gates.grading_flow",  # the grading surface's session logic (was in the facade)
    "infomark.gates.oracles",
    "infomark.gates.protect",
    "infomark.gates.reach",
    "infomark.gates.watch",
    "infomark.kernel",
    "infomark.kernel.contexts",
    "infomark.kernel.decisions",
    "infomark.kernel.digest",  # SHA-256 and HMAC without OpenSSL for small inputs
    "infomark.kernel.jsonc",  # json.loads/dumps on _json: no json (re, 5 compiles) import
    "infomark.kernel.enums",  # StrEnum / IntEnum without enum (standins/)
    "infomark.kernel.errors",
    "infomark.kernel.graph",
    "infomark.kernel.infomark",
    "infomark.kernel.lazyre",
    "infomark.kernel.paths",  # pathlib's answers on str, for the few that differ from os.path
    "infomark.kernel.profiles",  # the Profile enum the gates and the failsafe ask (issue 29)
    "infomark.kernel.reasons",
    "infomark.kernel.records",
    "infomark.kernel.regular",  # reads of the agent's files that never wait on a FIFO
    "infomark.kernel.runners",  # each runner's configuration names (issue 26): grading, scratch
    "infomark.kernel.session_id",
    "infomark.kernel.standins",  # the checked stand-ins (dataclasses, contextlib, re): issue 29
    "infomark.kernel.standins.contexts",
    "infomark.kernel.standins.enums",
    "infomark.kernel.standins.lazyre",
    "infomark.kernel.standins.records",
    "infomark.kernel.tools",
    "infomark.ledger",
    "infomark.ledger.store.blobs",
    "infomark.ledger.calls",
    "infomark.ledger.canonical",
    "infomark.ledger.engine",
    "infomark.ledger.evidence",
    "infomark.ledger.home",
    "infomark.ledger.store.journal",
    "infomark.ledger.keys",
    "infomark.ledger.lineage",
    "infomark.ledger.manifest",
    "infomark.ledger.report",
    "infomark.ledger.semantics",
    "infomark.ledger.state",
    "infomark.ledger.store",  # the store subpackage (empty __init__: issue 29)
    # which store a home uses (issue 19; PostgreSQL loads only for a URL)
    "infomark.ledger.store.select",
    "infomark.ledger.store.base",  # the journal seam both backends share (issue 19)
    "infomark.ledger.store.writer_queue",  # writers of other processes queue on a flock
    "infomark.tools",
    "infomark.tools.hooks",
    "infomark.tools.hooks.answer",
    "infomark.tools.hooks.check_call",  # `infomark check C1` recognised (issue 26)
    "infomark.tools.hooks.claude_code",
    "infomark.tools.hooks.deadline",  # the watchdog's deadline, extended by an attested run
    "infomark.tools.hooks.dispatch",
    "infomark.tools.hooks.failsafe",
    "infomark.tools.hooks.inbox",
    "infomark.tools.hooks.sandboxed",
    # issue 27: whether the agent's commands are sandboxed, judged at the first decision of a
    # session no SessionStart judged it in (this test's fresh session); standard library only
    "infomark.tools.hooks.transcript",
    "infomark.tools.hooks.where",
}

FIRST_CALL_ONLY = {"infomark.tools.hooks.sandboxed"}

# What a write adds to a PreToolUse: the scratch rules for its targets and the tree's
# fingerprint for the files it creates (a Read or a plain run loads neither: ~3 M
# instructions of a Read's hook call).
WRITE_MODULES = {"infomark.gates.fingerprint", "infomark.gates.scratch", "infomark.kernel.environ"}

# What parsing a block adds to a PreToolUse (a new ledger or stamp in the transcript).
PARSER_MODULES = {
    "infomark.ledger.blocks",
    "infomark.ledger.parse",  # the parse subpackage (empty __init__: issue 29)
    "infomark.ledger.parse.locate",
    "infomark.ledger.parse.locate_keys",
    "infomark.ledger.parse.locate_suspects",
    "infomark.ledger.parse.diagnose",
    "infomark.ledger.parse.lalr",
    "infomark.ledger.parse.model",
    "infomark.ledger.parse.scalars",
    "infomark.ledger.parse.scan",
    "infomark.ledger.parse.table",
    "infomark.ledger.parse.tree",
    "infomark.ledger.parse.parser",
}  # not render: the parser quotes with it only a collection it keeps as text


def _slow(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return sorted(m for m in modules if m in SLOW_STDLIB)


def _heavy(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "a"}},
        {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": "a"}},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "a"},
            "tool_response": {"type": "text"},
        },
        {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "ok"},
    ],
)
def test_hook_decision_path_imports_no_heavy_dependency(
    project: Path, payload: dict[str, object]
) -> None:
    result = _run(project, payload)
    assert result["code"] == 0
    assert _heavy(result["modules"]) == []
    assert _slow(result["modules"]) == []


def test_steady_state_pretooluse_loads_exactly_the_pinned_modules(project: Path) -> None:
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "a"},
    }
    modules = _run(project, payload)["modules"]
    assert isinstance(modules, list)
    loaded = {m for m in modules if m.split(".")[0] == "infomark"}
    # the agent-sandbox check runs at the session's first call (the warm-up), not every call
    assert loaded <= PRETOOL_MODULES and PRETOOL_MODULES - loaded <= FIRST_CALL_ONLY, loaded


def test_an_edit_adds_the_write_modules(project: Path) -> None:
    edit = {"file_path": "a.py", "old_string": "x", "new_string": "y"}
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": edit}
    result = _run(project, payload)
    modules = result["modules"]
    assert isinstance(modules, list)
    assert set(modules) >= WRITE_MODULES, sorted(WRITE_MODULES - set(modules))
    assert _heavy(modules) == [] and _slow(modules) == []


def test_bash_adds_only_tree_sitter(project: Path) -> None:
    result = _run(
        project,
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "sed -i s/a/b/ x.py"},
        },
    )
    modules = result["modules"]
    assert _heavy(modules) == []
    assert isinstance(modules, list) and "tree_sitter._binding" in modules
    # the grammar's binding without its package's __init__ (importlib.resources, tempfile,
    # shutil, random: ~46 M instructions), tree_sitter's binding without its package's
    # __init__ (typing: ~11 M), no glob and no eager regex compile for a command without a
    # pattern, and no ast for a command that runs no Python
    slow = {"importlib.resources", "tempfile", "shutil", "random", "ast", "typing", "glob"}
    assert not slow & set(modules), slow & set(modules)
    assert "tree_sitter" not in modules and "tree_sitter_bash" not in modules


def test_parser_loads_only_when_text_holds_a_block(project: Path) -> None:
    transcript = project / "t.jsonl"
    text = (
        "claim_ledger:\n  claims:\n    - id: C1\n      status: Guess\n  premises_for_plan: [C1]\n"
    )
    transcript.write_text(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [{"type": "text", "text": text}, {"type": "tool_use", "id": "t1"}]
                },
            }
        )
        + "\n"
    )
    result = _run(
        project,
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "a"},
            "tool_use_id": "t1",
            "transcript_path": str(transcript),
        },
    )
    modules = result["modules"]
    assert isinstance(modules, list)
    assert "infomark.ledger.parse.parser" in modules  # needed, so loaded: the lazy path works
    # the parser is standard library: generated LALR tables, records instead of pydantic
    assert _heavy(modules) == []
    assert _slow(modules) == []  # nor typing, contextlib, dataclasses …
    parser = {m for m in modules if m.startswith("infomark.ledger.") and m not in PRETOOL_MODULES}
    assert parser >= PARSER_MODULES, sorted(parser)


def test_the_forwarding_hook_loads_neither_urllib_nor_the_local_hook(service: Service) -> None:
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "a"},
    }
    claude_sandbox_on(service.project)  # else the first decision carries the sandbox warning
    result = _run(service.project, payload, "--url", service.url, "--home", str(service.home))
    modules = result["modules"]
    assert result["code"] == 0 and result["out"] == ""  # the service allowed it
    assert isinstance(modules, list)
    assert "urllib.request" not in modules  # urllib.parse comes with pathlib
    assert not [m for m in modules if m.split(".")[0] in ("http", "email", "ssl")]
    assert "infomark.tools.hooks.claude_code" not in modules  # only on the local fallback
    assert "infomark.gatekeeper" not in modules


def test_ruff_bans_the_slow_stdlib_on_exactly_the_hook_path() -> None:
    # pyproject.toml's TID253 rule is the static twin of the runtime checks above: it names
    # SLOW_STDLIB and applies to every module a hook loads (all others are exempted by one
    # negated per-file-ignores key), so an import a hook would pay for fails `ruff check`.
    import importlib.util
    import re
    import tomllib

    root = Path(__file__).resolve().parents[2]
    lint = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "TID253" in lint["select"]
    assert lint["flake8-tidy-imports"]["banned-module-level-imports"] == [
        *SLOW_STDLIB,
        *STATIC_ONLY,
    ]
    [key] = [k for k in lint["per-file-ignores"] if k.startswith("!")]
    assert lint["per-file-ignores"][key] == ["TID253"]
    found = re.fullmatch(r"!infomark/\{(.*)\}\.py", key)
    assert found is not None, key
    hook_path = set()
    for name in PRETOOL_MODULES | PARSER_MODULES | WRITE_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        hook_path.add(Path(spec.origin).relative_to(root / "infomark").with_suffix("").as_posix())
    assert set(found.group(1).split(",")) == hook_path
