"""``infomark hook <host>``: parsed by hand so click and rich never load on this path.

The hook always answers within :data:`DEADLINE_S`: store waits are bounded to
:data:`STORE_WAIT_S`, and a watchdog thread answers for the hook (failing closed in the
enforcing profiles) if anything else hangs. Claude Code's own timeout would otherwise
let the call through.
"""

from __future__ import annotations

import _thread
import os
import sys
import time

from infomark.kernel import jsonc
from infomark.tools.hooks.answer import HookAnswer
from infomark.tools.hooks.deadline import DEADLINE_S, deadline

__all__ = ["DEADLINE_S", "OTEL_EXPORT_S", "STORE_WAIT_S", "STREAM_AT", "run_hook"]

STORE_WAIT_S = 2.5  # every lock wait of the journal, in total
OTEL_EXPORT_S = 1.0  # at most, for the spans of one call (INFOMARK_OTEL=1), after the answer
_USAGE = (
    "usage: infomark hook claude-code [--home DIR] [--root DIR] [--url SERVICE_URL] < payload.json"
    "\n       infomark hook gemini|codex [--home DIR] [--root DIR] < payload.json"
    "\n       infomark hook sandbox-exec --home DIR --root DIR -- COMMAND  (sandboxed)"
)


def _emit(answer: HookAnswer) -> None:
    if answer.stdout is not None:
        sys.stdout.write(jsonc.dumps(answer.stdout, ensure_ascii=True))  # any str, always valid
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr.encode("utf-8", "backslashreplace").decode() + "\n")
        sys.stderr.flush()


class _Watchdog:
    """Answers in the hook's place when the deadline passes; exactly one answer goes out."""

    def __init__(self, home: str | None, root: str | None) -> None:
        self.lock = _thread.allocate_lock()  # held by whoever writes the one answer
        self.event: str | None = None
        self.payload: object = None  # once parsed
        self.size: int | None = None  # bytes of the payload, once read
        self._home, self._root = home, root
        self.home = home or ".infomark"
        self.root = root or os.getcwd()
        self._cancelled = _thread.allocate_lock()  # released by cancel(): the answer is out
        self._cancelled.acquire()
        self.host: str | None = None  # another host's hook (tools/hosts): its answer shape

    def start(self) -> None:
        """Start the watchdog: a bare ``_thread`` (``threading`` costs ~4 M instructions)."""
        _thread.start_new_thread(self._watch, ())

    def cancel(self) -> None:
        self._cancelled.release()

    def _watch(self) -> None:
        started = time.monotonic()
        while not self._cancelled.acquire(timeout=DEADLINE_S):
            if time.monotonic() - started >= deadline():  # an attested run extends it
                self._expire()
                return

    def _expire(self) -> None:
        if not self.lock.acquire(blocking=False):
            return  # the real answer is being written
        from infomark.ledger.store.blobs import remove_partial
        from infomark.tools.hooks.claude_code import LAST_PROFILE
        from infomark.tools.hooks.failsafe import failure_answer

        removed = remove_partial()  # a blob half written when time ran out
        why = f"the hook did not finish within {deadline():g} s (a hung store or file system?)"
        if self.size is not None and self.size >= _LARGE:
            why = (
                f"the hook did not finish within {deadline():g} s: the result was "
                f"{self.size / 1e6:.0f} MB, too large to record in time (a slow or busy disk?)"
            )
        event, spec = self.event, None
        if self.host is not None:  # another host's hook: judged as its Claude Code event
            from infomark.tools.hosts.core import load_spec

            spec = load_spec(self.host)
            event = spec.events.get(event) if event else None
        answer = failure_answer(
            event, self.payload, LAST_PROFILE[0], why, home=self.home, root=self.root
        )
        if spec is not None:
            from infomark.tools.hosts.core import render

            answer = render(spec, self.event, answer)
        _emit(answer)  # first: the host's own timeout must not overtake the answer
        # A result's record is worth a longer wait (the host waits 30 s for it); a blocking
        # event keeps the hook's promise of an exit within 5 s.
        wait, bound = _JOURNAL_WAIT_S if event in _RESULTS else (0.05, 0.5)
        _thread.start_new_thread(_exit_after, (answer.exit_code, bound))
        _journal_timeout(self, answer, why, removed, wait)
        os._exit(answer.exit_code)


def _exit_after(code: int, seconds: float) -> None:
    """End the process after ``seconds`` whatever the journal is doing (a stalled disk
    can block a write, which no lock timeout bounds)."""
    never = _thread.allocate_lock()
    never.acquire()
    never.acquire(timeout=seconds)
    os._exit(code)


