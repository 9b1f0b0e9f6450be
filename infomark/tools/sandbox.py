"""The operating system's boundary around a program infomark runs for the agent or for itself.

infomark and the agent run as the same OS user, so no check of a command's *text* can stop a
program from opening the key once it runs. This module puts the boundary in the kernel: a
program runs in its own mount, PID, IPC, UTS and (by default) network namespace, set up by
**bubblewrap** (``bwrap``, the Debian package; the sandbox Flatpak and Claude Code use). Inside:

- the whole filesystem is read-only (``--ro-bind / /``) and ``/tmp`` is a fresh tmpfs;
- the paths in ``policy.writable`` are bound read-write (the project, an attested run's copy);
- the paths in ``policy.read_only`` are bound read-only again inside a writable tree (a hook
  launcher that lives in the project);
- the paths in ``policy.hidden`` are covered: a directory by an empty read-only tmpfs, a file
  by ``/dev/null``, so the key, the journal, the tokens and the transcripts cannot be read;
- the environment is exactly ``policy.env`` (built by :func:`clean_env`), never the caller's;
- the capabilities are dropped, a nested user namespace cannot be created (so the hiding
  mounts cannot be undone), and the program dies with its parent;
- CPU time and address space are capped with ``setrlimit`` in the child, the wall clock by
  killing the sandbox.

There is no unsandboxed fallback: :func:`run` raises :class:`SandboxUnavailable` (with the
reason and the fix) when :func:`probe` finds no working sandbox, and callers fail closed.

One module, one small interface, shared by attested oracle runs (issue 26) and the agent's
own commands (issue 27). Written here rather than taken from a library because the Python
bindings on PyPI wrap bubblewrap's command line with less control than these ~200 lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from infomark.kernel.enums import StrEnum
from infomark.kernel.errors import InfomarkError

__all__ = [
    "Limits",
    "SandboxBackend",
    "SandboxPolicy",
    "SandboxRun",
    "SandboxStatus",
    "SandboxUnavailable",
    "clean_env",
    "command",
    "interpreter_paths",
    "probe",
    "probe_bwrap",
    "run",
]

# The variables a program needs to behave as in a terminal; nothing that changes what a
# test runner, interpreter or build tool loads (PYTEST_ADDOPTS, PYTHONPATH, PYTHONSTARTUP,
# MAKEFLAGS, NODE_OPTIONS, LD_PRELOAD …) gets in unless the operator names it.
_BASE_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TERM", "USER", "LOGNAME", "TZ")
_FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"

# Exit status 128 + n is how a shell reports death by signal n; bwrap passes the child's on.
_SIGNAL_BASE = 128

# The sandbox's own /tmp: a fresh tmpfs mounted inside it, never the host's directory.
_SANDBOX_TMP = "/tmp"  # noqa: S108


class SandboxBackend(StrEnum):
    """Which mechanism draws the boundary."""

    BWRAP = "bubblewrap"
    LANDLOCK = "landlock"  # where bubblewrap cannot run (infomark/tools/landlock.py)
    NONE = "none"


class SandboxUnavailable(InfomarkError):
    """No sandbox can run here; nothing is run unsandboxed in its place."""

    code = "sandbox_unavailable"

    def __init__(self, message: str, *, fix: str) -> None:
        super().__init__(f"{message}; fix: {fix}")
        self.fix = fix


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource caps for one sandboxed program (``None``: no cap)."""

    cpu_seconds: int | None = None
    memory_bytes: int | None = None
    wall_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """What a sandboxed program may see and touch."""

    cwd: str
    writable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    network: bool = False
    env: tuple[tuple[str, str], ...] = ()
    limits: Limits = field(default_factory=Limits)
    private_tmp: bool = True


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether a sandbox runs here: the backend, and if not, why and how to fix it."""

    backend: SandboxBackend
    available: bool
    detail: str
    fix: str


@dataclass(frozen=True, slots=True)
class SandboxRun:
    """What a sandboxed program did: its exit status, output and the limits it hit."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    backend: SandboxBackend
    limits_hit: tuple[str, ...]
    wall_seconds: float
    #: the program's CPU time (user + system, its waited-for descendants included): counted
    #: inside bubblewrap by :data:`_REAPER`, under Landlock by ``wait4``
    cpu_seconds: float = 0.0


