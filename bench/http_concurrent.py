"""The warm path under concurrency: ``python -m bench.http_concurrent [--base DIR]``.

What ``infomark install claude-code --http`` sets up: a running ``infomark serve`` (real
uvicorn on 127.0.0.1) that each hook call is posted to. Three clients (threads, one kept-alive
httpx connection and one Claude Code session each) post, round after round, a PreToolUse
Read, a PreToolUse Bash and the PostToolUse of that Bash call's output (a durable decision,
a blob and a durable record), as a busy agent's hook does. The table gives the median and
p99 round trip of every hook request, then of each kind. ``--base DIR`` serves from another
checkout of infomark (``git worktree add DIR main``), alternated with this one (B A B A), so
both see the same load; ``--base-pure`` serves the base without ``httptools`` and ``uvloop`` (hidden
from its imports), as a checkout whose dependencies lack them (main before session 11) runs.
The goal (issue 28): p99 ≤ 10 ms.

``BENCH_CLIENTS=N`` runs N clients instead of three (one: the route alone, nothing queued).

Each client keeps its session's transcript as Claude Code does: before each PreToolUse the
assistant's text and its ``tool_use`` line, after each PostToolUse the tool's result; the hook
reads the new lines at each PreToolUse. ``--no-transcript`` leaves it out (the shape of the
rows before session 16). ``--late MS``: each PreToolUse's lines are written MS milliseconds
after the call was posted, as Claude Code's background writer may (the hook waits up to
0.5 s for its ``tool_use`` line). Transcripts live outside the project, as Claude Code's do.
``--files N``: the project is a git work tree of N tracked files (default: an empty folder),
which each Bash call's fingerprint compares before and after it.

``--raw``: each client writes its requests and reads the answers by hand on one kept-alive
socket (~0.15 ms of the client's CPU a request) instead of httpx (~1.0–1.2 ms), so the
clients take next to nothing from the two cores the server runs on.

``--forward``: each client posts as the installed hook does
(:func:`infomark.tools.hooks.forward._post`, what ``infomark hook claude-code --url`` runs):
one connection per call, ``Connection: close``, so the listener of ``serve --workers`` hands
each call to the least busy worker and the server accepts a connection a call, as in real use.

``--workers N`` serves with ``infomark serve --workers N`` (N worker processes behind one
listener, each connection to the least busy); ``--workers-vs N`` alternates this tree with
one worker and with N. ``--cpu`` and ``--strace`` then cover the workers too.

``--think MS``: each client pauses between requests for a random time (exponential, mean
``MS``, seeded per client), as an agent does while its tool runs and its model writes (real
agents take seconds; 20 ms is an agent a hundred times busier). Without it the clients post
back to back: the server never idles, which measures its throughput under saturation
rather than what three agents see.

Wall-clock times on a loaded machine say little, so three load-independent measures of the
server process cover the measured rounds (after the warm-up, which opens the sessions):

- ``--cpu``: its CPU time (user + system, every thread, from ``/proc/PID/stat``) and its
  threads' context switches (``/proc/PID/task/*/status``) per request;
- ``--strace``: ``strace -f -c`` attached to it: fsync + fdatasync and all system calls per
  request (strace slows the server: its wall times are not reported);
- ``--icount``: the server under ``valgrind --tool=callgrind``, counting only while the
  measured rounds run: instructions per request (every thread; valgrind runs them one at a
  time, ~50x slower, so its wall times are not reported); ``--keep-dumps DIR`` keeps each
  run's callgrind dump as ``DIR/TREE.PID.NS.callgrind`` (TREE: the checkout's folder name)
  for ``callgrind_annotate``;
- ``--profile FILE``: the server under yappi (CPU clock, every thread), started when the
  measured rounds start; the stats are written to ``FILE.LABEL.N`` (pstats format) when it
  exits. ``yappi`` is not a dependency: ``pip install yappi`` first.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from infomark.ledger.init import ensure_token
from infomark.tools.hooks import forward
from infomark.tools.serve import READY_PREFIX

CLIENTS = int(os.environ.get("BENCH_CLIENTS", "3"))
RAW = False  # --raw: the light client (_RawPost) instead of httpx
FORWARD = False  # --forward: the forwarding hook's own post (_ForwardPost), a connection a call
WORKERS = "1"  # infomark serve --workers (--workers N, or --workers-vs N: 1 and N alternated)
ROUNDS = 60  # per client and run: 3 requests each
TRANSCRIPT = True  # --no-transcript: no transcript_path (the rows before session 16)
LATE_MS = 0.0  # --late MS: a PreToolUse's tool_use line is written this long after its post
FILES = 0  # --files N: the project is a git work tree of N tracked files (0: an empty folder)
WARMUP = 5
THINK_MS = 0.0  # mean pause between a client's requests (--think)
KEEP_DUMPS = ""  # --keep-dumps DIR: where --icount's callgrind dumps are kept
_PROFILED = Path(__file__).with_name("_serve_profiled.py")


@dataclass
class Run:
    """One run of the three clients: round trips (ms) and what the server spent on them."""

    took: list[float] = field(default_factory=list)
    kinds: dict[str, list[float]] = field(default_factory=dict)  # "PreToolUse Read" -> ms
    requests: int = 0  # measured requests (after the warm-up)
    cpu_s: float | None = None  # server user + system seconds over them
    switches: int | None = None  # the server's threads' context switches over them
    syscalls: dict[str, int] = field(default_factory=dict)  # strace -c: name -> calls
    instructions: int | None = None  # callgrind, over the measured requests


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * q) - 1))]


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().rsplit(")", 1)[1].split()


def _children(pid: int) -> list[str]:
    """The processes whose parent is ``pid`` (the workers of ``serve --workers``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(_stat(int(entry))[1]) == pid:
                    found.append(entry)
            except OSError:  # gone meanwhile
                pass
    return found


def _cpu_seconds(pid: int) -> float:
    """User + system time of every thread of ``pid`` and of its children (``--workers``)
    so far."""
    ticks = 0
    for p in [pid, *map(int, _children(pid))]:
        fields = _stat(p)
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _switches(pid: int) -> int:
    """Context switches (voluntary and not) of every thread of ``pid`` and of its children
    so far: each hand-over between the event loop and a worker thread costs some."""
    total = 0
    for p in [pid, *map(int, _children(pid))]:
        for task in os.listdir(f"/proc/{p}/task"):
            try:
                with open(f"/proc/{p}/task/{task}/status", encoding="ascii") as f:
                    for line in f:
                        if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                            total += int(line.split()[1])
            except OSError:  # the thread ended meanwhile
                pass
    return total


def _client(
    url: str,
    token: str,
    d: str,
    sid: str,
    out: list[tuple[str, float]],
    go: threading.Barrier,
    warm: threading.Barrier,
) -> None:
    # Claude Code keeps transcripts under ~/.claude/projects/, outside the project: in the
    # project, each Bash call would see them change (an unannounced mutation every time).
    transcript = Path(f"{d}-transcripts") / f"{sid}.jsonl"
    transcript.write_text("")

    def payload(
        event: str, tool: str, tool_input: dict[str, object], use: str
    ) -> dict[str, object]:
        path = str(transcript) if TRANSCRIPT else ""
        data: dict[str, object] = {"session_id": sid, "transcript_path": path, "cwd": d,
                                   "hook_event_name": event, "tool_name": tool,
                                   "tool_input": tool_input, "tool_use_id": use}  # fmt: skip
        if event == "PostToolUse":
            data["tool_response"] = {"stdout": f"{use}: ok\n" * 40, "stderr": "",
                                     "interrupted": False}  # fmt: skip
        return data

    pace = random.Random(sid)  # the same pauses in every run
    post = (_ForwardPost(url, token, d) if FORWARD else _RawPost(url, token) if RAW
            else _HttpxPost(url, token))  # fmt: skip
    try:
        go.wait()
        for i in range(WARMUP + ROUNDS):
            if i == WARMUP:
                warm.wait()  # the measurement of the server starts here
            use = f"{sid}-{i}"
            for body in (
                payload("PreToolUse", "Read", {"file_path": "x.py"}, use + "r"),
                payload("PreToolUse", "Bash", {"command": f"echo {i}"}, use),
                payload("PostToolUse", "Bash", {"command": f"echo {i}"}, use),
            ):
                data = json.dumps(body).encode()
                said = _Said(transcript, body) if TRANSCRIPT else None
                late = None
                if said is not None and LATE_MS and body["hook_event_name"] == "PreToolUse":
                    late = threading.Timer(LATE_MS / 1000, said.write)
                elif said is not None:
                    said.write()
                t0 = time.perf_counter()
                if late is not None:
                    late.start()
                status, text = post(data)
                took = (time.perf_counter() - t0) * 1000
                if late is not None:
                    late.join()
                assert status == 200, text
                if i >= WARMUP:
                    out.append((f"{body['hook_event_name']} {body['tool_name']}", took))
                if THINK_MS:
                    time.sleep(pace.expovariate(1 / THINK_MS) / 1000)
    except BaseException:  # the run fails, with this client's error, instead of waiting
        _FAILED.append(traceback.format_exc())
        go.abort()
        warm.abort()
        raise
    finally:
        post.close()


_FAILED: list[str] = []  # a client's traceback: the run reports it and stops


def _client_failed() -> SystemExit:
    return SystemExit("a client failed:\n" + "\n".join(_FAILED))


class _Said:
    """What Claude Code appends to its transcript around one hook call: before a
    PreToolUse, the assistant's text and its ``tool_use`` (a line per content block); after
    a PostToolUse, the tool's result."""

    def __init__(self, path: Path, body: dict[str, object]) -> None:
        self.path = path
        use, tool = body["tool_use_id"], body["tool_name"]
        if body["hook_event_name"] == "PreToolUse":
            blocks: list[dict[str, object]] = [
                {"type": "text", "text": f"Step {use}: next I use {tool} to look at the project."},
                {"type": "tool_use", "id": use, "name": tool, "input": body["tool_input"]},
            ]
            entries = [{"type": "assistant", "message": {"id": f"m-{use}", "role": "assistant",
                        "content": [b]}} for b in blocks]  # fmt: skip
        else:
            result = {"type": "tool_result", "tool_use_id": use,
                      "content": json.dumps(body.get("tool_response"))}  # fmt: skip
            entries = [{"type": "user", "message": {"role": "user", "content": [result]}}]
        self.text = "".join(json.dumps(e) + "\n" for e in entries)

    def write(self) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(self.text)


class _HttpxPost:
    """The hook route over one kept-alive httpx connection (~1 ms of the client's CPU a
    request, on the cores the server runs on)."""

    def __init__(self, url: str, token: str) -> None:
        self.c = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}",
                              "Content-Type": "application/json"}, timeout=120)  # fmt: skip

    def __call__(self, data: bytes) -> tuple[int, str]:
        r = self.c.post("/v1/hooks/claude-code", content=data)
        return r.status_code, r.text

    def close(self) -> None:
        self.c.close()


