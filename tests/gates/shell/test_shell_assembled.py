"""Code read from stdin or assembled at run time (issue 33): ``xargs -I{} sh -c '{}' <<< CODE``
and every relative the classifier knows of is resolved from visible input or is opaque.

The write cases are also run by real bash in a temporary directory, to prove that each one
really writes (so a test that expects "modify" guards a real hole), and the honest cases are
run to prove that they do not.

SAFETY: every command runs only inside pytest's tmp_path, with HOME pointing there; the only
writes are ``touch f`` and ``rm -rf src`` of a directory the test made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates.shell import classify_shell
from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall

BASH = shutil.which("bash")
PARALLEL = shutil.which("parallel")

# Forms that write `f` (or delete `src`) in real bash: each must be classified as a mutation.
# (command, must be opaque, files the bash proof creates first)
WRITES: list[tuple[str, bool, tuple[str, ...]]] = [
    ("xargs -I{} sh -c '{}' <<< 'touch f'", False, ()),  # the named hole: resolved
    ("xargs -I{} bash -c {} <<< 'touch f'", False, ()),
    ("xargs -0 -I% sh -c '%' <<< 'touch f'", False, ()),
    ("xargs -i sh -c {} <<< 'touch f'", False, ()),
    ("xargs --replace=@ sh -c @ <<< 'touch f'", False, ()),
    ("xargs -I{} python3 -c '{}' <<< 'open(chr(102), chr(119))'", False, ()),
    ("xargs sh -c <<< \"'touch f'\"", False, ()),
    ("xargs -L1 env <<< 'touch f'", False, ()),
    ("xargs -n2 env <<< 'touch f'", False, ()),
    ("xargs -I{} sh -c 'x=\"{}\"; $x' <<< 'touch f'", True, ()),
    ("printf 'touch f' | xargs -I{} sh -c {}", True, ()),
    ("echo 'touch f' | xargs -I{} sh -c {}", True, ()),
    ("echo \"'touch f'\" | xargs sh -c", True, ()),
    ("echo touch f | xargs env", True, ()),
    (  # input that closes the string literal it is pasted into
        "printf '%s\\n' 'x\"); open(\"f\", \"w\"); (\"' | xargs -d '\\n' -I% "
        "python3 -c 'print(\"%\")'",
        True,
        (),
    ),
    ("printf '%s\\n' \"x'; touch f; '\" | xargs -d '\\n' -I{} sh -c \"echo '{}'\"", True, ()),
    ("ls | parallel --pipe sh", True, ("touch f",)),
    ("echo 'touch f' | parallel --pipe sh", False, ()),
    ("xargs -a c.txt -I{} sh -c {}", True, ("c.txt",)),
    ("cat c.txt | xargs -I{} sh -c {}", True, ("c.txt",)),
    ("find . -name 'x*' -exec sh -c 'echo {}' \\;", True, ("x; touch f",)),
    ("find * -maxdepth 0 -name 'touch*' -exec sh -c {} \\;", True, ("touch f",)),
    ("sh -c sh <<< 'touch f'", False, ()),
    ("echo 'touch f' | sh -c 'sh'", False, ()),
    ("bash -c 'bash -c sh' <<< 'touch f'", False, ()),
    ("if true; then sh; fi <<< 'touch f'", False, ()),
    ("while true; do sh; break; done <<< 'touch f'", False, ()),
    ("echo 'touch f' | { sh; }", False, ()),
    ("sh /proc/self/fd/0 <<< 'touch f'", False, ()),
    ("sh //dev/./stdin <<< 'touch f'", False, ()),
    ("cd /dev && sh ./stdin <<< 'touch {tmp}/f'", False, ()),
    ('python3 /proc/self/fd/0 <<< \'open("f", "w")\'', False, ()),
    ("sh 0<<< 'touch f'", False, ()),
    ('sh -c "$(cat c.txt)"', True, ("c.txt",)),
    ("BASH_ENV=/dev/stdin bash -c : <<< 'touch f'", True, ()),
    ("bash -xc \"PS4='\\$(touch f)'; :\" 2>/dev/null", True, ()),
    ("parallel echo 'a; touch f' ::: 1", False, ()),
    ("GIT_SSH_COMMAND='touch f; :' git ls-remote ssh://h/r 2>/dev/null", False, ()),
    ("xargs -I{} sh -c '{}' <<< 'rm -rf src'", False, ()),
    ("parallel ::: 'touch f'", False, ()),
    ("parallel sh -c {} ::: 'touch f'", False, ()),
    ("echo 'touch f' | parallel", False, ()),
]

# Forms that do not write: they must stay execute, so honest agents are not refused.
HONEST = [
    "xargs <<< 'touch f'",  # echo
    "printf 'a.py\\nb.py\\n' | xargs grep -l foo",
    "printf 'a.py\\n' | xargs -I{} grep -l foo {}",
    "printf 'a.py\\n' | xargs wc -l",
    "printf 'a.py\\n' | xargs -n1 sh -c 'wc -l \"$0\"'",
    "printf 'a.py\\n' | xargs -I{} sh -c 'wc -l \"$1\"' _ {}",
    "find . -name '*.py' -exec grep -l foo {} +",
    "find . -name '*.py' -exec sh -c 'wc -l \"$1\"' _ {} \\;",
    "xargs -I{} echo {} <<< 'touch f'",
    "printf 'a.py\\n' | xargs -I{} git log -1 --format=%s -- {}",
    "printf 'a.py\\n' | parallel wc -l",
    "GIT_PAGER=cat git --version",
    "PAGER=cat git --version",
    "python3 - <<< 'print(1)'",
]


def _run(command: str, where: Path) -> None:
    """Run ``command`` in ``where`` with a HOME of its own next to it (tools keep state there)."""
    assert BASH is not None
    home = where.parent / (where.name + ".home")
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LC_ALL": "C"}
    subprocess.run(
        [BASH, "-c", command], cwd=where, env=env, capture_output=True, timeout=60, check=False
    )


@pytest.mark.parametrize(("command", "opaque", "files"), WRITES)
def test_code_fed_at_run_time_is_a_mutation(
    command: str, opaque: bool, files: tuple[str, ...]
) -> None:
    c = classify_shell(command)
    assert c.tool_class.mutates, c
    if opaque:
        assert c.opaque and any("opaque" in r for r in c.reasons), c


@pytest.mark.parametrize(("command", "opaque", "files"), WRITES)
def test_the_write_forms_really_write_in_bash(
    command: str, opaque: bool, files: tuple[str, ...], tmp_path: Path
) -> None:
    if BASH is None:
        pytest.skip("bash is not installed: cannot prove the forms write")
    if "parallel" in command and PARALLEL is None:
        pytest.skip("GNU parallel is not installed: its forms are checked by the classifier only")
    (tmp_path / "src").mkdir()
    for name in files:
        (tmp_path / name).write_text("touch f\n")
    _run(command.replace("{tmp}", str(tmp_path)), tmp_path)
    assert (tmp_path / "f").exists() or not (tmp_path / "src").exists(), command


@pytest.mark.parametrize("command", HONEST)
def test_honest_forms_stay_execute(command: str, tmp_path: Path) -> None:
    assert classify_shell(command).tool_class is ToolClass.EXECUTE, classify_shell(command)
    if BASH is None:
        pytest.skip("bash is not installed: cannot prove the forms do not write")
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.py").write_text("foo\n")
    _run(command, work)
    assert sorted(p.name for p in work.iterdir()) == ["a.py"], command


def test_a_script_in_a_proc_cwd_is_a_script() -> None:
    """The session's cwd may be spelled /proc/self/cwd: its scripts are files, not devices."""
    for cwd in ("/proc/self/cwd", "/proc/1/cwd/sub", "/dev/shm/task"):
        c = classify_shell("python3 test_x.py", cwd=cwd)
        assert c.tool_class is ToolClass.EXECUTE and not c.opaque, c
    assert classify_shell("python3 /proc/self/environ").opaque


