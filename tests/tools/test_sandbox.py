"""The sandbox module against the real bubblewrap: what a program inside can and cannot reach.

Every test runs real programs under real ``bwrap``. Where bubblewrap cannot run the tests skip
with the reason printed; under CI (``CI=true``, where ``.ci/run`` installs bubblewrap) a
missing sandbox is a failure, never a skip.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.tools import sandbox
from infomark.tools.sandbox import Limits, SandboxPolicy, SandboxUnavailable, clean_env

STATUS = sandbox.probe()
if not STATUS.available:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI must run the sandbox tests: {STATUS.detail}; {STATUS.fix}")
    pytest.skip(
        f"SKIPPED LOUDLY: no sandbox here ({STATUS.detail}); {STATUS.fix}", allow_module_level=True
    )


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    home = project / ".infomark"
    home.mkdir(parents=True)
    (home / "key").write_text("SECRET-KEY-MATERIAL\n")
    (home / "key").chmod(0o600)
    (project / "src.py").write_text("x = 1\n")
    return project, home


def _policy(project: Path, **kw: object) -> SandboxPolicy:
    # this interpreter's environment stays reachable when it lives under /tmp (a clone there)
    base: dict[str, object] = {
        "cwd": str(project),
        "writable": (str(project),),
        "read_only": (sys.prefix,),
        "env": clean_env(),
    }
    base.update(kw)
    return SandboxPolicy(**base)  # type: ignore[arg-type]


def sh(script: str, policy: SandboxPolicy, **kw: object) -> sandbox.SandboxRun:
    return sandbox.run(["/bin/sh", "-c", script], policy, **kw)  # type: ignore[arg-type]


def test_the_project_is_writable_and_the_change_is_kept(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sh("echo y = 2 >> src.py && cat src.py", _policy(project))
    assert done.exit_code == 0, done.stderr
    assert done.stdout == b"x = 1\ny = 2\n"
    assert (project / "src.py").read_text() == "x = 1\ny = 2\n"
    assert done.backend is sandbox.SandboxBackend.BWRAP


def test_a_hidden_home_cannot_be_read_listed_or_written(tmp_path: Path) -> None:
    project, home = _project(tmp_path)
    policy = _policy(project, hidden=(str(home),))
    done = sh("cat .infomark/key; ls -A .infomark; echo x > .infomark/key", policy)
    assert b"SECRET" not in done.stdout + done.stderr
    assert b"No such file" in done.stderr
    assert b"Read-only file system" in done.stderr
    assert (home / "key").read_text() == "SECRET-KEY-MATERIAL\n"


def test_a_symlink_planted_in_the_project_does_not_reach_the_hidden_home(tmp_path: Path) -> None:
    project, home = _project(tmp_path)
    (project / "link").symlink_to(home)
    (project / "keylink").symlink_to(home / "key")
    done = sh("cat link/key keylink", _policy(project, hidden=(str(home),)))
    assert b"SECRET" not in done.stdout
    assert done.exit_code != 0


def test_a_hidden_file_reads_empty(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    token = tmp_path / "operator-token"
    token.write_text("OPERATOR-SECRET")
    done = sh(f"cat {token}", _policy(project, hidden=(str(token),)))
    assert done.stdout == b""


def test_a_read_only_tree_inside_the_project_cannot_be_written(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    baseline = project / "baseline"
    baseline.mkdir()
    (baseline / "test_a.py").write_text("def test_a():\n    assert False\n")
    done = sh(
        "echo 'def test_a(): pass' > baseline/test_a.py",
        _policy(project, read_only=(str(baseline),)),
    )
    assert done.exit_code != 0
    assert b"Read-only file system" in done.stderr
    assert "assert False" in (baseline / "test_a.py").read_text()


def test_everything_outside_the_writable_trees_is_read_only(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sh("touch /etc/infomark-sandbox-probe; touch /usr/infomark-probe", _policy(project))
    assert done.stderr.count(b"Read-only file system") == 2
    assert not Path("/etc/infomark-sandbox-probe").exists()


def test_tmp_is_private_and_the_hosts_tmp_is_not_visible(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("host tmp")
    done = sh(f"cat {outside}; echo scratch > /tmp/s && cat /tmp/s", _policy(project))
    assert b"host tmp" not in done.stdout
    assert done.stdout.endswith(b"scratch\n")


def test_the_environment_is_clean_unless_a_variable_is_named(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    base = {
        "PATH": "/usr/bin:/bin",
        "PYTEST_ADDOPTS": "-k nothing",
        "PYTHONPATH": "/evil",
        "MAKEFLAGS": "-n",
        "LC_ALL": "C",
        "KEEP_ME": "1",
    }
    env = clean_env(["KEEP_ME"], base=base)
    done = sh("env", _policy(project, env=env))
    names = {line.split(b"=", 1)[0] for line in done.stdout.splitlines()}
    assert b"PYTEST_ADDOPTS" not in names and b"PYTHONPATH" not in names
    assert b"MAKEFLAGS" not in names
    assert {b"KEEP_ME", b"LC_ALL", b"PATH"} <= names


def test_the_network_is_closed_by_default(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
    try:
        closed = sandbox.run([sys.executable, "-c", probe], _policy(project))
        opened = sandbox.run([sys.executable, "-c", probe], _policy(project, network=True))
    finally:
        server.close()
    assert closed.exit_code != 0
    assert b"ConnectionRefusedError" in closed.stderr or b"unreachable" in closed.stderr
    assert opened.exit_code == 0, opened.stderr


def test_the_hiding_mounts_cannot_be_undone_from_inside(tmp_path: Path) -> None:
    project, home = _project(tmp_path)
    policy = _policy(project, hidden=(str(home),))
    for script in (
        "umount .infomark && cat .infomark/key",
        "umount -l .infomark && cat .infomark/key",
        "unshare -Urm sh -c 'umount .infomark; cat .infomark/key'",
        f"cat /proc/1/root{home}/key",
        f"cat /proc/{os.getpid()}/root{home}/key",
        "mount -o remount,rw / && echo remounted",
    ):
        done = sh(script, policy)
        assert b"SECRET" not in done.stdout, script
        assert b"remounted" not in done.stdout, script


def test_the_callers_processes_are_not_visible(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sh(
        f"test -e /proc/{os.getpid()} && echo visible; ls /proc | grep -c '^[0-9]'",
        _policy(project),
    )
    assert b"visible" not in done.stdout
    assert int(done.stdout.split()[-1]) <= 5  # bwrap's init, the reaper, the shell, ls, grep


def test_the_wall_clock_limit_stops_a_runaway_run(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sh("sleep 300", _policy(project, limits=Limits(wall_seconds=0.5)))
    assert "wall" in done.limits_hit
    assert done.exit_code != 0


def test_the_cpu_limit_stops_a_busy_loop(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sandbox.run(
        [sys.executable, "-c", "while True: pass"],
        _policy(project, limits=Limits(cpu_seconds=1, wall_seconds=120)),
    )
    assert "cpu" in done.limits_hit
    assert "wall" not in done.limits_hit
    assert done.exit_code != 0


_BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass\n"


def test_the_reported_cpu_time_is_the_programs_not_bubblewraps(tmp_path: Path) -> None:
    """bubblewrap's PID namespace keeps its children's usage from ``wait4``: the reaper inside
    the sandbox counts it (before it, a busy program reported bubblewrap's ~2 ms)."""
    project, _ = _project(tmp_path)
    done = sandbox.run([sys.executable, "-c", _BUSY.format(0.4)], _policy(project))
    assert done.exit_code == 0, done.stderr
    assert 0.35 <= done.cpu_seconds < 5
    assert done.stderr == b""  # the reaper writes to its own pipe, not the program's output


@pytest.mark.parametrize("spare", [0, 12])
def test_the_program_cannot_write_its_own_cpu_time(tmp_path: Path, spare: int) -> None:
    """The reaper's pipe is closed for the program: writing a made-up ``times`` line to every
    descriptor it holds leaves the recorded CPU time the program's own."""
    project, _ = _project(tmp_path)
    forge = (
        "import os\n"
        "for n in os.listdir('/proc/self/fd'):\n"
        "    try: os.write(int(n), b'0m0.000s 0m0.000s\\n0m0.000s 0m0.000s\\n')\n"
        "    except OSError: pass\n"
        "print(sorted(int(n) for n in os.listdir('/proc/self/fd')))\n" + _BUSY.format(0.4)
    )
    # with descriptors held in the parent, the pipe's is above 9 (POSIX sh cannot close it)
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(spare)]
    try:
        done = sandbox.run([sys.executable, "-c", forge], _policy(project))
    finally:
        for fd in held:
            os.close(fd)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines()[-1] == b"[0, 1, 2, 3]"  # 3: the listing's own directory
    assert 0.35 <= done.cpu_seconds < 5


