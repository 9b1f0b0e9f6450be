"""Turn metrics and the working set: plain counters updated from what actually happened.

A *turn* is one user prompt; a *call* is one executed tool call. Counters:
``consecutive_failures`` (failed calls in a row), ``reads_without_write``
(read/search/web calls since the last write, run, claim or stamp),
``calls_since_artifact``/``turns_since_artifact`` (since the last write or new
Exact claim), ``calls_since_progress``/``turns_since_progress`` (since the last
artifact, stamp or passing run), ``subagent_calls`` (this prompt) and host usage.
The working set lists files read, edited and written, recent commands, recent
evidence and recent failures, each bounded. Standard library only.
"""

from __future__ import annotations

import posixpath

from infomark.gates.policies.context import ToolResult
from infomark.gates.policies.paths import call_paths, rel_path
from infomark.kernel.infomark import InfoMark
from infomark.kernel.records import dataclass, field
from infomark.kernel.tools import ToolClass
from infomark.ledger.report import IngestReport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ToolFacts",
    "first_line",
    "new_metrics",
    "new_working_set",
    "observe_host",
    "observe_ingest",
    "observe_prompt",
    "observe_tool",
    "tool_facts",
]

_FILES_CAP = 20
_COMMANDS_CAP = 5
_EVIDENCE_CAP = 8
_FAILURES_CAP = 5
_READ = (ToolClass.READ, ToolClass.SEARCH, ToolClass.WEB)
_WRITE = (ToolClass.MODIFY, ToolClass.DESTRUCTIVE)
_READERS = frozenset({"cat", "head", "tail", "less", "more", "bat", "nl"})
_SUBAGENT = frozenset({"task", "agent", "subagent", "dispatchagent", "spawnagent"})


def _norm(tool: str) -> str:
    base = tool.rsplit("__", 1)[-1] if tool.startswith("mcp__") else tool
    return "".join(ch for ch in base.lower() if ch.isalnum())


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reader(command: str | None) -> bool:
    """A shell command that only prints files (``cat voice.md``): its paths count as read."""
    if not command or not command.strip() or any(ch in command for ch in ">|;&`$"):
        return False
    return posixpath.basename(command.split(maxsplit=1)[0]) in _READERS


def first_line(result: ToolResult, limit: int = 120) -> str:
    """The first informative line of a failure (skipping a bare ``Exit code N``)."""
    out = result.outcome.output
    found = None
    for chunk in (result.outcome.error or "", out):
        if isinstance(chunk, bytes | str):
            text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
            found = next(filter(None, (_informative(ln, limit) for ln in text.splitlines())), None)
        else:  # a result streamed from the hook's stdin: read line by line, never whole
            found = chunk.first_line(
                lambda ln: _informative(ln, limit), lambda start: _long_line(start, limit)
            )
        if found is not None:
            return found
    if result.outcome.exit_code is not None:
        return f"exit code {result.outcome.exit_code}"
    return "(no output)"


def _informative(line: str, limit: int) -> str | None:
    s = line.strip()
    if s and not (s.startswith("Exit code ") and s[10:].strip().lstrip("-").isdigit()):
        return _short(s, limit)
    return None


def _long_line(start: str, limit: int) -> str | None:
    """``_informative`` of a line that goes on past ``start``, when ``start`` decides it: its
    words already run past ``limit`` (what follows only lengthens the cut), and it cannot
    be a bare ``Exit code N``. None: undecided."""
    text = " ".join(start.split())
    if len(text) <= limit or start.lstrip().startswith("Exit code"):
        return None
    return text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """What one executed call means for the metrics, the working set and the triggers."""

    tool: str
    tool_class: str
    failed: bool
    command: str
    ref: str | None
    outcome: str
    read: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    subagent: bool = False

    @property
    def artifact(self) -> bool:
        return self.tool_class in _WRITE and not self.failed

    @property
    def progress(self) -> bool:
        return self.artifact or (self.tool_class == ToolClass.EXECUTE and self.outcome == "PASS")


def tool_facts(result: ToolResult, root: str) -> ToolFacts:
    call, ev = result.call, result.evidence
    tclass = result.tool_class or ToolClass.UNKNOWN
    failed = result.failed
    command = ev.command if ev is not None else (call.command or call.tool)
    outcome = ev.outcome.value if ev is not None else ("FAIL" if failed else "OBSERVED")
    reads = tclass == ToolClass.READ or (tclass == ToolClass.EXECUTE and _reader(call.command))
    paths = call_paths(call.input, call.command if reads else None)
    rel = [rel_path(p, root) for p in paths]
    read: list[str] = []
    edited: list[str] = []
    written: list[str] = []
    if not failed and reads:
        read = rel
    elif not failed and tclass == ToolClass.MODIFY:
        name = _norm(call.tool)
        creates = "write" in name or "create" in name or call.input.get("command") == "create"
        (written if creates else edited).extend(rel)
    return ToolFacts(
        tool=call.tool,
        tool_class=tclass,
        failed=failed,
        command=command,
        ref=ev.ref if ev is not None else None,
        outcome=outcome,
        read=read,
        edited=edited,
        written=written,
        subagent=tclass == "subagent" or _norm(call.tool) in _SUBAGENT,
    )


