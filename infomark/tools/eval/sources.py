"""Recorded sessions as replay steps: scenario files, tool-call JSONL, Claude Code transcripts,
infomark journals.

* ``*.scenario.toml``: ``name``, ``description``, ``profile``, ``[config]`` (infomark.toml
  keys), ``[files]`` (the project before the session) and ``[[step]]`` tables, each one of
  ``prompt``, ``text``, ``tool`` (+ ``input``, ``output``, ``exit_code``, ``is_error``,
  ``session``), ``finish``, ``approve = true``, ``tamper_evidence = N``, ``sandbox = false``
  (the host reports the agent's commands are not in an OS sandbox; ``true``: they are again),
  ``change``; with the expected
  decision ``expect`` (allow / deny / ask; allow / refuse), ``code`` and, for a text,
  ``rejected = [reason codes]``. ``{ref:N}`` in a text is the evidence ref of step N.
* ``*.jsonl`` of tool calls: one step per line with the same keys (``decision`` is accepted for
  ``expect``, ``ref`` is the evidence ref the original session issued).
* Claude Code transcript JSONL: user prompts, assistant text, ``tool_use`` / ``tool_result``
  pairs; a result that says ``[infomark denied: CODE]`` recorded a deny, any other an allow.
* an infomark ledger home (its ``ledger.db``, or a PostgreSQL store): each session of the
  ``infomark run`` runtime, from its ``runner_message`` events, with its journaled decisions.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infomark.gates.config import Config
from infomark.kernel.errors import UserError
from infomark.tools.eval.replay import Step

__all__ = ["Source", "load_sources", "step_from_mapping"]

_STEP_KEYS = {
    "prompt",
    "text",
    "tool",
    "input",
    "output",
    "exit_code",
    "is_error",
    "session",
    "finish",
    "approve",
    "tamper_evidence",
    "expect",
    "decision",
    "code",
    "rejected",
    "ref",
    "authorize",
    "record_twice",
    "cwd",
    "background_id",
    "change",
    "sandbox",
}
_VERDICTS = {"allow", "deny", "ask", "refuse"}


@dataclass(slots=True)
class Source:
    name: str
    path: str
    steps: list[Step]
    config: Config | None = None
    profile: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    description: str = ""


def _tool_step(
    d: Mapping[str, Any], where: str, expect: str | None, rejected: list[str] | None
) -> Step:
    """A ``tool`` step: the call, its recorded result and what was decided of it."""
    inp = d.get("input", {})
    if not isinstance(d["tool"], str) or not isinstance(inp, Mapping):
        raise UserError(f"{where}: tool must be a name and input a table")
    out = d.get("output")
    code = d.get("exit_code")
    if out is not None and not isinstance(out, str):
        raise UserError(f"{where}: output must be text")
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        raise UserError(f"{where}: exit_code must be an integer")
    return Step(
        "call",
        where,
        tool=d["tool"],
        input=dict(inp),
        output=out,
        exit_code=code,
        is_error=bool(d.get("is_error", False)),
        recorded_ref=d.get("ref"),
        session=d.get("session"),
        expect=expect,
        code=d.get("code"),
        rejected=tuple(rejected) if rejected is not None else None,
        authorize=bool(d.get("authorize", True)),
        record_twice=bool(d.get("record_twice", False)),
        cwd=d.get("cwd"),
        background_id=d.get("background_id"),
    )


def step_from_mapping(d: Mapping[str, Any], where: str) -> Step:
    """One step from a scenario table or a JSONL object; a clear error naming ``where``."""
    if not isinstance(d, Mapping):
        raise UserError(f"{where}: a step must be a table/object")
    unknown = sorted(set(d) - _STEP_KEYS)
    if unknown:
        raise UserError(f"{where}: unknown step key(s) {', '.join(unknown)}")
    kinds = [
        k
        for k in (
            "prompt",
            "text",
            "tool",
            "finish",
            "approve",
            "tamper_evidence",
            "change",
            "sandbox",
        )
        if k in d
    ]
    if len(kinds) != 1:
        raise UserError(
            f"{where}: a step has exactly one of prompt, text, tool, finish, approve, "
            f"tamper_evidence, change, sandbox (found {', '.join(kinds) or 'none'})"
        )
    expect = d.get("expect", d.get("decision"))
    if expect is not None and expect not in _VERDICTS:
        raise UserError(f"{where}: expect must be allow, deny, ask or refuse, not {expect!r}")
    rejected = d.get("rejected")
    if rejected is not None and (
        not isinstance(rejected, list) or not all(isinstance(r, str) for r in rejected)
    ):
        raise UserError(f"{where}: rejected must be a list of reason codes")
    kind = kinds[0]
    if kind == "tool":
        return _tool_step(d, where, expect, rejected)
    if kind == "approve":
        return Step("approve", where)
    if kind == "change":
        ch = d["change"]
        if not (
            isinstance(ch, Mapping)
            and isinstance(ch.get("path"), str)
            and isinstance(ch.get("text"), str)
        ):
            raise UserError(f'{where}: change is a table {{path = "…", text = "…"}}')
        return Step("change", where, path=ch["path"], text=ch["text"])
    if kind == "sandbox":
        if not isinstance(d["sandbox"], bool):
            raise UserError(f"{where}: sandbox is true or false (are the agent's commands in one)")
        return Step("sandbox", where, sandboxed=d["sandbox"])
    if kind == "tamper_evidence":
        n = d["tamper_evidence"]
        if not isinstance(n, int):
            raise UserError(f"{where}: tamper_evidence is the number of a step")
        return Step("tamper_evidence", where, target=n)
    text = d[kind]
    if not isinstance(text, str):
        raise UserError(f"{where}: {kind} must be text")
    step_kind = {"prompt": "prompt", "text": "text", "finish": "finish"}[kind]
    return Step(
        step_kind,
        where,
        text=text,
        expect=expect,
        code=d.get("code"),
        rejected=tuple(rejected) if rejected is not None else None,
    )


def _scenario(path: Path) -> Source:
    try:
        doc = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot be read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from exc
    extra = sorted(set(doc) - {"name", "description", "profile", "config", "files", "step"})
    if extra:
        raise UserError(f"{path}: unknown key(s) {', '.join(extra)}")
    steps_doc = doc.get("step")
    if not isinstance(steps_doc, list) or not steps_doc:
        raise UserError(f"{path}: a scenario needs [[step]] tables")
    config = None
    if "config" in doc:
        from infomark.gates.config_model import validate_config

        config = Config.from_dict(validate_config(dict(doc["config"]), source=f"{path} [config]"))
    files = doc.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise UserError(f"{path}: [files] maps paths to their text")
    name = str(doc.get("name") or path.name.removesuffix(".scenario.toml"))
    steps = [step_from_mapping(s, f"{path}: step {i}") for i, s in enumerate(steps_doc, 1)]
    return Source(
        name, str(path), steps, config, doc.get("profile"), files, str(doc.get("description", ""))
    )


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot be read ({exc})") from exc
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise UserError(f"{path}:{n}: not JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise UserError(f"{path}:{n}: each line must be a JSON object")
        yield n, obj


def _strip_tag(text: str) -> tuple[str, str | None]:
    """The tool's own output and the evidence ref infomark had appended, if any."""
    i = text.find("[infomark evidence_ref=")
    if i < 0:
        return text, None
    ref = text[i + len("[infomark evidence_ref=") :].split()[0].rstrip("]")
    return text[:i].rstrip("\n"), ref


