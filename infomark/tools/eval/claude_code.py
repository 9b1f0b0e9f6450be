"""Claude Code as the agent under test: the real binary, infomark's hooks, a scripted model.

``infomark eval --agent claude-code[:PATH]`` runs each task through the real Claude Code CLI
(``claude -p``) in the run's copy of the tree, with infomark's hooks installed there by the
real installer, the policy's configuration in ``$INFOMARK_CONFIG`` and a fresh ledger home in
``$INFOMARK_HOME`` (both beside the tree, never inside it). Its model is an
:class:`~infomark.tools.eval.anthropic_stub.AnthropicStub` on 127.0.0.1 whose every answer
comes from the same scripted stochastic agent (:mod:`infomark.tools.eval.agents`) as the
``scripted`` agent, through the same :class:`~infomark.tools.eval.observer.RunObserver`:
:class:`Translator` turns each Messages API request into the chat request the agent and the
observer read, and the agent's chat reply into Claude Code's tools.

What the translation does (observed with Claude Code 2.1.328):

* tools: ``read`` → ``Read`` (``Glob`` for a directory), ``edit`` → ``Edit``, ``write`` →
  ``Write``, with absolute paths; ``bash`` → ``Bash``. Claude Code refuses an ``Edit`` of a
  file the session has not read before any hook sees it, so an edit of an unread file is
  preceded by one extra model turn that reads it (the agent and the observer never see it);
* hook answers: a ``PreToolUse:T hook error: R`` result becomes ``[infomark denied:
  pre_tool_use] R``; each ``PostToolUse[Failure]:T hook additional context: X`` text is
  appended to the result of the next call of ``T`` (in call order); a ``Stop hook
  feedback:\\nR`` becomes ``[infomark] finish refused (stop_hook): R``; the SessionStart and
  UserPromptSubmit contexts join the system message. The hook answers carry no reason code,
  so denials and refusals are all counted under those two names;
* Bash: in ``-p`` mode Claude Code asks before most commands, so exactly the commands the
  script may run (the task's test and locate commands, ``TEST || true``, the guessed test
  commands) are passed as ``--allowedTools "Bash(…)"``; every other command is refused by
  Claude Code itself;
* a policy with ``[eval] finish = "record"`` runs without the Stop hook.

The end of a run: ``finished`` when Claude Code exits with a ``success`` result,
``max_steps`` when it stops on ``--max-turns``, else ``error`` (the record says why).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from infomark.kernel.errors import InfomarkError, UserError
from infomark.tools.eval.agents import GUESSES
from infomark.tools.eval.anthropic_stub import AnthropicStub, MessagesRequest, Reply, ToolCall
from infomark.tools.eval.observer import RunRecord
from infomark.tools.eval.policy import Policy
from infomark.tools.eval.promotion import strip_eval_table
from infomark.tools.eval.suite import Task
from infomark.tools.install import install_claude_code
from infomark.tools.runner.scripted import Request

__all__ = ["AGENT", "Translator", "allowed_commands", "claude_binary", "prepare", "run_claude"]

AGENT = "claude-code"
_BIN_ENV = "INFOMARK_CLAUDE_BIN"
_PASSED = ("PATH", "TMPDIR")
_CONTEXT = re.compile(r"^(?:PostToolUse|PostToolUseFailure):(\S+) hook additional context: ")
_START = re.compile(r"^(?:SessionStart|UserPromptSubmit) hook additional context: ")
_HOOK_ERROR = re.compile(r"^PreToolUse:\S+ hook error: ")
_STOP = "Stop hook feedback:\n"
_SPLIT = re.compile(
    r"\n\n(?=(?:(?:PostToolUse|PostToolUseFailure|PreToolUse):\S+|SessionStart|UserPromptSubmit)"
    r" hook additional context: |Stop hook feedback:\n)"
)  # several hook answers can share one text block
_TIMEOUT = 600.0


def claude_binary(agent: str) -> Path:
    """The binary of ``--agent claude-code[:PATH]``: PATH, else ``$INFOMARK_CLAUDE_BIN``,
    else ``claude`` on ``PATH``."""
    given = agent[len(AGENT) + 1 :] if agent.startswith(AGENT + ":") else ""
    where = f"--agent {agent}"
    if not given:
        given = os.environ.get(_BIN_ENV, "")
        where = f"${_BIN_ENV}"
    if not given:
        given = shutil.which("claude") or ""
        where = "claude on PATH"
    if not given:
        raise UserError(
            f"--agent {AGENT}: no Claude Code binary; pass --agent {AGENT}:PATH, set "
            f"{_BIN_ENV}, or put claude on PATH (scripts/install-claude-code.sh installs it)"
        )
    path = Path(given).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise UserError(f"{where}: {given!r} is not an executable file (the claude binary)")
    return path.absolute()


def allowed_commands(task: Task) -> list[str]:
    """The Bash commands a scripted run of ``task`` may run (``--allowedTools`` rules)."""
    s = task.spec
    commands = [s.test_command, f"{s.test_command} || true", "true", s.scripted.locate, *GUESSES]
    return [f"Bash({c})" for c in dict.fromkeys(commands) if c]


def prepare(root: Path, run_dir: Path, policy: Policy) -> dict[str, str]:
    """Install the hooks in ``root`` and write the policy beside it; the run's environment."""
    home, claude_home = run_dir / "home", run_dir / "claude-home"
    for d in (home, claude_home):
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = run_dir / "infomark.toml"
    text = strip_eval_table(policy.text)
    # Without Claude Code's Bash sandbox: the run's tree lives in /dev/shm (harness.py), which
    # its bubblewrap replaces with a fresh /dev, or under $TMPDIR, where it plants `.git/`
    # mount points. The eval measures the gates; the sandbox has its own tests
    # (tests/e2e/test_sandbox_e2e.py). So the operator (the eval) accepts unsandboxed runs as
    # grounds, unless the policy says otherwise.
    if "require_agent_sandbox" not in text:
        text = "require_agent_sandbox = false\n" + text
    config.write_text(text, encoding="utf-8")
    settings = install_claude_code(root=root, home=home, sandbox=False).path
    if not policy.finish_gate:
        data = json.loads(settings.read_text(encoding="utf-8"))
        for event in ("Stop", "SubagentStop"):
            data.get("hooks", {}).pop(event, None)
        settings.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    env.update(
        {
            "HOME": str(claude_home),
            "ANTHROPIC_API_KEY": "sk-ant-eval-not-a-real-key",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "LANG": "C.UTF-8",
            "INFOMARK_HOME": str(home),
            "INFOMARK_CONFIG": str(config),
        }
    )
    return env