def new_metrics() -> dict[str, Any]:
    return {
        "prompts": 0,
        "tool_calls": 0,
        "lookups": 0,
        "failures": 0,
        "consecutive_failures": 0,
        "reads_without_write": 0,
        "calls_since_artifact": 0,
        "turns_since_artifact": 0,
        "calls_since_progress": 0,
        "turns_since_progress": 0,
        "subagent_calls": 0,
        "subagent_calls_total": 0,
        "compactions": 0,
        "context_pct": None,
        "last_failure": None,
    }


def new_working_set() -> dict[str, Any]:
    return {
        "files_read": [],
        "files_edited": [],
        "files_written": [],
        "commands": [],
        "evidence": [],
        "failures": [],
    }


def _push(items: list[Any], value: Any, cap: int) -> None:
    if value in items:
        items.remove(value)
    items.append(value)
    if len(items) > cap:
        del items[: len(items) - cap]


def _artifact(m: dict[str, Any]) -> None:
    m["calls_since_artifact"] = 0
    m["turns_since_artifact"] = 0
    _progress(m)


def _progress(m: dict[str, Any]) -> None:
    m["calls_since_progress"] = 0
    m["turns_since_progress"] = 0


def observe_prompt(m: dict[str, Any]) -> None:
    """A new user prompt: the turn counters advance, the per-prompt ones reset."""
    if m["prompts"] > 0:
        m["turns_since_artifact"] += 1
        m["turns_since_progress"] += 1
    m["prompts"] += 1
    m["subagent_calls"] = 0


def observe_tool(
    m: dict[str, Any], ws: dict[str, Any], facts: ToolFacts, result: ToolResult
) -> None:
    """Fold one executed call into the metrics and the working set."""
    m["tool_calls"] += 1
    m["calls_since_artifact"] += 1
    m["calls_since_progress"] += 1
    if facts.failed:
        m["failures"] += 1
        m["consecutive_failures"] += 1
        failure = {
            "tool": facts.tool,
            "command": _short(facts.command, 120),
            "first_line": first_line(result),
            "ref": facts.ref,
        }
        m["last_failure"] = failure
        same = [
            f
            for f in ws["failures"]
            if (f["command"], f["first_line"]) == (failure["command"], failure["first_line"])
        ]
        for f in same:  # the same failure again: keep only its latest ref
            ws["failures"].remove(f)
        _push(ws["failures"], failure, _FAILURES_CAP)
    else:
        m["consecutive_failures"] = 0
    if facts.tool_class in _READ or facts.read:
        m["lookups"] = int(m.get("lookups", 0)) + 1  # REUSE.BEFORE: looked at what exists
    if facts.tool_class in _READ:
        m["reads_without_write"] += 1
    elif facts.tool_class in (*_WRITE, ToolClass.EXECUTE):
        m["reads_without_write"] = 0
    if facts.artifact:
        _artifact(m)
    elif facts.progress:
        _progress(m)
    if facts.subagent:
        m["subagent_calls"] += 1
        m["subagent_calls_total"] += 1
    for key, paths in (
        ("files_read", facts.read),
        ("files_edited", facts.edited),
        ("files_written", facts.written),
    ):
        for p in paths:
            _push(ws[key], p, _FILES_CAP)
    if facts.tool_class == ToolClass.EXECUTE:
        _push(
            ws["commands"],
            {"command": _short(facts.command, 120), "outcome": facts.outcome, "ref": facts.ref},
            _COMMANDS_CAP,
        )
    if facts.ref is not None:
        what = (
            facts.command
            if facts.tool_class == ToolClass.EXECUTE
            else ", ".join(facts.read + facts.edited + facts.written) or facts.tool
        )
        _push(
            ws["evidence"],
            {
                "ref": facts.ref,
                "tool": facts.tool,
                "outcome": facts.outcome,
                "what": _short(what, 80),
            },
            _EVIDENCE_CAP,
        )


def observe_ingest(m: dict[str, Any], report: IngestReport) -> None:
    """A parsed model response: a claim or stamp ends a read streak; a new Exact is an artifact."""
    if report.ledger_updated or report.stamps_applied:
        m["reads_without_write"] = 0
    if any(s.get("status") == InfoMark.EXACT.label for s in report.stamps_applied):
        _artifact(m)
    elif report.stamps_applied:
        _progress(m)


def observe_host(
    m: dict[str, Any], *, tokens_used: int | None, context_window: int | None, compacted: bool
) -> None:
    """Host-reported usage (as a whole percentage of the window) and compactions."""
    if tokens_used is not None and context_window:
        m["context_pct"] = max(0, min(100, round(100 * tokens_used / context_window)))
    if compacted:
        m["compactions"] += 1