def _recorded(result: str) -> tuple[str, str | None]:
    for verb, verdict in (("[infomark denied: ", "deny"), ("[infomark held for approval: ", "ask")):
        i = result.find(verb)
        if i >= 0:
            return verdict, result[i + len(verb) :].split("]")[0]
    return "allow", None


def _claude_code(path: Path) -> Source:
    steps: list[Step] = []
    pending: dict[str, int] = {}
    last_text: tuple[str, str] | None = None  # (text, where)
    for n, obj in _lines(path):
        raw_msg = obj.get("message")
        msg: dict[str, Any] = raw_msg if isinstance(raw_msg, dict) else {}
        content = msg.get("content")
        where = f"{path}:{n}"
        if obj.get("type") == "user":
            if isinstance(content, str):
                if last_text is not None:
                    steps.append(Step("finish", last_text[1], text=last_text[0]))
                    last_text = None
                steps.append(Step("prompt", where, text=content))
                continue
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                idx = pending.pop(str(block.get("tool_use_id")), None)
                if idx is None:
                    continue
                raw = block.get("content")
                text = (
                    raw
                    if isinstance(raw, str)
                    else "\n".join(str(c.get("text", "")) for c in raw or [] if isinstance(c, dict))
                )
                verdict, code = _recorded(text)
                out, ref = _strip_tag(text)
                err = bool(block.get("is_error"))
                old = steps[idx]
                steps[idx] = Step(
                    "call",
                    old.where,
                    tool=old.tool,
                    input=old.input,
                    output=None if verdict != "allow" else out,
                    exit_code=(1 if err else 0) if old.tool == "Bash" else None,
                    is_error=err,
                    recorded_ref=ref,
                    expect=verdict,
                    code=code,
                )
        elif obj.get("type") == "assistant":
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and str(block.get("text", "")).strip():
                    steps.append(Step("text", where, text=str(block["text"])))
                    last_text = (str(block["text"]), where)
                elif block.get("type") == "tool_use":
                    last_text = None
                    pending[str(block.get("id"))] = len(steps)
                    raw_inp = block.get("input")
                    inp: dict[str, Any] = raw_inp if isinstance(raw_inp, dict) else {}
                    steps.append(Step("call", where, tool=str(block.get("name")), input=inp))
    if last_text is not None:
        steps.append(Step("finish", last_text[1], text=last_text[0]))
    return Source(path.stem, str(path), steps)