class Translator:
    """One run: Messages API requests in, the chat agent's replies out as Claude Code tools."""

    def __init__(self, root: Path, session: str, agent: Callable[[Request], Mapping[str, Any]]):
        self.root = root
        self.session = session
        self.agent = agent
        self.read: set[str] = set()
        self._queued: Reply | None = None

    def __call__(self, req: MessagesRequest) -> Reply:
        if self._queued is not None:  # the edit after the extra read
            out, self._queued = self._queued, None
            return out
        msg = self.agent(self.request(req))
        return self.reply(msg)

    # -- Messages API request -> chat request ------------------------------------------------
    def request(self, req: MessagesRequest) -> Request:
        system = [req.system_text()]
        out: list[dict[str, Any]] = []
        calls: list[tuple[str, str]] = []  # (tool_use id, tool) of the last assistant message
        for role, blocks in _turns(req.messages):
            if role == "assistant":
                text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
                uses = [b for b in blocks if b.get("type") == "tool_use"]
                calls = [(str(b.get("id", "")), str(b.get("name", ""))) for b in uses]
                tool_calls = [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n.lower(), "arguments": json.dumps(b.get("input"))},
                    }
                    for (i, n), b in zip(calls, uses, strict=True)
                ]
                out.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
                continue
            results = {
                str(b.get("tool_use_id", "")): b for b in blocks if b.get("type") == "tool_result"
            }
            texts = [
                part
                for b in blocks
                if b.get("type") == "text"
                for part in _SPLIT.split(str(b.get("text", "")))
            ]
            contexts = [(c.group(1), t[c.end() :]) for t in texts if (c := _CONTEXT.match(t))]
            for use_id, tool in calls:
                if use_id not in results:
                    continue
                b = results[use_id]
                content = _flatten(b.get("content"))
                if b.get("is_error") is True and (e := _HOOK_ERROR.match(content)):
                    content = "[infomark denied: pre_tool_use] " + content[e.end() :]
                else:
                    hit = next((c for c in contexts if c[0] == tool), None)
                    if hit is not None:
                        contexts.remove(hit)
                        content += "\n" + hit[1]
                out.append({"role": "tool", "tool_call_id": use_id, "content": content})
            if results:
                calls = []
            for t in texts:
                if _CONTEXT.match(t):
                    continue
                if (s := _START.match(t)) is not None:
                    system.append(t[s.end() :])
                elif t.startswith(_STOP):
                    text = "[infomark] finish refused (stop_hook): " + t[len(_STOP) :]
                    out.append({"role": "user", "content": text})
                else:
                    out.append({"role": "user", "content": t})
        body = {"messages": [{"role": "system", "content": "\n".join(system)}, *out]}
        return Request(self.session, body, None)

    # -- chat reply -> Messages API reply ----------------------------------------------------
    def reply(self, msg: Mapping[str, Any]) -> Reply:
        text = str(msg.get("content") or "") or None
        tools: list[ToolCall] = []
        unread: list[str] = []
        for c in msg.get("tool_calls") or []:
            fn = c.get("function", {})
            args = json.loads(fn.get("arguments") or "{}")
            name = str(fn.get("name", ""))
            if name == "bash":
                tools.append(ToolCall("Bash", {"command": args["command"], "description": "run"}))
                continue
            path = self._abs(str(args.get("file_path", "")))
            if name == "read":
                if Path(path).is_dir():
                    tools.append(ToolCall("Glob", {"pattern": "*", "path": path}))
                else:
                    self.read.add(path)
                    tools.append(ToolCall("Read", {"file_path": path}))
            elif name == "edit":
                if path not in self.read and Path(path).is_file():
                    unread.append(path)
                edit = {k: args[k] for k in ("old_string", "new_string")}
                tools.append(ToolCall("Edit", {"file_path": path, **edit}))
            elif name == "write":
                tools.append(ToolCall("Write", {"file_path": path, "content": args["content"]}))
            else:
                raise InfomarkError(f"the scripted agent used {name!r}, which Claude Code lacks")
        answer = Reply(text=text, tool_calls=tuple(tools)) if text or tools else Reply(text=".")
        if not unread:
            return answer
        self.read.update(unread)
        self._queued = answer
        reads = tuple(ToolCall("Read", {"file_path": p}) for p in dict.fromkeys(unread))
        return Reply(text="Reading the file before editing it.", tool_calls=reads)

    def _abs(self, path: str) -> str:
        p = Path(path)
        return str(p if p.is_absolute() else self.root / p)


