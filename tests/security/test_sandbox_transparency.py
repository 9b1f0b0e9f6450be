"""Issue 27: the agent's sandbox does not change what ordinary development commands do.

Each command runs twice, in a fresh copy of a temporary project at the same path: once bare (as the
runner ran it before the sandbox) and once under :func:`agent_policy` through the real sandbox.
The exit code, the output (the copy's path written as ``<P>``) and the resulting tree must be
the same. The commands: pytest, git, ``pip install`` into the project's own virtual
environment, make, npm test, and a Hypothesis sample of the read-only commands of the labelled
corpus (tests/corpus; those that reach the network, the clock or the whole disk left out).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infomark.tools import sandbox
from infomark.tools.agent_sandbox import agent_policy

STATUS = sandbox.probe()
if not STATUS.available:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI must run the sandbox tests: {STATUS.detail}; {STATUS.fix}")
    pytest.skip(
        f"SKIPPED LOUDLY: no sandbox here ({STATUS.detail}); {STATUS.fix}", allow_module_level=True
    )

CORPUS = Path(__file__).parents[1] / "corpus" / "agent_commands.jsonl"
_UNSTABLE = (
    "curl", "wget", "http", "find /", "du ", "df", "sleep", "date", "time", "ps ", "top",
    "RANDOM", "uptime", "env", "/proc", "free", "ls /tmp", "ssh", "nc ", "pip download",
    "pip index", "npm view", "npm info", "git fetch", "git pull", "git clone", "git ls-remote",
    "/testbed", "~", "$HOME", "locate", "which", "whoami", "id ", "hostname", "lsof", "netstat",
    "docker", "systemctl", "journalctl", "kill", "nproc", "/dev/", "cat /", "ls /", "tree /",
    "stat ", "pydoc", "help(", "ls -l", "ls -a", "-newer", "mtime",
)  # fmt: skip
READS = sorted(
    row["command"]
    for row in map(json.loads, CORPUS.read_text("utf-8").splitlines())
    if row["label"] == "read" and not any(u in row["command"] for u in _UNSTABLE)
)

MAKEFILE = (
    "all: out.txt\n\nout.txt: calc.py\n\techo built > out.txt\n\n"
    "check:\n\tpython3 -c 'import calc'\n"
)
PACKAGE_JSON = {"name": "p", "version": "1.0.0", "scripts": {"test": "node check.js"}}


def _wheel(dist: Path) -> Path:
    """A minimal pure-Python wheel (no build backend, no network)."""
    dist.mkdir()
    path = dist / "tinypkg-1.0-py3-none-any.whl"
    files = {
        "tinypkg/__init__.py": "VALUE = 42\n",
        "tinypkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{n},,\n" for n in files) + "tinypkg-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in {**files, "tinypkg-1.0.dist-info/RECORD": record}.items():
            z.writestr(name, text)
    return path


def _project(base: Path) -> Path:
    project = base / "project"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "tests" / "test_calc.py").write_text(
        "import sys, os\nsys.path.insert(0, os.getcwd())\nfrom calc import add\n\n"
        "def test_add():\n    assert add(1, 2) == 3\n\n"
        "def test_fails():\n    assert add(1, 1) == 3\n"
    )
    (project / "Makefile").write_text(MAKEFILE)
    (project / "package.json").write_text(json.dumps(PACKAGE_JSON))
    (project / "check.js").write_text(
        "process.exit(require('./package.json').version === '1.0.0' ? 0 : 1)\n"
    )
    _wheel(project / "dist")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True
    )
    home = project / ".infomark"
    home.mkdir(mode=0o700)
    (home / "key").write_bytes(os.urandom(32))
    (home / ".gitignore").write_text("*\n")  # as every home has
    return project


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _project(tmp_path_factory.mktemp("template")).parent


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".pytest_cache", ".git")]
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p.relative_to(root))] = "-> " + os.readlink(p).replace(str(root), "<P>")
            else:
                out[str(p.relative_to(root))] = hashlib.sha256(
                    p.read_bytes().replace(str(root).encode(), b"<P>")
                ).hexdigest()
    return out


def _both(template: Path, base: Path, command: str) -> tuple[tuple[object, ...], ...]:
    """Run ``command`` bare in one copy and sandboxed in another; what each did."""
    results = []
    root = base / "run"  # the same path for both (pip records absolute paths, hashed)
    for mode in ("bare", "sandboxed"):
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(template, root, symlinks=True)
        project = root / "project"
        user = root / "user"
        user.mkdir()
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(user),
            "LANG": "C.UTF-8",
            "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@b", "GIT_CONFIG_NOSYSTEM": "1",
        }  # fmt: skip
        argv = ["bash", "-c", command]
        if mode == "bare":
            done = subprocess.run(
                argv, cwd=project, env=env, capture_output=True, timeout=120, check=False
            )
            code, out = done.returncode, done.stdout + done.stderr
        else:
            policy = agent_policy(project / ".infomark", project, env=env)
            ran = sandbox.run(argv, policy)
            code, out = ran.exit_code, ran.stdout + ran.stderr
        text = out.decode("utf-8", "replace").replace(str(root), "<P>")
        text = re.sub(r"in \d+\.\d+s", "in Ns", text)  # pytest's own timing
        tree = _tree(project)
        for name in (".infomark/key", ".infomark/.gitignore"):
            tree.pop(name, None)  # hidden inside: never compared
        results.append((code, text, tree))
    return tuple(results)


DEV = [
    f"{sys.executable} -m pytest -q -p no:cacheprovider tests",
    f"{sys.executable} -m pytest -q -p no:cacheprovider tests -k add",
    "git init -q . && git add calc.py tests && git commit -qm one && git log --format=%s",
    "git init -q . && git status --short | sort",
    f"{sys.executable} -m pip --python .venv/bin/python install -q --no-index --no-deps "
    "dist/tinypkg-1.0-py3-none-any.whl && "
    ".venv/bin/python -c 'import tinypkg; print(tinypkg.VALUE)'",
    "make && cat out.txt && make check",
    "make nothing-here",
    "npm test --silent",
    "npm test --silent -- --extra; echo $?",
]


@pytest.mark.parametrize("command", DEV)
def test_development_commands_do_the_same_in_the_sandbox(
    template: Path, tmp_path: Path, command: str
) -> None:
    bare, boxed = _both(template, tmp_path, command)
    assert boxed == bare, (command, bare[:2], boxed[:2])


def test_the_corpus_sample_is_large_enough() -> None:
    assert len(READS) >= 200, len(READS)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(command=st.sampled_from(READS))
def test_read_only_corpus_commands_do_the_same_in_the_sandbox(
    template: Path, tmp_path_factory: pytest.TempPathFactory, command: str
) -> None:
    bare, boxed = _both(template, tmp_path_factory.mktemp("c"), command)
    assert boxed == bare, (command, bare[:2], boxed[:2])
