"""Issue 27 through ``infomark run``'s own tools: the agent's commands run in the OS sandbox.

The attacks of the issue, each run by the runner's real ``bash`` tool under real bubblewrap
(or, for the file tools, through their path checks): a script that opens the home with the
Python API to mint evidence, a write into a package the hook imports, ``cat`` of the operator
token, and the escapes a program inside could try. The honest commands keep working.
Where bubblewrap cannot run these tests skip loudly (and fail under CI).
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools import sandbox
from infomark.tools.agent_sandbox import agent_paths, agent_policy, check_path, hook_environment
from infomark.tools.launcher import search_paths
from infomark.tools.runner.tools import UNSANDBOXED, file_tools

STATUS = sandbox.probe()
if not STATUS.available:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI must run the sandbox tests: {STATUS.detail}; {STATUS.fix}")
    pytest.skip(
        f"SKIPPED LOUDLY: no sandbox here ({STATUS.detail}); {STATUS.fix}", allow_module_level=True
    )

PY = sys.executable
MINT = """\
import sys
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
gk = Gatekeeper.open(sys.argv[1], session="agent")
call = ToolCall("Bash", {"command": "pytest -q"})
record = gk.record(call, ToolOutcome("1 passed", exit_code=0), call_id=gk.authorize(call).call_id)
print("MINTED", record.ref)
"""


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    home = project / ".infomark"
    Gatekeeper.open(home, session="agent", root=project).close()
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return project, home


def sh(project: Path, home: Path, command: str) -> ToolOutcome:
    tools = file_tools(project, home=home, bash_timeout=60, output_cap=20_000)
    return tools["bash"].run(ToolCall("bash", {"command": command}))


def _evidence_count(home: Path, project: Path) -> int:
    gk = Gatekeeper.open(home, session="agent", root=project)
    try:
        return len(gk.store.journal.evidence_rows())
    finally:
        gk.close()


def test_a_script_using_the_python_api_cannot_mint_evidence(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    (project / "mint.py").write_text(MINT)
    before = _evidence_count(home, project)
    key = (home / "key").read_bytes()
    out = sh(project, home, f"PYTHONPATH={os.pathsep.join(search_paths())} {PY} mint.py {home}")
    text = str(out.output)
    assert "MINTED" not in text
    assert out.exit_code != 0, text
    assert _evidence_count(home, project) == before
    assert (home / "key").read_bytes() == key  # not replaced either
    # the control: the same script outside the sandbox does mint (the attack is real)
    import subprocess

    done = subprocess.run(
        [PY, "mint.py", str(home)], cwd=project, capture_output=True, text=True, check=False
    )
    assert "MINTED ev_" in done.stdout, done.stderr


@pytest.mark.parametrize(
    "command",
    [
        "cat .infomark/key",
        "cat {home}/key",
        "cat /proc/1/root{home}/key",
        "cat /proc/self/root{home}/key",
        "ln -s {home}/key k && cat k",
        "ln -s {home} h && cat h/key",
        "cp -r {home} /tmp/copy && cat /tmp/copy/key",
        "sqlite3 {home}/ledger.db .dump || od -c {home}/ledger.db",
        "ls -a {home}",
        "umount {home} ; cat {home}/key",
        "umount -l {home} ; cat {home}/key",
        "unshare -U -r cat {home}/key",
        "unshare -m -r sh -c 'umount {home}; cat {home}/key'",
        "mount --bind / /mnt 2>&1; cat /mnt{home}/key",
    ],
)
def test_the_key_cannot_be_read_from_inside(tmp_path: Path, command: str) -> None:
    project, home = _setup(tmp_path)
    key = (home / "key").read_bytes()
    out = sh(project, home, command.format(home=home))
    assert key.hex() not in str(out.output).replace(" ", "")
    assert "ledger.db" not in str(out.output) or "No such file" in str(out.output)
    assert not (project / "k").exists() or (project / "k").is_symlink()


def test_the_callers_processes_cannot_be_traced_or_read(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    me = os.getpid()
    out = sh(
        project, home, f"cat /proc/{me}/environ; cat /proc/{me}/cmdline; kill -0 {me} && echo ALIVE"
    )
    assert "ALIVE" not in str(out.output) and "PATH=" not in str(out.output)
    if shutil.which("gdb"):
        out = sh(project, home, f"gdb -p {me} -batch -ex 'info proc' 2>&1")
        assert "ptrace: No such process" in str(out.output), out.output


def test_a_poisoned_package_the_hook_imports_cannot_be_written(tmp_path: Path) -> None:
    """A copy of tree_sitter inside the project's tree (a venv in the project): the policy
    keeps the hook's environment read-only, so the early exit is never written."""
    project, home = _setup(tmp_path)
    venv_site = project / ".venv" / "lib" / "site-packages"
    package = venv_site / "tree_sitter"
    package.mkdir(parents=True)
    init = package / "__init__.py"
    init.write_text("# the real package\n")
    policy = agent_policy(home, project, env=dict(os.environ), environment=[str(venv_site)])
    evil = "import os, sys\\nif 'hook' in sys.argv: os._exit(0)\\n"
    done = sandbox.run(
        ["bash", "-c", f"printf '{evil}' >> {init}; mv {init} {init}.x; echo gone > {package}/x"],
        policy,
    )
    assert init.read_text() == "# the real package\n"
    assert sorted(p.name for p in package.iterdir()) == ["__init__.py"]
    assert b"Read-only file system" in done.stderr
    done = sandbox.run(["bash", "-c", "echo ok > new.py && cat new.py"], policy)
    assert done.stdout == b"ok\n"  # the rest of the project stays writable