def run_claude(
    binary: Path,
    task: Task,
    root: Path,
    env: Mapping[str, str],
    translator: Translator,
    record: RunRecord,
    max_steps: int,
) -> str:
    """One ``claude -p`` run of ``task`` in ``root``; how it ended."""
    with AnthropicStub([translator] * (2 * max_steps + 20)) as stub:
        args = [
            str(binary),
            "-p",
            task.spec.prompt,
            "--permission-mode",
            "acceptEdits",
            "--output-format",
            "json",
            "--max-turns",
            str(max_steps),
            "--allowedTools",
            *allowed_commands(task),
        ]
        proc = _run(args, root, {**env, "ANTHROPIC_BASE_URL": stub.url})
        errors = stub.errors
    result = _result(proc.stdout)
    subtype = str(result.get("subtype", ""))
    if errors:
        record.error = ("model script: " + errors[0])[:500]
        return "error"
    if proc.returncode == 0 and subtype == "success":
        return "finished"
    if "max_turns" in subtype:
        return "max_steps"
    record.error = f"claude exited {proc.returncode} ({subtype or 'no result'}): " + (
        proc.stderr.strip()[-300:] or proc.stdout.strip()[-300:]
    )
    return "error"


def _result(stdout: str) -> dict[str, Any]:
    for candidate in (stdout, *reversed(stdout.splitlines())):
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            return parsed
    return {}


def _run(args: list[str], cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    with subprocess.Popen(
        args,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,  # the whole group (hooks, tools) goes on timeout
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            _kill(proc.pid)
            stdout, stderr = proc.communicate()
            stderr += f"\n(killed after {_TIMEOUT:.0f} s)"
        finally:
            if proc.poll() is None:
                _kill(proc.pid)
    return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _turns(messages: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The conversation as turns: consecutive messages of one role joined (Claude Code sends
    a tool result and the hook context about it as separate user messages)."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for m in messages:
        role = "assistant" if m.get("role") == "assistant" else "user"
        if out and out[-1][0] == role:
            out[-1][1].extend(_blocks(m.get("content")))
        else:
            out.append((role, _blocks(m.get("content"))))
    return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)