_LARGE = 1_000_000  # a payload this big is named as the likely cause of a timeout
STREAM_AT = 1 << 20  # a payload larger than this is streamed from stdin, in blocks this size
_RESULTS = ("PostToolUse", "PostToolUseFailure")
# After a result's timeout: the lock wait and the whole journaling step (the answer is out
# already; the host's hook timeout is 30 s, install.py)
_JOURNAL_WAIT_S = (2.0, 5.0)


def _journal_timeout(
    dog: _Watchdog, answer: HookAnswer, why: str, removed: list[str], wait: float
) -> None:
    """Journal the watchdog's answer as a ``hook_error``: the size of the payload, what the
    agent was told, the partial blobs removed. After the answer is out, bounded (lock waits
    ``wait``, the whole step by :func:`_exit_after`) and without an fsync (a slow disk is
    the likely cause); skipped, with a line on stderr, when the session cannot be named or
    the journal stays locked (the hook's own transaction may be what hangs)."""
    payload = dog.payload if isinstance(dog.payload, dict) else {}
    session = payload.get("session_id")
    if not isinstance(session, str) or not session or dog.event is None:
        return
    out = answer.stdout or {}
    told = (
        out.get("hookSpecificOutput", {}).get("additionalContext")
        or out.get("hookSpecificOutput", {}).get("permissionDecisionReason")
        or out.get("reason")
        or ""
    )
    from infomark.tools.hooks.failsafe import released

    unverified = released(dog.event, payload)
    record = {
        "event": dog.event,
        "error": why[:500],
        "failed_closed": dog.event not in _RESULTS
        and not unverified
        and (answer.stdout is not None or answer.exit_code == 2),
        "watchdog": True,
        "payload_bytes": dog.size,
        "told": str(told)[:1000],
        "partial_blobs_removed": len(removed),
    }
    if unverified:
        record["finished_unverified"] = True
    use = payload.get("tool_use_id")
    if isinstance(use, str):
        record["tool_use_id"] = use[:200]
    try:
        from infomark.ledger.keys import load_key
        from infomark.ledger.store.journal import bound_store_waits
        from infomark.ledger.store.select import open_journal
        from infomark.tools.hooks.where import hook_paths

        bound_store_waits(wait)
        home, _root = hook_paths(payload, dog._home, dog._root)
        journal = open_journal(home, load_key(home, create=False))
        journal.relax_next()
        with journal.write(session):
            journal.append(session, "hook_error", record)
    except Exception as exc:
        sys.stderr.write(f"infomark: the timeout could not be journaled: {exc}\n")


_HELP = f"""{_USAGE}

Claude Code's command hook: reads one hook payload (JSON) on stdin and answers on stdout
as Claude Code expects (PreToolUse allow/deny/ask, PostToolUse evidence tags, Stop
refusals, SessionStart/UserPromptSubmit context). Installed by `infomark install
claude-code`; it never waits longer than {DEADLINE_S:g} s and fails closed in the
enforcing profiles when it cannot decide.

Options:
  --home DIR         ledger home (default: $INFOMARK_HOME or <root>/.infomark)
  --root DIR         project root (default: the payload's cwd)
  --url SERVICE_URL  forward to a running `infomark serve`; judge locally if it is down
  -h, --help         show this message and exit (stdin is not read)

Environment:
  INFOMARK_OTEL=1    send this call's decision and evidence as OpenTelemetry spans after
                     the answer (OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT; docs/integrations.md)"""


