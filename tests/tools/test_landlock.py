"""The Landlock backend, with bubblewrap made unavailable (a PATH without ``bwrap``).

The same attacks as tests/security/test_agent_sandbox.py, run by the real kernel's Landlock:
the key cannot be read (through the path, a link, /proc), the Python API cannot mint, the hook's
environment and launcher cannot be written, the project's directories stay writable. Skips
loudly where the kernel has no Landlock.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.tools import landlock, sandbox
from infomark.tools.agent_sandbox import agent_policy
from infomark.tools.launcher import search_paths

if landlock.abi() < 1:
    pytest.skip("SKIPPED LOUDLY: this kernel has no Landlock", allow_module_level=True)


@pytest.fixture(scope="module")
def no_bwrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PATH with every program of /usr/bin and /bin but bwrap; the probe then falls back."""
    where = tmp_path_factory.mktemp("nobwrap")
    for folder in ("/usr/bin", "/bin"):
        for name in os.listdir(folder):
            target = where / name
            if name != "bwrap" and not target.exists():
                target.symlink_to(os.path.join(folder, name))
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{Path(sys.executable).parent}:{where}"
    try:
        status = sandbox.probe(refresh=True)
        assert status.backend is sandbox.SandboxBackend.LANDLOCK, status
        yield os.environ["PATH"]
    finally:
        os.environ["PATH"] = old
        sandbox.probe(refresh=True)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    home = project / ".infomark"
    Gatekeeper.open(home, session="agent", root=project).close()
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return project, home


def _run(policy: sandbox.SandboxPolicy, command: str) -> sandbox.SandboxRun:
    return sandbox.run(["bash", "-c", command], policy)


def test_the_probe_says_what_landlock_does_not_do(no_bwrap: str) -> None:
    status = sandbox.probe()
    assert status.available and "bubblewrap" in status.fix
    assert "no private /tmp" in status.detail


@pytest.mark.parametrize(
    "command",
    [
        "cat .infomark/key",
        "cat {home}/key",
        "cat /proc/self/root{home}/key",
        "ln -s {home}/key src/k; cat src/k",
        "ln -s {home} src/h; cat src/h/key",
        "cp {home}/key src/copy; cat src/copy",
        "od -c {home}/ledger.db | head",
        "unshare -U -r cat {home}/key",
    ],
)
def test_the_key_cannot_be_read(no_bwrap: str, tmp_path: Path, command: str) -> None:
    project, home = _setup(tmp_path)
    key = (home / "key").read_bytes()
    done = _run(agent_policy(home, project, env=dict(os.environ)), command.format(home=home))
    assert key not in done.stdout and b"SQLite" not in done.stdout
    assert key.hex().encode() not in done.stdout


def test_the_python_api_cannot_mint(no_bwrap: str, tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    (project / "mint.py").write_text(
        "from infomark.gatekeeper import Gatekeeper\n"
        "from infomark.ledger.calls import ToolCall, ToolOutcome\n"
        "gk = Gatekeeper.open('.infomark', session='agent')\n"
        "c = ToolCall('Bash', {'command': 'pytest -q'})\n"
        "print('MINTED', gk.record(c, ToolOutcome('ok', exit_code=0), "
        "call_id=gk.authorize(c).call_id).ref)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(search_paths())}
    done = _run(agent_policy(home, project, env=env), f"{sys.executable} mint.py")
    assert b"MINTED" not in done.stdout and done.exit_code != 0
    assert b"Permission denied" in done.stderr or b"cannot" in done.stderr, done.stderr


def test_the_hook_environment_and_launcher_cannot_be_written(no_bwrap: str, tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    site = project / "venv" / "site-packages"
    (site / "tree_sitter").mkdir(parents=True)
    init = site / "tree_sitter" / "__init__.py"
    init.write_text("# real\n")
    (project / ".claude").mkdir()
    hook = project / ".claude" / "infomark-hook"
    hook.write_text("#!/bin/sh\n")
    policy = agent_policy(home, project, env=dict(os.environ), environment=[str(site)])
    done = _run(
        policy,
        f"echo 'import os; os._exit(0)' >> {init}; rm -f {init}; cp /bin/true {hook}; "
        f"rm -f {hook}; echo ok > src/new.py; cat src/new.py; echo edit >> calc.py",
    )
    assert init.read_text() == "# real\n" and hook.read_text() == "#!/bin/sh\n"
    assert done.stdout == b"ok\n"  # a new file in a project directory: written
    assert calc_ends_with_edit(project)


def calc_ends_with_edit(project: Path) -> bool:
    return (project / "calc.py").read_text().endswith("edit\n")


def test_the_honest_commands_run(no_bwrap: str, tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    (project / "tests").mkdir()
    (project / "tests" / "test_calc.py").write_text(
        "import sys, os\nsys.path.insert(0, os.getcwd())\nfrom calc import add\n\n"
        "def test_add():\n    assert add(1, 2) == 3\n"
    )
    policy = agent_policy(home, project, env=dict(os.environ))
    done = _run(policy, f"{sys.executable} -m pytest -q -p no:cacheprovider tests")
    assert done.exit_code == 0 and b"1 passed" in done.stdout, done.stdout + done.stderr
    done = _run(policy, "git init -q src && git -C src status --short && echo ok")
    assert done.stdout.endswith(b"ok\n"), done.stderr


def test_a_nested_ruleset_cannot_lift_the_restriction(no_bwrap: str, tmp_path: Path) -> None:
    """Inside, the agent applies a ruleset of its own that grants everything: Landlock layers
    only ever narrow, so the key stays unreadable."""
    project, home = _setup(tmp_path)
    inner = landlock.script_argv(
        ["cat", str(home / "key")], cwd="/", rule_list=[("/", landlock.READ)], network=True
    )
    done = _run(agent_policy(home, project, env=dict(os.environ)), " ".join(inner))
    assert (home / "key").read_bytes() not in done.stdout
    assert b"Permission denied" in done.stderr, done.stderr
    inner = landlock.script_argv(
        ["cat", str(home / "key")], cwd="/", rule_list=[("/", landlock.READ)], network=True
    )
    direct = subprocess.run(inner, capture_output=True, check=False)  # the control: outside
    assert direct.stdout == (home / "key").read_bytes()


def test_the_rules_are_applied_in_the_child_and_a_failure_runs_nothing(
    no_bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sandbox.run`` applies the rules in a thread of its own that then starts the program
    (no interpreter per command): the program is restricted, infomark's process is not; when
    the rules cannot be applied, nothing runs and the caller is told (never unsandboxed)."""
    project, home = _setup(tmp_path)
    policy = agent_policy(home, project, env=dict(os.environ))
    done = _run(policy, "grep -c 'NoNewPrivs:.1' /proc/self/status")
    assert done.stdout.strip() == b"1", done  # the restriction's no_new_privs: the program's own
    assert b"Permission denied" in _run(policy, f"cat {home / 'key'}").stderr
    key = (home / "key").read_bytes()  # this process, and what it starts unsandboxed, still can
    assert subprocess.run(["cat", str(home / "key")], capture_output=True).stdout == key

    def broken(*_a: object, **_k: object) -> None:
        raise SystemExit(126)

    monkeypatch.setattr(landlock, "restrict_self", broken)
    marker = project / "ran"
    with pytest.raises(sandbox.SandboxUnavailable, match="nothing was run"):
        _run(policy, f"touch {marker}")
    assert not marker.exists()