def test_destructive_input_stays_destructive() -> None:
    assert (
        classify_shell("xargs -I{} sh -c '{}' <<< 'rm -rf src'").tool_class is ToolClass.DESTRUCTIVE
    )
    assert classify_shell("printf 'a\\n' | xargs -I{} sh -c 'rm -rf {}'").tool_class is (
        ToolClass.DESTRUCTIVE
    )


def test_the_reason_names_the_producer() -> None:
    c = classify_shell("git ls-files | xargs -I{} sh -c {}")
    assert any(
        "`xargs` assembles at run time from the output of `git ls-files`" in r for r in c.reasons
    )
    c = classify_shell("find . -exec sh -c {} \\;")
    assert any("names of the files it finds" in r for r in c.reasons), c


def test_an_ungrounded_agent_is_denied_with_protected_opaque(gk: Gatekeeper) -> None:
    d = gk.authorize(ToolCall("Bash", {"command": "cat list | xargs -I{} sh -c '{}'"}))
    assert d.verdict.value == "deny" and d.code == "protected_opaque", d
    assert "xargs" in d.reason and "write the code to a file" in d.reason


_SNIPPETS = st.sampled_from(
    ["touch f", "echo x > f", "rm -rf src", "mkdir d", "sed -i s/a/b/ f", "git commit -qm x"]
)
_RUNNERS = st.sampled_from(
    [
        "xargs -I{{}} sh -c '{{}}' <<< {q}",
        "xargs -I{{}} bash -c {{}} <<< {q}",
        "xargs sh -c <<< {qq}",
        "sh -c sh <<< {q}",
        "bash -s <<< {q}",
        "sh /dev/stdin <<< {q}",
        "if :; then sh; fi <<< {q}",
        "parallel ::: {q}",
        "parallel sh -c {{}} ::: {q}",
        "echo {q} | parallel",
        "cat <<'EOF' | sh\n{raw}\nEOF",
        "sh <<'EOF'\n{raw}\nEOF",
        "echo {q} | xargs -I{{}} sh -c {{}}",
        "find . -exec sh -c {q} \\;",
        "GIT_SSH_COMMAND={q} git ls-remote ssh://h/r",
        "parallel echo 'x;' {raw} ::: 1",
    ]
)


@settings(max_examples=150, deadline=None)
@given(snippet=_SNIPPETS, runner=_RUNNERS)
def test_no_runner_form_hides_a_write(snippet: str, runner: str) -> None:
    q = "'" + snippet + "'"
    qq = "\"'" + snippet + "'\""
    command = runner.format(q=q, qq=qq, raw=snippet)
    assert classify_shell(command).tool_class.mutates, command