def _jsonl(path: Path) -> Source:
    lines = list(_lines(path))
    if (
        lines
        and lines[0][1].get("type") in ("user", "assistant", "summary", "system")
        and any("message" in o for _, o in lines)
    ):
        return _claude_code(path)
    return Source(path.stem, str(path), [step_from_mapping(o, f"{path}:{n}") for n, o in lines])


def _is_home(path: Path) -> bool:
    """A ledger home: its SQLite ``ledger.db``, or a home whose store is PostgreSQL
    (``<home>/store`` from ``infomark init --store``, or ``$INFOMARK_STORE`` and its key)."""
    import os

    from infomark.ledger.store.select import STORE_ENV

    if (path / "ledger.db").exists() or (path / "store").exists():
        return True
    return bool(os.environ.get(STORE_ENV)) and (path / "key").exists()


def _journal(home: Path, only: str | None) -> list[Source]:
    from infomark.ledger.keys import load_key
    from infomark.ledger.store.select import open_journal

    journal = open_journal(home, load_key(home, create=False))  # SQLite or PostgreSQL
    try:
        sessions = [only] if only else journal.sessions()
        out = []
        for s in sessions:
            events = list(journal.events(s))
            msgs = [e.payload["message"] for e in events if e.type == "runner_message"]
            if not msgs:
                continue  # only runner sessions keep every text and call input
            decisions = {
                e.payload.get("tool_call_id"): e.payload for e in events if e.type == "decision"
            }
            finishes = [e.payload for e in events if e.type == "finish_decision"]
            out.append(
                Source(s, f"{home} session {s}", _runner_steps(s, home, msgs, decisions, finishes))
            )
        return out
    finally:
        journal.close()


def _runner_steps(
    session: str,
    home: Path,
    msgs: list[dict[str, Any]],
    decisions: dict[Any, Any],
    finishes: list[Any],
) -> list[Step]:
    steps: list[Step] = []
    calls: dict[str, int] = {}
    fin = iter(finishes)
    for i, m in enumerate(msgs, 1):
        where = f"{home} {session} message {i}"
        role, content = m.get("role"), str(m.get("content") or "")
        if role == "user" and not content.startswith("[infomark"):
            steps.append(Step("prompt", where, text=content))
        elif role == "assistant":
            tcs = m.get("tool_calls") or []
            if content.strip() and tcs:
                steps.append(Step("text", where, text=content))
            for tc in tcs:
                fn = tc.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                d = decisions.get(tc.get("id"), {})
                calls[str(tc.get("id"))] = len(steps)
                steps.append(
                    Step(
                        "call",
                        where,
                        tool=str(fn.get("name")),
                        input=args if isinstance(args, dict) else {},
                        expect=d.get("decision"),
                        code=d.get("code"),
                    )
                )
            if not tcs:
                f = next(fin, None)
                steps.append(
                    Step(
                        "finish",
                        where,
                        text=content,
                        expect=None if f is None else ("allow" if f.get("allow") else "refuse"),
                        code=None if f is None else f.get("code"),
                    )
                )
        elif role == "tool":
            idx = calls.pop(str(m.get("tool_call_id")), None)
            if idx is None:
                continue
            out, ref = _strip_tag(content)
            old = steps[idx]
            ran = old.expect in (None, "allow")
            steps[idx] = Step(
                "call",
                old.where,
                tool=old.tool,
                input=old.input,
                output=out if ran else None,
                exit_code=_exit(content, old.tool),
                recorded_ref=ref,
                expect=old.expect,
                code=old.code,
            )
    return steps


def _exit(text: str, tool: str) -> int | None:
    if tool != "bash":
        return None
    return 0 if "outcome=PASS" in text else 1 if "outcome=FAIL" in text else None


def load_sources(paths: list[Path], *, session: str | None = None) -> list[Source]:
    """Every source under ``paths`` (directories: their scenario files, or a ledger home)."""
    out: list[Source] = []
    for p in paths:
        if p.is_dir() and _is_home(p):
            out += _journal(p, session)
        elif p.is_dir():
            found = sorted(p.rglob("*.scenario.toml"))
            if not found:
                raise UserError(f"{p}: no *.scenario.toml files and no ledger.db")
            out += [_scenario(f) for f in found]
        elif p.name.endswith(".scenario.toml"):
            out.append(_scenario(p))
        elif p.suffix == ".jsonl":
            out.append(_jsonl(p))
        elif not p.exists():
            raise UserError(f"{p}: no such file or directory")
        else:
            raise UserError(
                f"{p}: not a replay source (use *.scenario.toml, *.jsonl or a ledger home)"
            )
    return out