_NAMESPACES = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
)
_HARDENING = ("--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--new-session")

_probe_lock = threading.Lock()
_probed: SandboxStatus | None = None


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def probe(*, refresh: bool = False) -> SandboxStatus:
    """Whether a sandbox really runs here (it is started once per process, then cached)."""
    global _probed
    with _probe_lock:
        if _probed is None or refresh:
            _probed = _probe_bwrap()
            if not _probed.available:
                _probed = _probe_landlock(_probed)
        return _probed


def _probe_landlock(bwrap: SandboxStatus) -> SandboxStatus:
    """Landlock in bubblewrap's place: it needs no namespace, only a kernel that has it."""
    from infomark.tools import landlock

    version = landlock.abi()
    if version < 1:
        return SandboxStatus(
            SandboxBackend.NONE,
            False,
            f"{bwrap.detail}, and this kernel has no Landlock",
            f"{bwrap.fix}; or run on Linux 5.13+ with Landlock enabled (lsm=…,landlock)",
        )
    argv = landlock.script_argv(
        ["true"], cwd="/", rule_list=landlock.rules([], [], []), network=False
    )
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": _FALLBACK_PATH})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(SandboxBackend.NONE, False, f"landlock: {exc}", bwrap.fix)
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        return SandboxStatus(SandboxBackend.NONE, False, f"landlock: {why}", bwrap.fix)
    return SandboxStatus(
        SandboxBackend.LANDLOCK,
        True,
        f"Landlock ABI {version} ({bwrap.detail}): no private /tmp, no PID namespace, "
        "TCP closed only from ABI 4, no new entries directly in a directory that holds a "
        "hidden or read-only path",
        f"for the full sandbox: {bwrap.fix}",
    )


def probe_bwrap() -> SandboxStatus:
    """Whether bubblewrap itself starts here (no Landlock fallback, nothing cached): what a
    host's own bubblewrap sandbox, Claude Code's or Codex's, needs."""
    return _probe_bwrap()


def _probe_bwrap() -> SandboxStatus:
    exe = _bwrap()
    if exe is None:
        return SandboxStatus(
            SandboxBackend.NONE,
            False,
            "bubblewrap (bwrap) is not installed",
            "install it: apt-get install -y bubblewrap (Debian/Ubuntu) or dnf install bubblewrap",
        )
    argv = [exe, *_NAMESPACES, "--unshare-net", *_HARDENING]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": _FALLBACK_PATH})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(
            SandboxBackend.NONE, False, f"bwrap could not start: {exc}", _USERNS_FIX
        )
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        return SandboxStatus(SandboxBackend.NONE, False, f"bwrap failed: {why}", _USERNS_FIX)
    return SandboxStatus(SandboxBackend.BWRAP, True, f"bubblewrap at {exe}", "")


_USERNS_FIX = (
    "bubblewrap needs unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 "
    "(Debian) or kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04), or run "
    "outside a container that forbids them"
)


