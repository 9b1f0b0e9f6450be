"""Core benchmarks: every baseline interleaved with the measured command (A B A B …).

Rows carry the medians of both sides and the median of the per-pair ratios. Session sizes
10², 10³, 10⁴, 10⁵ events are grown quickly by direct appends (many events per
transaction, snapshots as in real use). ``QUICK`` (``python -m bench --quick``) runs fewer
pairs and stops at 10⁴ events.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench._timing import fmt, median_seconds, paired, run_measured

ROWS: list[tuple[str, str, str, str]] = []  # (bench, ours, baseline, ratio)
QUICK = False
_TMP = tempfile.TemporaryDirectory(prefix="infomark-bench-")
TMP = Path(_TMP.name)


def n(full: int, quick: int) -> int:
    return quick if QUICK else full


def sizes() -> list[int]:
    return [100, 1_000, 10_000] if QUICK else [100, 1_000, 10_000, 100_000]


def add(name: str, ours: str, base: str = "-", ratio: str = "-") -> None:
    ROWS.append((name, ours, base, ratio))
    print(f"{name:<58} {ours:>14} {base:>14}  {ratio}", flush=True)


def timed_row(name: str, ours: float, base: float | None, ratio: float | None, what: str) -> None:
    add(name, fmt(ours), fmt(base) if base else "-", f"{ratio:.2f}× {what}" if ratio else "-")


def row(name: str, ours: float, base: float | None = None, base_name: str = "") -> None:
    """A row from separately measured medians (bench/integrations.py)."""
    timed_row(name, ours, base, ours / base if base else None, base_name)


# -- sessions of a given size ------------------------------------------------------------------
_KEY_HEX = "ab" * 32


def grow(events: int) -> Path:
    """A home whose session ``bench`` holds ``events`` events (a realistic mix), cached."""
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.ledger.engine import Ledger
    from infomark.ledger.evidence import EvidenceClass, build_record, ref_for
    from infomark.ledger.keys import Key

    home = TMP / f"home-{events}"
    if home.exists():
        return home
    key = Key.from_bytes(bytes.fromhex(_KEY_HEX))
    led = Ledger(home, "bench", key=key, root=TMP)
    outputs = [f"{i} passed in 0.{i}s\n".encode() * 8 for i in range(50)]
    digests = [led.blobs.put(o) for o in outputs]
    done = 0
    while done < events:
        with led.transaction():
            for _ in range(min(5_000, events - done)):
                done += 1
                kind = done % 3
                if kind == 0:
                    i = done % 50
                    call = ToolCall("Bash", {"command": f"pytest -q tests/test_{i}.py"})
                    record = build_record(
                        session="bench",
                        seq=done,
                        call=call,
                        outcome=ToolOutcome(outputs[i], 0),
                        evidence_class=EvidenceClass.EXECUTION,
                        key_id=key.key_id,
                        tool_class="execute",
                        output=(digests[i], len(outputs[i])),
                    )
                    ref, mac = ref_for(key, record)
                    led.emit("evidence_recorded", {"ref": ref, "record": record, "mac": mac})
                    led.journal.index_evidence(ref, "bench", done, record, mac)
                elif kind == 1:
                    led.emit(
                        "decision",
                        {"decision": "allow", "tool": "Read", "code": "allowed", "i": done},
                    )
                else:
                    led.emit(
                        "message_ingested",
                        {"digest": f"{done:032x}", "size": 100, "source": "assistant"},
                    )
    led.close()
    return home


def _hook_env(home: Path) -> dict[str, str]:
    return {**os.environ, "INFOMARK_HOME": str(home), "INFOMARK_KEY": _KEY_HEX}


def _pretool(cwd: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "bench",
            "transcript_path": "",
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "x"},
            "tool_use_id": "t",
        }
    ).encode()


def _installed_hook() -> list[str]:
    """What ``infomark install claude-code`` installs: its launcher (``python -I -S``)."""
    from infomark.tools.launcher import render, write_launcher

    launcher = TMP / ".claude" / "infomark-hook"
    write_launcher(launcher, render())
    return [str(launcher), "hook", "claude-code"]


HOOK = _installed_hook()
# The console script, as installed before the launcher (Python with site and .pth files).
CONSOLE = [str(Path(sys.executable).with_name("infomark")), "hook", "claude-code"]
_COMPILED: list[bool] = []


def warm_bytecode() -> None:
    """Current ``.pyc`` files for infomark, as an installed package has them.

    With ``PYTHONDONTWRITEBYTECODE`` set (as on the project's machine) an edited module would
    otherwise be compiled from source by every hook process the bench starts.
    """
    if not _COMPILED:
        import compileall

        package = Path(__file__).resolve().parents[1] / "infomark"
        compileall.compile_dir(package, quiet=1)
        _COMPILED.append(True)


BARE = [sys.executable, "-I", "-S", "-c", "pass"]


def _hook_at(events: int) -> Callable[[], tuple[float, int]]:
    warm_bytecode()
    home = grow(events)
    env = _hook_env(home)
    payload = _pretool(TMP)
    return lambda: run_measured(HOOK, stdin=payload, env=env, cwd=str(TMP))


def _wall(fn: Callable[[], tuple[float, int]]) -> float:
    return fn()[0]


def bench_hook() -> None:
    """PreToolUse cold process at each session size, vs a bare interpreter; 10⁵ vs 10²."""
    pairs = n(12, 6)
    bare = lambda: run_measured(BARE)  # noqa: E731
    for size in sizes():
        hook = _hook_at(size)
        p = paired(hook, bare, pairs=pairs, measure=_wall)
        timed_row(f"PreToolUse cold process, {size:,} events", p.ours, p.base, p.ratio,
                  "bare `python -I -S -c pass`")  # fmt: skip
    home = grow(100)
    env, payload = _hook_env(home), _pretool(TMP)
    console = lambda: run_measured(CONSOLE, stdin=payload, env=env, cwd=str(TMP))  # noqa: E731
    c = paired(_hook_at(100), console, pairs=n(40, 12), measure=_wall)  # a ~5 % difference
    timed_row("PreToolUse cold process, 100 events: launcher vs console script", c.ours, c.base,
              c.ratio, "the console script (`infomark hook claude-code`, with site)")  # fmt: skip
    big, small = sizes()[-1], 100
    hb, hs = _hook_at(big), _hook_at(small)
    t = paired(hb, hs, pairs=pairs, measure=_wall)
    timed_row(f"PreToolUse at {big:,} vs at {small} events (time)", t.ours, t.base, t.ratio,
              f"at {small} events")  # fmt: skip
    mem_big = sorted(hb()[1] for _ in range(5))[2]
    mem_small = sorted(hs()[1] for _ in range(5))[2]
    add(f"PreToolUse at {big:,} vs at {small} events (peak RSS)", f"{mem_big / 1024:.1f} MiB",
        f"{mem_small / 1024:.1f} MiB", f"{mem_big / mem_small:.2f}× at {small} events")  # fmt: skip


def bench_hook_events() -> None:
    """PreToolUse after a new ledger block or stamp (the parser loads), PostToolUse, vs bare."""
    warm_bytecode()
    bare = lambda: run_measured(BARE)  # noqa: E731
    d = TMP / "hook-events"
    d.mkdir()
    env = {**os.environ, "INFOMARK_HOME": str(d / "home")}
    transcript = d / "transcript.jsonl"
    transcript.write_text("")
    counter = iter(range(10**9))

    def ledger_text(i: int) -> str:
        return (
            f'claim_ledger:\n  claims:\n    - id: C{i}\n      text: "claim {i}"\n'
            f'      status: Hypothetical\n      falsifier: "f"\n      oracle: "make t"\n'
            f"  premises_for_plan: [C{i}]\n"
        )

    def stamp_text(i: int) -> str:
        return f"Read it.\n\ninference_stamp: claim_id=C{i} evidence_ref=ev_{i:024x}\n"

    def after(text_of: Callable[[int], str]) -> Callable[[], tuple[float, int]]:
        def run() -> tuple[float, int]:
            i = next(counter)
            content = [{"type": "text", "text": text_of(i)}, {"type": "tool_use", "id": f"t{i}"}]
            line = json.dumps({"type": "assistant", "message": {"content": content}})
            with transcript.open("a") as f:
                f.write(line + "\n")
            payload = json.loads(_pretool(d))
            payload.update(transcript_path=str(transcript), tool_use_id=f"t{i}")
            return run_measured(HOOK, stdin=json.dumps(payload).encode(), env=env, cwd=str(d))

        return run

    # one Read decided and recorded first: the session holds evidence, as in real use (a
    # session without any also digests its test files on every call until it has some)
    warm = json.loads(_pretool(d))
    warm.update(tool_use_id="warm")
    run_measured(HOOK, stdin=json.dumps(warm).encode(), env=env, cwd=str(d))
    warm.update(hook_event_name="PostToolUse", tool_response={"type": "text", "text": "x"})
    run_measured(HOOK, stdin=json.dumps(warm).encode(), env=env, cwd=str(d))
    for what, text_of in (("ledger block", ledger_text), ("stamp", stamp_text)):
        p = paired(after(text_of), bare, pairs=n(12, 6), measure=_wall)
        timed_row(f"PreToolUse cold process after a new {what}", p.ours, p.base, p.ratio,
                  "bare `python -I -S -c pass`")  # fmt: skip

    def post() -> tuple[float, int]:  # the result of an authorized call (its PreToolUse untimed)
        call = json.loads(_pretool(d))
        call.update(tool_use_id=f"p{next(counter)}")
        run_measured(HOOK, stdin=json.dumps(call).encode(), env=env, cwd=str(d))
        result = {"type": "text", "text": "x" * 400}
        call.update(hook_event_name="PostToolUse", tool_response=result)
        return run_measured(HOOK, stdin=json.dumps(call).encode(), env=env, cwd=str(d))

    p = paired(post, bare, pairs=n(12, 6), measure=_wall)
    timed_row("PostToolUse cold process (Read result)", p.ours, p.base, p.ratio,
              "bare `python -I -S -c pass`")  # fmt: skip


def _paired(led: Any, calls: list[Any]) -> Iterator[str]:
    """Journal an allow decision for each call (what authorize() writes), up front and
    untimed; yields their call ids in order (record() refuses an unpaired result)."""
    from infomark.ledger.engine import call_digest

    ids = []
    with led.transaction():
        for i, call in enumerate(calls):
            cid = f"bench_{led.state.seq}_{i}"
            led.emit("decision", {"decision": "allow", "tool": call.tool, "call_id": cid,
                                  "input_digest": call_digest(call)})  # fmt: skip
            ids.append(cid)
    return iter(ids)


def bench_record() -> None:
    """record() with a distinct ~400-byte output each call, durable, vs raw sqlite3 + blob."""
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.ledger.engine import Ledger

    d = TMP / "record"
    led = Ledger(d / "home", "bench", root=d)
    counter = iter(range(10**9))
    pairs = n(150, 40)
    ids = _paired(led, [ToolCall("bash", {"command": f"pytest -q {i}"}) for i in range(pairs + 2)])

    def ours() -> None:
        i = next(counter)
        led.record(
            ToolCall("bash", {"command": f"pytest -q {i}"}),
            ToolOutcome(f"{i} passed\n" + "x" * 400, 0),
            call_id=next(ids),
        )

    db = sqlite3.connect(d / "raw.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE t (session TEXT, seq INTEGER, payload TEXT, PRIMARY KEY(session, seq))"
    )
    (d / "blobs").mkdir()
    raw_counter = iter(range(10**9))
    payload = json.dumps({"x": "y" * 600})

    def base() -> None:
        i = next(raw_counter)
        data = f"{i} passed\n".encode() + b"x" * 400
        tmp = d / "blobs" / f".{i}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, d / "blobs" / hashlib.sha256(data).hexdigest())
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES ('s', ?, ?)", (i, payload))
        db.execute("COMMIT")

    p = paired(ours, base, pairs=pairs)
    timed_row("record(), distinct outputs, durable", p.ours, p.base, p.ratio,
              "raw sqlite3 insert+commit + one fsync'd blob write")  # fmt: skip
    led.close()
    db.close()


def bench_hash() -> None:
    """Hashing a 100 MB output through record's path vs hashlib.sha256 of the same bytes."""
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.ledger.engine import Ledger

    size = n(100, 20) * 1_000_000
    text = ("0123456789abcdef" * (size // 16))[:size]
    data = text.encode()
    d = TMP / "hash"
    led = Ledger(d / "home", "bench", root=d)

    def base() -> None:
        hashlib.sha256(data).hexdigest()

    big = ToolCall("bash", {"command": "cat big"})
    ids = _paired(led, [big] * (n(9, 3) + 1))

    def through_record() -> None:  # the same output again: record() hashes, the blob exists
        led.record(big, ToolOutcome(text, 0), call_id=next(ids))

    def cpu(fn: Callable[[], object]) -> float:  # both sides are one thread of CPU work
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    p = paired(through_record, base, pairs=n(9, 3), warmup=1, measure=cpu)
    mb = size / 1e6
    add(f"hash a {mb:.0f} MB output through record() (blob stored, CPU time)",
        f"{mb / p.ours:.0f} MB/s", f"{mb / p.base:.0f} MB/s",
        f"{100 / p.ratio:.0f} % of hashlib.sha256")  # fmt: skip
    counter = iter(range(10**9))

    distinct = [ToolCall("bash", {"command": f"cat big {i}"}) for i in range(n(3, 2) + 2)]
    ids, calls = _paired(led, distinct), iter(distinct)

    def ours() -> None:
        led.record(next(calls), ToolOutcome(text, 0), call_id=next(ids))

    def base_durable() -> None:
        hashlib.sha256(data).hexdigest()
        fd = os.open(d / "copy", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)

    # distinct outputs need distinct bytes: vary the first byte each call
    def ours_distinct() -> None:
        nonlocal text
        text = chr(65 + next(counter) % 26) + text[1:]
        ours()

    p = paired(ours_distinct, base_durable, pairs=n(3, 2), warmup=1)
    pct = f"{100 / p.ratio:.0f} % of sha256 + fsync'd write"
    add(f"record() a {mb:.0f} MB output end to end (durable)", f"{mb / p.ours:.0f} MB/s",
        f"{mb / p.base:.0f} MB/s", pct)  # fmt: skip
    led.close()


def bench_verify() -> None:
    """audit --verify's pass (chain, MACs, evidence, blobs) vs a stdlib chain+HMAC loop."""
    from infomark.ledger.audit import verify_session
    from infomark.ledger.engine import Ledger
    from infomark.ledger.keys import Key

    size = sizes()[-1]
    home = grow(size)
    key = Key.from_bytes(bytes.fromhex(_KEY_HEX))
    led = Ledger(home, "bench", key=key, root=TMP)
    db = sqlite3.connect(home / "ledger.db")
    secret = key.secret

    def ours() -> None:
        assert verify_session(led) == []

    def base() -> None:
        enc = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
        prev = "0" * 64
        for s, seq, t, p, ts, ph, h, mac, kid in db.execute(
            "SELECT session, seq, type, payload, ts, prev_hash, hash, mac, key_id FROM events "
            "WHERE session = 'bench' ORDER BY seq"
        ):
            body = enc([s, seq, t, p, ts, kid]).encode()
            got = hashlib.sha256(ph.encode() + b"\n" + body).hexdigest()
            ok = got == h and ph == prev
            ok = ok and hmac.compare_digest(hmac.digest(secret, h.encode(), "sha256").hex(), mac)
            assert ok
            prev = h

    p = paired(ours, base, pairs=n(5, 3), warmup=1)
    what = f"{p.ratio:.2f}× the time of the stdlib chain+HMAC loop"
    add(f"audit --verify pass, {size:,} events", f"{size / p.ours / 1000:.0f}k events/s",
        f"{size / p.base / 1000:.0f}k events/s", what)  # fmt: skip
    led.close()
    db.close()


def bench_growth() -> None:
    """Journal bytes per tool call (authorize + record, default policy layer)."""
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.calls import ToolCall, ToolOutcome

    d = TMP / "growth"
    d.mkdir()
    gk = Gatekeeper.open(d / "home", "bench", root=d)
    gk.new_turn("fix the failing test in src/m1.py")
    db_path = d / "home" / "ledger.db"

    def size() -> tuple[int, int]:
        db = sqlite3.connect(db_path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (rows,) = db.execute(
            "SELECT sum(length(session) + length(type) + length(payload) + length(ts) "
            "+ length(prev_hash) + length(hash) + length(mac) + length(key_id) + 8) FROM events"
        ).fetchone()
        db.close()
        return os.path.getsize(db_path), int(rows or 0)

    calls = n(200, 60)
    recorded = 0
    f0, r0 = size()
    for i in range(calls):
        tool = ("Read", "Bash", "Edit", "Grep")[i % 4]
        inp: dict[str, Any] = {"file_path": f"src/m{i % 37}.py"}
        if tool == "Bash":
            inp = {"command": f"pytest -q tests/test_{i % 11}.py"}
        elif tool == "Edit":
            inp.update(old_string="a", new_string="b")
        decision = gk.authorize(ToolCall(tool, inp))
        if decision.allowed:  # as a host does: only an authorized call runs and is recorded
            out = ToolOutcome(f"output {i}\n" * 20, 0)
            gk.record(ToolCall(tool, inp), out, call_id=decision.call_id)
            recorded += 1
        if i % 10 == 9:
            gk.new_turn(f"prompt {i}")
    f1, r1 = size()
    gk.close()
    add("journal growth per tool call (default policy layer)",
        f"{(r1 - r0) / calls / 1024:.2f} KB events", f"{(f1 - f0) / calls / 1024:.2f} KB file",
        f"over {calls} calls ({recorded} recorded, the edits denied: no ledger)")  # fmt: skip


def _message_3kb() -> str:
    claims = "".join(
        f'    - id: C{i}\n      text: "claim number {i} about the window size"\n'
        f'      status: Hypothetical\n      falsifier: "read module {i}"\n'
        f'      oracle: "pytest tests/test_{i}.py -q"\n'
        for i in range(5)
    )
    prose = "The agent explains its plan in ordinary prose. " * 40
    tail = "  premises_for_plan: [C0, C1]\n  open_questions: [C4]\n"
    return f"{prose}\n\nclaim_ledger:\n  claims:\n{claims}{tail}\n{prose}"


def bench_parser() -> None:
    from infomark.ledger.engine import Ledger
    from infomark.ledger.parse.parser import parse_message

    msg = _message_3kb()
    regex = re.compile(r"^claim_ledger:", re.M)
    p = paired(lambda: parse_message(msg), lambda: regex.search(msg), pairs=n(200, 50))
    timed_row(f"parse 3 KB message, 5-claim ledger ({len(msg)} B)", p.ours, p.base, p.ratio,
              "plain regex")  # fmt: skip
    led = Ledger(TMP / "ingest", "bench", root=TMP)
    ours = median_seconds(lambda: led.ingest(msg), repeat=n(100, 30))
    led.close()
    timed_row("ingest 3 KB message (parse + apply + durable commit)", ours, None, None, "")
    prose = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n" * 18_000)[:1_000_000]
    p = paired(lambda: parse_message(prose), lambda: regex.search(prose), pairs=n(20, 6))
    timed_row("parse 1 MB prose (no block)", p.ours, p.base, p.ratio, "plain regex")


def bench_authorize() -> None:
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates.authorize import authorize_call
    from infomark.gates.config import Config
    from infomark.kernel.tools import Classification, ToolClass
    from infomark.ledger.calls import ToolCall, ToolOutcome

    d = TMP / "authorize"
    d.mkdir()
    gk = Gatekeeper.open(d / "home", "bench", root=d)
    claims = "".join(
        f'    - id: C{i}\n      text: "claim {i}"\n      status: Hypothetical\n'
        f'      falsifier: "f{i}"\n      oracle: "make t{i}"\n'
        for i in range(50)
    )
    gk.ingest(f"claim_ledger:\n  claims:\n{claims}  premises_for_plan: [C0, C1, C2]\n")
    for i in range(3):
        run = ToolCall("bash", {"command": f"make t{i}"})
        ok = gk.authorize(run)  # only an authorized call's result becomes evidence
        ev = gk.record(run, ToolOutcome("ok", 0), call_id=ok.call_id)
        gk.ingest(f"oracle_stamp: claim_id=C{i} evidence_ref={ev.ref} result=PASS")
    edit = ToolCall("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"})
    state, cfg = gk.store.state, Config()

    def pure() -> None:
        authorize_call(state, tool="Edit", classified=Classification(ToolClass.MODIFY),
                       config=cfg, bypass=False)  # fmt: skip

    t = median_seconds(pure, repeat=n(2000, 500))
    timed_row("authorize decision, 50 claims (pure, in-process)", t, None, None, "")
    p = paired(lambda: gk.authorize(edit), pure, pairs=n(150, 40))
    timed_row("gk.authorize(), 50 claims, journaled (durable)", p.ours, p.base, p.ratio,
              "pure decision")  # fmt: skip
    gk.close()


def bench_shell() -> None:
    from infomark.gates.shell import classify_shell

    parts = [
        "git status",
        "ls -la | grep foo",
        "pytest -q tests/test_a.py",
        "echo 'done' > /dev/null",
    ]
    cmd = " && ".join(parts * 40)[:1024]
    classify_shell(cmd)
    t = median_seconds(lambda: classify_shell(cmd), repeat=n(200, 50))
    timed_row(f"classify a 1 KB shell command ({len(cmd)} B)", t, None, None, "")


def bench_hook_bash() -> None:
    """PreToolUse on a Bash call (tree-sitter loads) vs a bare interpreter."""
    warm_bytecode()
    d = TMP / "hookbash"
    d.mkdir()
    payload = json.loads(_pretool(d))
    payload.update(tool_name="Bash", tool_input={"command": "sed -i s/a/b/ x.py"})
    env = {**os.environ, "INFOMARK_HOME": str(d / "home")}
    data = json.dumps(payload).encode()
    subprocess.run(HOOK, input=data, env=env, cwd=d, capture_output=True, check=True)
    p = paired(lambda: run_measured(HOOK, stdin=data, env=env, cwd=str(d)),
               lambda: run_measured(BARE), pairs=n(12, 6), measure=_wall)  # fmt: skip
    timed_row("PreToolUse cold process (Bash, tree-sitter)", p.ours, p.base, p.ratio,
              "bare `python -I -S -c pass`")  # fmt: skip


ALL = [
    bench_hook,
    bench_hook_events,
    bench_hook_bash,
    bench_record,
    bench_hash,
    bench_verify,
    bench_growth,
    bench_parser,
    bench_authorize,
    bench_shell,
]