def run_hook(args: list[str]) -> int:
    if args[:1] == ["sandbox-exec"]:  # a Gemini CLI shell command, wrapped by its BeforeTool
        from infomark.tools.hosts.gemini_sandbox import sandbox_exec

        return sandbox_exec(args[1:])
    if args[:1] in (["-h"], ["--help"]) or any(a in ("-h", "--help") for a in args[1:]):
        print(_HELP)
        return 0
    host = None
    if args and args[0] not in ("claude-code", "claude"):
        from infomark.tools.hosts import HOST_MODULES  # not on the Claude Code path

        host = args[0] if args[0] in HOST_MODULES else None
        if host is None:
            print(_USAGE, file=sys.stderr)
            return 2
    if not args:
        print(_USAGE, file=sys.stderr)
        return 2
    home: str | None = None
    root: str | None = None
    url: str | None = None
    rest = args[1:]
    while rest:
        flag = rest.pop(0)
        if flag in ("--home", "--root", "--url") and rest:
            value = rest.pop(0)
            if flag == "--home":
                home = value or "."  # what Path("") named
            elif flag == "--root":
                root = value or "."
            else:
                url = value
        else:
            print(f"infomark hook: ignoring unknown option {flag!r}", file=sys.stderr)
    from infomark.ledger.store.journal import bound_store_waits

    bound_store_waits(STORE_WAIT_S)
    # OpenTelemetry (off: one env lookup); a forwarded call is exported by the service
    otel = _otel_rows() if url is None and os.environ.get("INFOMARK_OTEL") else None
    dog = _Watchdog(home, root)
    dog.host = host
    dog.start()
    # only the forwarding hook sends the bytes on; the others judge locally (a large
    # payload streamed, its long tool_response strings never held)
    raw, payload, detail = _read_payload(dog, streamed=url is None and host is None)
    if url is None:
        raw = b""
    dog.payload = payload
    if host is not None:
        from infomark.tools.hosts.core import handle_host, load_spec

        if url is not None:
            sys.stderr.write(f"infomark hook {host}: --url is for claude-code; judging locally\n")
        spec = load_spec(host)
        answer = handle_host(
            spec, payload, home=home, root=root, event_hint=dog.event, detail=detail
        )
    elif url is not None:
        from infomark.tools.hooks.forward import forward

        answer = forward(url, raw, payload, home=home, root=root, detail=detail, event=dog.event)
    else:
        from infomark.tools.hooks.claude_code import handle

        answer = handle(payload, home=home, root=root, event_hint=dog.event, detail=detail)
    with dog.lock:
        dog.cancel()
        _emit(answer)
    if otel is not None:
        _otel_send(*otel)
    return answer.exit_code


def _read_payload(dog: _Watchdog, *, streamed: bool) -> tuple[bytes, object, str]:
    """Read and parse stdin: ``(its bytes, the payload, why it is unusable or "")``.

    ``streamed``: a payload over :data:`STREAM_AT` bytes is read as a stream
    (``tools/hooks/stdin_json.py``), and the bytes returned are its first block; a shorter
    read is the whole payload (a buffered read returns less only at the end).
    """
    stream = sys.stdin.buffer
    skimmed = None
    raw = stream.read(STREAM_AT) if streamed else stream.read()
    size, text = len(raw), ""
    if streamed and size == STREAM_AT:
        from infomark.tools.hooks.stdin_json import read_large

        size, text, skimmed = read_large(stream, raw)
    elif raw.strip():
        text = raw.decode("utf-8", "replace")
    from infomark.tools.hooks.failsafe import sniff_event

    dog.event = sniff_event(raw)  # the first STREAM_AT bytes: all it reads
    dog.size = size
    payload: object = None
    detail = ""
    try:
        if skimmed is not None and skimmed.error is not None:
            raise skimmed.error  # found while streaming: json's error, json's position
        payload = jsonc.loads(text) if text else None
        if payload is None:
            detail = "stdin was empty"
    except (ValueError, RecursionError) as exc:
        # a streamed payload's error: its position in the payload, not the skimmed text
        why = exc if skimmed is None else skimmed.error_of(exc)
        detail = f"stdin is not usable JSON: {type(why).__name__}: {str(why)[:200]}"
    if skimmed is not None:
        payload = skimmed.restore(payload)  # the spooled strings where they were
    return raw, payload, detail


def _otel_rows() -> tuple[list[object], float]:
    """Collect what this call commits, to send as spans once the answer is out."""
    import time

    from infomark.ledger.engine import ON_OPEN

    rows: list[object] = []
    ON_OPEN.append(lambda ledger: ledger.listeners.append(rows.extend))
    return rows, time.monotonic()


def _otel_send(rows: list[object], started: float) -> None:
    """The spans of this call, within what is left of the deadline (never changes the answer)."""
    import time

    if not rows:
        return
    budget = min(OTEL_EXPORT_S, DEADLINE_S - (time.monotonic() - started))
    try:
        if budget <= 0.05:
            raise TimeoutError(f"no time left within the hook's {DEADLINE_S:g} s")
        from infomark.tools.otel import export_rows

        export_rows(rows, timeout_s=budget)  # type: ignore[arg-type]
    except Exception as exc:
        sys.stderr.write(f"infomark: OpenTelemetry export skipped: {exc}\n")
        sys.stderr.flush()