class _RawPost:
    """The hook route over one kept-alive socket, the request written and the response read
    by hand (``--raw``: ~0.05 ms of the client's CPU a request, so the clients take next to
    nothing from the server's cores, as an agent's host waiting on its hook does)."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (f"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: {host}\r\n"
                     f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                     "Content-Length: ").encode()  # fmt: skip
        self.buf = b""

    def __call__(self, data: bytes) -> tuple[int, str]:
        self.sock.sendall(self.head + str(len(data)).encode() + b"\r\n\r\n" + data)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                      if k.strip().lower() == "content-length")  # fmt: skip
        while len(self.buf) < length:
            self.buf += self._recv()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, body.decode("utf-8", "replace")

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the service closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


class _ForwardPost:
    """What the installed hook does (``infomark hook claude-code --url``,
    :func:`infomark.tools.hooks.forward._post`): one connection per call, ``Connection:
    close``, the answer read to its end (``--forward``; with ``serve --workers`` the
    listener hands each call to the least busy worker, where a kept-alive client stays with
    one)."""

    def __init__(self, url: str, token: str, root: str) -> None:
        self.url, self.token, self.root = url, token, root

    def __call__(self, data: bytes) -> tuple[int, str]:
        answer = forward._post(self.url, data, self.token, self.root)  # raises unless 2xx
        return 200, json.dumps(answer)

    def close(self) -> None:
        """Nothing stays open between calls."""


def _project(root: Path, files: int) -> None:
    """``root`` as a git work tree of ``files`` tracked Python files, 50 to a folder (what
    each watched Bash call's fingerprint compares)."""
    for i in range(files):
        folder = root / "src" / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"VALUE = {i}\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}  # fmt: skip
    for argv in (["git", "init", "-q"], ["git", "add", "src"], ["git", "commit", "-qm", "x"]):
        subprocess.run(argv, cwd=root, env=env, capture_output=True, check=True)


def _strace_counts(path: Path) -> dict[str, int]:
    """``strace -c``'s table: system call -> calls."""
    counts: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 5 and re.fullmatch(r"[\d.]+", parts[0]) and parts[-1] != "total":
            counts[parts[-1]] = int(parts[3])
    return counts


def _callgrind_total(path: Path) -> int:
    """The instructions of a callgrind dump (its ``totals:`` line)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {path}")


def run(
    tree: Path,
    *,
    cpu: bool = False,
    strace: bool = False,
    profile: str = "",
    icount: bool = False,
    pure: bool = False,
    workers: str = "1",
) -> Run:
    """One run of the three clients on a fresh home, served from the checkout ``tree``
    (``pure``: with ``httptools`` and ``uvloop`` hidden, so uvicorn runs h11 on asyncio)."""
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(f"{d}-transcripts")  # removed with the run (the finally below)
        if FILES:
            _project(Path(d), FILES)
        home = Path(d) / ".infomark"
        token = ensure_token(home)
        path = str(tree)
        if pure:
            hide = Path(d) / "pure"
            hide.mkdir()
            for name in ("httptools", "uvloop"):
                (hide / f"{name}.py").write_text('raise ImportError("hidden by the bench")\n')
            path = f"{hide}{os.pathsep}{tree}"
        env = {**os.environ, "PYTHONPATH": path}
        head = [sys.executable, str(_PROFILED), profile] if profile else [
            sys.executable, "-m", "infomark.tools.serve"]  # fmt: skip
        grind = Path(d) / "callgrind.out"
        if icount:
            head = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                    f"--callgrind-out-file={grind}", *head]  # fmt: skip
        argv = [*head, "--home", str(home), "--root", d, "--port", "0", "--no-access-log",
                *(["--workers", workers] if workers != "1" else [])]  # fmt: skip
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=d, env=env,
        )  # fmt: skip
        tracer: subprocess.Popen[str] | None = None
        result = Run()
        measured = forward._TIMEOUT_S
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(READY_PREFIX, 1)[1].split("/v1")[0]
            outs: list[list[tuple[str, float]]] = [[] for _ in range(CLIENTS)]
            go = threading.Barrier(CLIENTS)
            # The warm-up opens the sessions: a session's first call in a big project copies
            # its baseline (~0.3 s for 5,000 files, more for three at once), past the hook's
            # 1 s timeout, where the installed hook judges the call itself. The measured
            # rounds have the hook's own timeout again (the barrier's action, before any
            # client goes on).
            forward._TIMEOUT_S = 120.0
            warm = threading.Barrier(
                CLIENTS + 1, action=lambda: setattr(forward, "_TIMEOUT_S", measured)
            )
            threads = [
                threading.Thread(target=_client, args=(url, token, d, f"c{k}", outs[k], go, warm))
                for k in range(CLIENTS)
            ]
            for t in threads:
                t.start()
            try:
                warm.wait()
            except threading.BrokenBarrierError:
                for t in threads:
                    t.join()
                raise _client_failed() from None
            if strace:
                out = Path(d) / "strace.txt"
                how = os.environ.get("BENCH_STRACE", "strace -f -c").split()  # or -e trace=…
                traced = [str(proc.pid), *_children(proc.pid)]  # --workers: each worker
                tracer = subprocess.Popen(
                    [*how, "-o", str(out), *(a for p in traced for a in ("-p", p))],
                    stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
                assert tracer.stderr is not None
                tracer.stderr.readline()  # "Process N attached …": every thread is traced
            if profile:
                proc.send_signal(signal.SIGUSR1)  # _serve_profiled starts yappi
            if icount:
                subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)],
                               capture_output=True, check=True)  # fmt: skip
            before = _cpu_seconds(proc.pid) if cpu else 0.0
            switched = _switches(proc.pid) if cpu else 0
            for t in threads:
                t.join()
            if _FAILED:
                raise _client_failed()
            if cpu:
                result.cpu_s = _cpu_seconds(proc.pid) - before
                result.switches = _switches(proc.pid) - switched
            if tracer is not None:
                tracer.send_signal(signal.SIGINT)  # detach and write the table
                tracer.wait(30)
                result.syscalls = _strace_counts(out)
            if icount:
                subprocess.run(["callgrind_control", "-d", str(proc.pid)],
                               capture_output=True, check=True)  # fmt: skip
                result.instructions = _callgrind_total(Path(f"{grind}.1"))
                if KEEP_DUMPS:
                    os.makedirs(KEEP_DUMPS, exist_ok=True)
                    kept = Path(KEEP_DUMPS) / f"{tree.name}.{os.getpid()}.{time.time_ns()}"
                    shutil.copyfile(f"{grind}.1", f"{kept}.callgrind")
            if profile:
                proc.send_signal(signal.SIGUSR2)  # stop yappi, write the stats
                for _ in range(600):
                    if os.path.exists(profile) or proc.poll() is not None:
                        break
                    time.sleep(0.05)
            result.took = [x for o in outs for _, x in o]
            for o in outs:
                for kind, x in o:
                    result.kinds.setdefault(kind, []).append(x)
            result.requests = len(result.took)
            return result
        finally:
            forward._TIMEOUT_S = measured
            if tracer is not None and tracer.poll() is None:
                tracer.kill()
            proc.terminate()
            proc.wait(30)
            shutil.rmtree(f"{d}-transcripts", ignore_errors=True)


def _per_request(runs: list[Run]) -> tuple[float | None, float | None, dict[str, float]]:
    """CPU ms, context switches and system calls per measured request, over ``runs``."""
    n = sum(r.requests for r in runs)
    cpus = [r.cpu_s for r in runs if r.cpu_s is not None]
    cpu_ms = sum(cpus) * 1000 / n if cpus and n else None
    switched = [r.switches for r in runs if r.switches is not None]
    switches = sum(switched) / n if switched and n else None
    calls: dict[str, int] = {}
    for r in runs:
        for name, count in r.syscalls.items():
            calls[name] = calls.get(name, 0) + count
    return cpu_ms, switches, {name: count / n for name, count in calls.items()}


def main(argv: list[str]) -> int:
    ours = Path(__file__).resolve().parents[1]
    workers = argv[argv.index("--workers") + 1] if "--workers" in argv else WORKERS
    trees = {"this tree": (ours, workers)}
    if "--base" in argv:
        trees = {"base": (Path(argv[argv.index("--base") + 1]).resolve(), workers), **trees}
    if "--workers-vs" in argv:  # this tree with one worker, then with N
        many = argv[argv.index("--workers-vs") + 1]
        trees = {"1 worker": (ours, "1"), f"{many} workers": (ours, many)}
    if "--icount" in argv and any(w != "1" for _, w in trees.values()):
        raise SystemExit("--icount counts one process: use it with one worker")
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 2
    cpu, strace, icount = "--cpu" in argv, "--strace" in argv, "--icount" in argv
    global ROUNDS, THINK_MS, RAW, FORWARD, KEEP_DUMPS, TRANSCRIPT, LATE_MS, FILES
    KEEP_DUMPS = argv[argv.index("--keep-dumps") + 1] if "--keep-dumps" in argv else ""
    RAW = "--raw" in argv
    TRANSCRIPT = "--no-transcript" not in argv
    FILES = int(argv[argv.index("--files") + 1]) if "--files" in argv else FILES
    LATE_MS = float(argv[argv.index("--late") + 1]) if "--late" in argv else LATE_MS
    FORWARD = "--forward" in argv
    ROUNDS = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else ROUNDS
    THINK_MS = float(argv[argv.index("--think") + 1]) if "--think" in argv else THINK_MS
    profile = argv[argv.index("--profile") + 1] if "--profile" in argv else ""
    done: dict[str, list[Run]] = {k: [] for k in trees}
    for n in range(runs):  # B A B A: both sides see the same load
        for label, (tree, count) in trees.items():
            out = f"{profile}.{label.replace(' ', '-')}.{n}" if profile else ""
            pure = label == "base" and "--base-pure" in argv
            done[label].append(
                run(tree, cpu=cpu, strace=strace, profile=out, icount=icount, pure=pure,
                    workers=count)
            )  # fmt: skip
    if icount:
        print("| server, per measured request | instructions (M) | runs |")
        print("|---|---|---|")
        for label, rs in done.items():
            each = [r.instructions / r.requests / 1e6 for r in rs if r.instructions]
            print(f"| {label} | {statistics.median(each):.2f} | "
                  f"{', '.join(f'{x:.2f}' for x in each)} |")  # fmt: skip
        return 0
    if not strace:
        pacing = f", think {THINK_MS:g} ms" if THINK_MS else ", back to back"
        print(f"| {CLIENTS} clients{pacing}, hook requests | n | median ms | p99 ms | max ms |")
        print("|---|---|---|---|---|")
        for label, rs in done.items():
            xs = [x for r in rs for x in r.took]
            print(f"| {label} | {len(xs)} | {statistics.median(xs):.2f} | "
                  f"{_p(xs, 0.99):.2f} | {max(xs):.2f} |")  # fmt: skip
            kinds: dict[str, list[float]] = {}
            for r in rs:
                for kind, ks in r.kinds.items():
                    kinds.setdefault(kind, []).extend(ks)
            for kind, ks in kinds.items():
                print(f"| {label}: {kind} | {len(ks)} | {statistics.median(ks):.2f} | "
                      f"{_p(ks, 0.99):.2f} | {max(ks):.2f} |")  # fmt: skip
    if cpu or strace:
        print()
        print("| server, per measured request | CPU ms (user+sys) | context switches | "
              "fsync+fdatasync | system calls | top calls |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        for label, rs in done.items():
            cpu_ms, switches, calls = _per_request(rs)
            syncs = calls.get("fsync", 0.0) + calls.get("fdatasync", 0.0)
            top = ", ".join(f"{k} {v:.1f}" for k, v in
                            sorted(calls.items(), key=lambda kv: -kv[1])[:6])  # fmt: skip
            cpu_txt = "-" if cpu_ms is None or strace else f"{cpu_ms:.2f}"
            cpu_txt += " | -" if switches is None or strace else f" | {switches:.1f}"
            sys_txt = f"{syncs:.2f} | {sum(calls.values()):.1f} | {top}" if strace else "- | - | -"
            print(f"| {label} | {cpu_txt} | {sys_txt} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