def clean_env(
    passthrough: Iterable[str] = (), *, base: Mapping[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """The environment a sandboxed program gets: the terminal basics and the named variables.

    ``LC_*`` locale variables pass; every other variable of ``base`` (``os.environ`` by
    default) is left out unless ``passthrough`` names it.
    """
    source = os.environ if base is None else base
    wanted = set(_BASE_ENV) | set(passthrough)
    env = {k: v for k, v in source.items() if k in wanted or k.startswith("LC_")}
    env.setdefault("PATH", _FALLBACK_PATH)
    return tuple(sorted(env.items()))


def interpreter_paths(
    commands: Iterable[str], *, path: str = _FALLBACK_PATH, cwd: str = "."
) -> tuple[str, ...]:
    """The Python installations a sandboxed run must reach read-only, wherever they live.

    The sandbox's ``/tmp`` is a fresh tmpfs, so an interpreter installed under the host's
    ``/tmp`` (a clone's virtual environment) would vanish inside it. Returned: this
    interpreter's prefixes (``sys.prefix``, ``sys.exec_prefix``, ``sys.base_prefix``) and the
    prefix of each command word in ``commands`` that is a Python interpreter or a script
    whose ``#!`` line names one (resolved on ``path`` from ``cwd``, symlinks followed; a
    virtual environment's base installation, from its ``pyvenv.cfg``, too). Only directories
    that hold a Python installation are named: never a project's tree.
    """
    found = [sys.prefix, sys.exec_prefix, sys.base_prefix]
    for word in commands:
        exe = _resolve(word, path, cwd)
        for _ in range(2):  # a script, then the interpreter its #! line names
            if exe is None:
                break
            found += _python_prefixes(exe)
            exe = _shebang(exe, path, cwd)
    return tuple(dict.fromkeys(os.path.realpath(p) for p in found if p))


def _resolve(word: str, path: str, cwd: str) -> str | None:
    if not word or word.startswith("-"):
        return None
    if "/" in word:
        full = os.path.join(cwd, word)
        return full if os.path.isfile(full) else None
    return shutil.which(word, path=path)


def _shebang(exe: str, path: str, cwd: str) -> str | None:
    try:
        with open(exe, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return _resolve(words[0], path, cwd) if words else None


def _python_prefixes(exe: str, *, depth: int = 0) -> list[str]:
    """The installation ``exe`` belongs to (``<prefix>/bin/python``), if it is a Python one;
    a virtual environment's base installation too."""
    out = []
    for candidate in dict.fromkeys((exe, os.path.realpath(exe))):
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(candidate)))
        cfg = os.path.join(prefix, "pyvenv.cfg")
        if os.path.isfile(cfg):
            out.append(prefix)
            home = _venv_home(cfg)
            if home and depth < 2:
                out += _python_prefixes(os.path.join(home, "python3"), depth=depth + 1)
        elif prefix != "/" and any(
            n.startswith("python3") for n in _listdir(os.path.join(prefix, "lib"))
        ):
            out.append(prefix)
    return out


def _venv_home(cfg: str) -> str:
    try:
        with open(cfg, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition("=")
                if key.strip() == "home":
                    return value.strip()
    except OSError:
        pass
    return ""


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _real(path: str) -> str:
    return os.path.realpath(path)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


#: bubblewrap's PID namespace keeps the program's CPU time from ``wait4`` (bubblewrap, its
#: parent there, never passes it on), so inside the sandbox a shell runs the program, waits for
#: it and writes ``times`` (its children's user and system time) to an inherited pipe. The
#: program runs with that pipe closed (``{fd}>&-``), so it cannot write a number of its own
#: there. POSIX ``sh`` names only the descriptors 0-9 that way: for a higher one the reaper is
#: ``bash``, and where there is none the program inherits the pipe (it could then understate
#: the number, never lift ``RLIMIT_CPU`` or the wall clock)
_REAPER = '"$@" {fd}>&-; s=$?; times >/proc/self/fd/{fd}; exit "$s"'
_REAPER_OPEN = '"$@"; s=$?; times >/proc/self/fd/{fd}; exit "$s"'


def _reaper(fd: int) -> list[str]:
    """The shell command line that runs the program (its arguments follow) and reports."""
    if fd <= 9:
        return ["/bin/sh", "-c", _REAPER.format(fd=fd), "sh"]
    if os.path.exists("/bin/bash"):
        return ["/bin/bash", "--norc", "--noprofile", "-c", _REAPER.format(fd=fd), "bash"]
    return ["/bin/sh", "-c", _REAPER_OPEN.format(fd=fd), "sh"]


_TIMES = re.compile(rb"(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$")


def command(
    argv: Sequence[str], policy: SandboxPolicy, *, usage_fd: int | None = None
) -> list[str]:
    """The full command line that runs ``argv`` under ``policy`` (bwrap's flags, then argv;
    under the Landlock backend, the rule-applying script, then argv). ``usage_fd``: under
    bubblewrap, argv runs under :data:`_REAPER`, which reports its CPU time to that fd."""
    if _probed is not None and _probed.backend is SandboxBackend.LANDLOCK:
        from infomark.tools import landlock

        rule_list = landlock.rules(policy.writable, policy.read_only, policy.hidden)
        return landlock.script_argv(
            argv, cwd=policy.cwd, rule_list=rule_list, network=policy.network
        )
    exe = _bwrap() or "bwrap"
    out = [exe, *_NAMESPACES]
    if not policy.network:
        out.append("--unshare-net")
    out += [*_HARDENING, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if policy.private_tmp:
        out += ["--tmpfs", _SANDBOX_TMP]
    writable = [_real(p) for p in policy.writable]
    for path in writable:
        out += ["--bind", path, path]
    bound = [*writable]
    for path in (_real(p) for p in policy.read_only):
        if os.path.exists(path):
            out += ["--ro-bind", path, path]
            bound.append(path)
    for path in (_real(p) for p in policy.hidden):
        if not os.path.lexists(path):
            continue
        if policy.private_tmp and _under(path, [_SANDBOX_TMP]) and not _under(path, bound):
            continue  # already out of sight: the fresh /tmp does not hold it
        if os.path.isdir(path):
            out += ["--tmpfs", path, "--remount-ro", path]
        else:
            out += ["--ro-bind", "/dev/null", path]
    if usage_fd is not None:
        argv = [*_reaper(usage_fd), *argv]
    out += ["--chdir", policy.cwd, "--", *argv]
    return out


def _reaped_cpu(report: bytes) -> float | None:
    """The children's CPU seconds from the last line of the reaper's ``times`` (None: no
    report, e.g. the run was killed before it wrote one)."""
    m = _TIMES.search(report)
    if m is None:
        return None
    return 60 * int(m[1]) + float(m[2]) + 60 * int(m[3]) + float(m[4])


def _limit(limits: Limits) -> None:
    """Runs in the child between fork and exec: the caps the kernel enforces."""
    if limits.cpu_seconds is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    if limits.memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))


def _drain(stream: IO[bytes], cap: int, sink: list[bytes], cut: list[bool]) -> None:
    kept = 0
    while chunk := stream.read(65536):
        if kept < cap:
            sink.append(chunk[: cap - kept])
        if kept + len(chunk) > cap:
            cut[0] = True
        kept += len(chunk)
    stream.close()


def _restricted_thread(
    restrict: Callable[[], None], popen: Callable[[], subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    """Start the program from a new thread that first restricts itself with Landlock.

    Landlock (and ``no_new_privs``) bind the calling *thread*, and a process inherits the
    domain of the thread that creates it: so the program starts the fast way (``vfork``, no
    ``preexec_fn``, no interpreter per command) already inside the sandbox. The thread ends
    with the call, its restriction with it; the rest of infomark is never restricted. When
    the restriction fails, nothing is started (:class:`SandboxUnavailable`)."""
    box: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            restrict()
            box.append(popen())
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=target, name="infomark-landlock")
    worker.start()
    worker.join()
    if box:
        return box[0]
    status = probe()
    why = failed[0] if failed else "no process"
    if isinstance(why, OSError):
        raise why  # the program itself could not start (as bwrap reports a missing program)
    raise SandboxUnavailable(
        f"the Landlock rules could not be applied ({why!r}); nothing was run", fix=status.fix
    )


def _start(
    argv: Sequence[str],
    policy: SandboxPolicy,
    status: SandboxStatus,
    piped: bool,
    usage_fd: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` under ``policy`` on the probed backend (bubblewrap's command line, or a
    Landlock-restricted thread); stdin is a pipe when ``piped``; ``usage_fd`` is passed on
    for the reaper (bubblewrap only)."""
    limits = policy.limits
    capped = limits.cpu_seconds is not None or limits.memory_bytes is not None
    landlocked = None
    if status.backend is SandboxBackend.LANDLOCK:
        from infomark.tools import landlock

        landlocked = landlock.prepared(
            policy.writable, policy.read_only, policy.hidden, network=policy.network
        )

    def _popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            command(argv, policy, usage_fd=usage_fd) if landlocked is None else list(argv),
            stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(policy.env),
            cwd=policy.cwd if landlocked is not None else None,
            start_new_session=True,
            preexec_fn=(lambda: _limit(limits)) if capped else None,
            pass_fds=(usage_fd,) if usage_fd is not None and landlocked is None else (),
        )

    if landlocked is None:
        proc = _popen()
    else:
        try:
            proc = _restricted_thread(landlocked, _popen)
        finally:
            landlocked.close()
    return proc


def run(
    argv: Sequence[str],
    policy: SandboxPolicy,
    *,
    stdin: bytes | None = None,
    max_output: int = 8 << 20,
) -> SandboxRun:
    """Run ``argv`` under ``policy`` and wait for it; never unsandboxed.

    Raises :class:`SandboxUnavailable` when :func:`probe` finds no working sandbox.
    """
    status = probe()
    if not status.available:
        raise SandboxUnavailable(f"no sandbox can run here ({status.detail})", fix=status.fix)
    limits = policy.limits
    started = time.monotonic()
    usage_r, usage_w = os.pipe() if status.backend is SandboxBackend.BWRAP else (-1, -1)
    try:
        proc = _start(argv, policy, status, stdin is not None, usage_w if usage_w >= 0 else None)
    finally:
        if usage_w >= 0:
            os.close(usage_w)
    assert proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    usage: list[bytes] = []
    cut = [False]
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, max_output, out, cut), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, max_output, err, cut), daemon=True),
    ]
    if usage_r >= 0:  # capped: where no low descriptor was free, the program holds it too
        reaper = os.fdopen(usage_r, "rb")
        readers.append(
            threading.Thread(target=_drain, args=(reaper, 4096, usage, [False]), daemon=True)
        )
    for reader in readers:
        reader.start()
    if stdin is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    timed_out = threading.Event()

    def _expire() -> None:
        timed_out.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = None
    if limits.wall_seconds is not None:
        timer = threading.Timer(limits.wall_seconds, _expire)
        timer.daemon = True
        timer.start()
    _, status_word, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status_word)
    if timer is not None:
        timer.cancel()
    for reader in readers:
        reader.join()
    wall = time.monotonic() - started
    code = proc.returncode
    stderr = b"".join(err)
    reaped = _reaped_cpu(b"".join(usage)) if usage_r >= 0 else None
    cpu = rusage.ru_utime + rusage.ru_stime if reaped is None else reaped
    hit = _limits_hit(limits, code, cpu, stderr, wall=timed_out.is_set(), output=cut[0])
    if code < 0:
        code = _SIGNAL_BASE - code
    return SandboxRun(code, b"".join(out), stderr, status.backend, hit, wall, cpu)


def _limits_hit(
    limits: Limits, code: int, cpu: float, stderr: bytes, *, wall: bool, output: bool
) -> tuple[str, ...]:
    """Which limits a finished run reached (``cpu``: the program's CPU seconds)."""
    hit: list[str] = ["wall"] if wall else []
    if limits.cpu_seconds is not None and (
        code in (-signal.SIGXCPU, _SIGNAL_BASE + signal.SIGXCPU) or cpu >= limits.cpu_seconds
    ):
        hit.append("cpu")
    if limits.memory_bytes is not None and (
        b"MemoryError" in stderr or b"Cannot allocate memory" in stderr
    ):
        hit.append("memory")
    if output:
        hit.append("output")
    return tuple(hit)