def test_the_cpu_of_workers_together_counts_against_the_limit(tmp_path: Path) -> None:
    """``RLIMIT_CPU`` caps each process; three workers under it each, over it together, hit
    the limit as measured."""
    project, _ = _project(tmp_path)
    worker = f"{sys.executable} -c '{_BUSY.format(0.6)}'"
    done = sh(
        f"{worker} & {worker} & {worker} & wait",
        _policy(project, limits=Limits(cpu_seconds=1, wall_seconds=120)),
    )
    assert done.exit_code == 0, done.stderr
    assert done.cpu_seconds >= 1.7
    assert "cpu" in done.limits_hit


def test_the_memory_limit_stops_a_large_allocation(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sandbox.run(
        [sys.executable, "-c", "b = bytearray(2 << 30)"],
        _policy(project, limits=Limits(memory_bytes=512 << 20)),
    )
    assert "memory" in done.limits_hit
    assert done.exit_code != 0


def test_output_beyond_the_cap_is_cut_and_said(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sh("head -c 100000 /dev/zero", _policy(project), max_output=1000)
    assert len(done.stdout) == 1000
    assert "output" in done.limits_hit


def test_stdin_reaches_the_program(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    done = sh("cat", _policy(project), stdin=b"hello")
    assert done.stdout == b"hello"


def test_without_bubblewrap_nothing_runs_and_the_fix_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _ = _project(tmp_path)
    marker = project / "ran"
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    # and no Landlock either (the fallback backend; tests/tools/test_landlock.py runs it)
    monkeypatch.setattr("infomark.tools.landlock.abi", lambda: 0)
    try:
        status = sandbox.probe(refresh=True)
        assert not status.available
        assert "apt-get install -y bubblewrap" in status.fix
        with pytest.raises(SandboxUnavailable) as info:
            sh(f"touch {marker}", _policy(project))
        assert "bubblewrap" in str(info.value)
        assert not marker.exists()
    finally:
        monkeypatch.undo()
        assert sandbox.probe(refresh=True).available


@settings(max_examples=50, deadline=None)
@given(
    writable=st.lists(st.sampled_from(["/srv/p", "/srv/p/sub", "/opt/x"]), max_size=3),
    hidden=st.lists(st.sampled_from(["/", "/etc", "/etc/passwd", "/usr"]), max_size=3),
)
def test_hiding_mounts_come_after_every_bind_they_could_be_under(
    writable: list[str], hidden: list[str]
) -> None:
    argv = sandbox.command(
        ["true"], SandboxPolicy(cwd="/", writable=tuple(writable), hidden=tuple(hidden))
    )
    binds = [i for i, a in enumerate(argv) if a == "--bind"]
    hides = [i for i, a in enumerate(argv) if a in ("--tmpfs", "--ro-bind") and argv[i + 1] != "/"]
    hides = [i for i in hides if argv[i + 1] != "/tmp"]
    assert all(h > b for h in hides for b in binds)
    assert argv[argv.index("--") + 1 :] == ["true"]
    for flag in ("--unshare-user", "--disable-userns", "--die-with-parent", "--unshare-net"):
        assert flag in argv


def _fake_venv(root: Path, *, base: str) -> Path:
    """A virtual environment's layout (``pyvenv.cfg``, ``bin/python``, a script whose ``#!``
    names it) under ``root``: what :func:`sandbox.interpreter_paths` reads."""
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base}\ninclude-system-site-packages = false\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "pytest").write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\n")
    (venv / "bin" / "pytest").chmod(0o755)
    return venv


def test_the_interpreter_an_oracle_starts_is_named_with_its_base(tmp_path: Path) -> None:
    base = os.path.join(sys.base_prefix, "bin")
    venv = _fake_venv(tmp_path / "clone", base=base)
    ours = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    # by path (relative to the run's directory), through a script's #! line, and on PATH
    for words in ([".venv/bin/python"], [".venv/bin/pytest"], ["pytest"]):
        found = sandbox.interpreter_paths(
            words, path=str(venv / "bin"), cwd=str(tmp_path / "clone")
        )
        assert str(venv.resolve()) in found, words
        assert os.path.realpath(sys.base_prefix) in found
    # a word that is no Python installation adds nothing beyond this interpreter's own
    plain = sandbox.interpreter_paths(["sh", "make", "./run.sh"], cwd=str(tmp_path))
    assert set(plain) - ours <= {"/usr"}  # /usr/bin/sh: a prefix that holds lib/python3*
    assert str(tmp_path) not in " ".join(plain)


def test_a_read_only_tree_under_tmp_is_reached_and_its_hidden_part_stays_hidden(
    tmp_path: Path,
) -> None:
    project, _ = _project(tmp_path)
    env = tmp_path / "env"  # under the host's /tmp: the fresh /tmp would hide it
    (env / "private").mkdir(parents=True)
    (env / "tool.txt").write_text("reachable")
    (env / "private" / "secret").write_text("SECRET")
    policy = _policy(project, read_only=(sys.prefix, str(env)), hidden=(str(env / "private"),))
    done = sh(f"cat {env}/tool.txt; cat {env}/private/secret; echo x > {env}/tool.txt", policy)
    assert done.stdout == b"reachable"
    assert b"SECRET" not in done.stdout + done.stderr
    assert b"Read-only file system" in done.stderr