def test_the_hook_environment_is_the_whole_python_environment() -> None:
    env = hook_environment()
    assert os.path.realpath(sys.prefix) in env
    import tree_sitter

    assert any(os.path.realpath(tree_sitter.__file__).startswith(p + "/") for p in env), (
        "tree_sitter's directory must be read-only to the agent"
    )
    import infomark

    assert any(os.path.realpath(infomark.__file__).startswith(p + "/") for p in env)


def test_the_operator_token_cannot_be_read(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    user = tmp_path / "user"
    config = user / ".config" / "infomark"
    config.mkdir(parents=True)
    token = config / "operator-token"
    token.write_text("operator-token-0123456789abcdef\n")
    named = tmp_path / "elsewhere.token"
    named.write_text("named-token-0123456789abcdef\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(user)}
    policy = agent_policy(home, project, env=env, private=[named])
    done = sandbox.run(["bash", "-c", f"cat {token}; cat {named}; ls -a {config}"], policy)
    assert b"operator-token-" not in done.stdout and b"named-token" not in done.stdout


def test_transcripts_and_hook_settings_are_out_of_reach(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    user = tmp_path / "user"
    transcripts = user / ".claude" / "projects" / "p"
    transcripts.mkdir(parents=True)
    (transcripts / "s.jsonl").write_text('{"head": "witness"}\n')
    claude = project / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text('{"hooks": {}}\n')
    (claude / "infomark-hook").write_text("#!/bin/sh\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(user)}
    policy = agent_policy(home, project, env=env)
    done = sandbox.run(
        [
            "bash",
            "-c",
            f"cat {transcripts}/s.jsonl; echo '{{}}' > .claude/settings.json; "
            "cp /bin/true .claude/infomark-hook; rm -f .claude/infomark-hook",
        ],
        policy,
    )
    assert b"witness" not in done.stdout
    assert (claude / "settings.json").read_text() == '{"hooks": {}}\n'
    assert (claude / "infomark-hook").read_text() == "#!/bin/sh\n"


def test_the_honest_commands_meet_no_friction(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    (project / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    out = sh(project, home, f"{PY} -m pytest -q -p no:cacheprovider")
    assert out.exit_code == 0 and "1 passed" in str(out.output), out.output
    scratch = f"/tmp/agentbox-{os.getpid()}-{tmp_path.name}"
    try:
        assert sh(project, home, f"echo kept > {scratch}").exit_code == 0
        assert str(sh(project, home, f"cat {scratch}").output) == "kept\n"  # /tmp is shared
    finally:
        Path(scratch).unlink(missing_ok=True)
    out = sh(
        project,
        home,
        "mkdir -p src && echo 'x = 1' > src/m.py && git init -q . && git add src && echo ok",
    )
    assert str(out.output).strip().endswith("ok"), out.output


@pytest.mark.parametrize(
    "path",
    [
        ".infomark/key",
        "{home}/key",
        "/proc/self/root{home}/key",
        "link",
        "dirlink/key",
        "/proc/1/root{home}/key",
    ],
)
def test_the_file_tools_resolve_symlinks_and_proc_links(tmp_path: Path, path: str) -> None:
    project, home = _setup(tmp_path)
    (project / "link").symlink_to(home / "key")
    (project / "dirlink").symlink_to(home)
    tools = file_tools(project, home=home, bash_timeout=60, output_cap=20_000)
    key = (home / "key").read_bytes()
    where = path.format(home=home)
    read = tools["read"].run(ToolCall("read", {"file_path": where}))
    assert read.is_error and ("hides" in str(read.error) or "may not open" in str(read.error)), read
    write = tools["write"].run(ToolCall("write", {"file_path": where, "content": "x"}))
    assert write.is_error
    assert (home / "key").read_bytes() == key
    grep = tools["grep"].run(ToolCall("grep", {"pattern": "."}))
    assert key.decode("latin-1") not in str(grep.output)


def test_check_path_refuses_proc_fd_links_and_read_only_trees(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    policy = agent_policy(home, project, env={}, environment=[str(project / "vendor")])
    with (home / "key").open("rb") as f:
        assert check_path(policy, f"/proc/self/fd/{f.fileno()}", write=False) is not None
    assert check_path(policy, f"/proc/{os.getpid()}/environ", write=False) is not None
    assert "read-only" in str(check_path(policy, project / "vendor" / "x.py", write=True))
    assert check_path(policy, "/etc/passwd", write=True) is not None
    assert check_path(policy, project / "calc.py", write=True) is None
    assert check_path(policy, "/etc/hostname", write=False) is None


def test_without_a_sandbox_enforcing_refuses_and_observe_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = _setup(tmp_path)
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin".replace("/usr/bin:/bin", str(empty)))
    monkeypatch.setattr("infomark.tools.landlock.abi", lambda: 0)  # and no Landlock either
    try:
        assert not sandbox.probe(refresh=True).available
        enforcing = file_tools(project, home=home, bash_timeout=60, output_cap=2000)
        out = enforcing["bash"].run(ToolCall("bash", {"command": "/bin/touch ran"}))
        assert out.is_error and UNSANDBOXED in str(out.error)
        assert "apt-get install -y bubblewrap" in str(out.error)
        assert not (project / "ran").exists()
        observe = file_tools(project, home=home, bash_timeout=60, output_cap=2000, enforcing=False)
        out = observe["bash"].run(ToolCall("bash", {"command": "/bin/touch ran"}))
        assert UNSANDBOXED in str(out.output) and (project / "ran").exists()
    finally:
        monkeypatch.undo()
        assert sandbox.probe(refresh=True).available


def test_the_policy_lists(tmp_path: Path) -> None:
    project, home = _setup(tmp_path)
    user = tmp_path / "user"
    paths = agent_paths(home, project, environ={"HOME": str(user), "INFOMARK_HOME": "/srv/h"})
    assert str(home.resolve()) in paths.hidden and "/srv/h" in paths.hidden
    assert str(user / ".claude" / "projects") in paths.hidden
    assert str(user / ".config" / "infomark") in paths.hidden
    assert str(project.resolve() / ".claude" / "infomark-hook") in paths.read_only
    assert str(project.resolve()) in paths.writable
    policy = replace(agent_policy(home, project, env={}), network=False)
    assert policy.cwd == str(project.resolve())


def test_a_whole_runner_session_cannot_mint(tmp_path: Path) -> None:
    """Through ``Runner`` (what ``infomark run`` drives): the model writes mint.py and runs it;
    no evidence appears for a call the runner did not make, and the claim stays ungrounded."""
    from infomark.tools.runner import AgentSpec, ModelSpec, Runner, ScriptedModelServer
    from infomark.tools.runner.scripted import call, reply, tool_results

    project, home = _setup(tmp_path)
    ledger = textwrap.dedent(
        """\
        claim_ledger:
          claims:
            - id: C1
              text: "add works"
              status: Hypothetical
              falsifier: "pytest -q fails"
              oracle: "pytest -q"
          premises_for_plan: [C1]
        """
    )
    path = os.pathsep.join(search_paths())
    with ScriptedModelServer() as server:
        server.add(
            "m",
            reply(ledger, call("write", file_path="mint.py", content=MINT)),
            reply("", call("bash", command=f"PYTHONPATH={path} {PY} mint.py {home}")),
            lambda req: reply("RESULT " + "\n".join(tool_results(req))),
        )
        spec = AgentSpec(name="t", model=ModelSpec(url=server.url, name="scripted", retries=0))
        with Runner(spec, home=home, session="m", root=project) as runner:
            result = runner.start("make the tests pass")
            status = runner.gk.ledger().status("C1")
            verified = runner.gk.audit(verify=True).verified
    assert "MINTED" not in result.final_text
    assert str(status) != "Exact" and verified
