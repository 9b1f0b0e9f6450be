"""Every ``console`` example in ``docs/*.md`` and ``README.md`` is executed, and its output checked.

How a block is run (unless the line before its fence is ``<!-- no-test -->``):

* in a fresh sandbox directory with its own ``$HOME`` and ``$TMPDIR``, stdin a terminal
  (a pty, as when typed), the virtual
  environment's ``bin`` first on ``PATH``, by one ``bash`` process (so ``cd`` carries on);
* each ``$ `` line is one command; the lines after it, up to the next ``$ ``, are what it
  prints (stdout and stderr, as a terminal shows them);
* ``$ cat FILE`` for a file the sandbox does not have yet *creates* it with the text shown:
  a block shows its own input files; ``$ cd DIR`` to a directory it does not have yet
  creates it (``cd your-project``);
* ``<!-- output: none -->`` before the fence: every command must print nothing (a hook's
  "no opinion");
* only blocks whose every command starts with ``infomark``, ``cd``, ``echo``, ``cat``,
  ``printf`` or ``chmod`` (after any ``VAR=value`` it sets) run here (``make bench`` has
  its own harness);
* ``<!-- setup: demo -->`` before the fence runs ``infomark demo --keep`` first and works in
  the project it keeps (the prose says so);
* when a block shows any output, every command's output must match after normalisation
  (evidence refs are mapped to the real ones, so a ref printed by one command can be used by
  the next; timestamps, key ids, temp paths and the interpreter's path are masked, and a table
  is compared cell by cell, whatever width it was drawn at); a block that shows only commands
  is run, and must not fail with an internal error (exit 70), a traceback or exit ≥ 126.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_docs import DOC_FILES, NO_TEST, ROOT, fences

SETUP_DEMO = "<!-- setup: demo -->"
SILENT = "<!-- output: none -->"
#: a block is executed when each of its commands starts with one of these (``make bench`` and
#: the like are not run here; a long-running server is marked no-test and run by its own tests)
RUNNABLE = frozenset({"infomark", "cd", "echo", "cat", "printf", "chmod"})
_REF = re.compile(r"ev_[0-9a-f]{24}|dec_[0-9a-f]{16}|call_[0-9a-f]{16}")  # mapped to the real ones
_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?"), "<ts>"),
    (re.compile(r"key id [0-9a-f]{16}"), "key id <id>"),
    (re.compile(r"/\S*/infomark-demo-[A-Za-z0-9_]+"), "<demo>"),
    # the runner's echo clips a line at 120 characters: the rest of the path goes too
    (re.compile(r"/\S*/infomark-run-demo\S*"), "<demo-path>"),
    (re.compile(r"[\w./-]*bin/python[0-9.]*"), "<python>"),
]


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*$")


def _program(command: str) -> str:
    """The command's program, after any ``VAR=value`` the line sets for it."""
    return next((w for w in command.split() if not _ASSIGNMENT.match(w)), "")


@dataclass(frozen=True)
class Step:
    command: str
    expected: list[str]


@dataclass(frozen=True)
class Example:
    where: str
    steps: list[Step]
    shows_output: bool
    setup_demo: bool
    silent: bool = False


def examples() -> list[Example]:
    out: list[Example] = []
    for path in DOC_FILES:
        lines = path.read_text("utf-8").splitlines()
        for fence in fences(path):
            if fence.info != "console" or fence.marked_no_test:
                continue
            steps: list[Step] = []
            for line in fence.body.splitlines():
                if line.startswith("$ "):
                    steps.append(Step(line[2:], []))
                elif steps:
                    steps[-1].expected.append(line)
            if not steps or any(_program(s.command) not in RUNNABLE for s in steps):
                continue
            assert not any("infomark serve" in s.command for s in steps), (
                f"{fence.where}: a server never returns; mark the block {NO_TEST} (the "
                "service's own tests run it on port 0)"
            )
            before = lines[fence.line - 2].strip() if fence.line >= 2 else ""
            out.append(
                Example(
                    fence.where,
                    steps,
                    shows_output=any(s.expected for s in steps) or before == SILENT,
                    setup_demo=before == SETUP_DEMO,
                    silent=before == SILENT,
                )
            )
    return out


EXAMPLES = examples()


_BORDER = re.compile(r"^[\s┏┓┗┛┣┫┳┻╋━┡┩╇└┘┴─┌┐┬├┤┼]+$")
_CELL = re.compile(r"[│┃]")


def _normalise(text: str) -> str:
    """Masks applied; a table compared by its cells, not by how the terminal width padded and
    folded them (a folded row's continuation lines join their row)."""
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    out: list[str] = []
    row: list[str] | None = None
    for line in text.splitlines():
        if _BORDER.match(line) and line.strip():
            row = None
            continue
        if line.lstrip().startswith(("│", "┃")):
            cells = [c.strip() for c in _CELL.split(line.strip())[1:-1]]
            if row is not None and cells and not cells[0]:
                row[:] = [f"{a} {b}".strip() for a, b in zip(row, cells, strict=False)]
                out[-1] = " | ".join(row)
            else:
                row = cells
                out.append(" | ".join(row))
            continue
        row = None
        out.append(line.rstrip())
    return "\n".join(out).strip("\n")


def _with_refs(expected: str, actual: str, refs: dict[str, str]) -> str:
    """The expected text with documented refs replaced by the real ones, learning new pairs
    from the order refs appear in both."""
    shown, real = _REF.findall(expected), _REF.findall(actual)
    for doc_ref, real_ref in zip(shown, real, strict=False):
        refs.setdefault(doc_ref, real_ref)
    return _REF.sub(lambda m: refs.get(m.group(0), m.group(0)), expected)


class Shell:
    """Runs one step at a time in the sandbox; the working directory carries over."""

    def __init__(self, sandbox: Path) -> None:
        self.sandbox = sandbox
        self.cwd = sandbox
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("INFOMARK_", "CLAUDE_", "COLUMNS"))
        }
        self.env.update(
            HOME=str(sandbox / "home"),
            TMPDIR=str(sandbox / "tmp"),
            PATH=str(Path(sys.executable).parent) + os.pathsep + self.env.get("PATH", ""),
        )

    def run(self, command: str) -> tuple[str, int]:
        where = self.sandbox / ".doc-cwd"
        script = f"{{ {command}\n}} 2>&1\nrc=$?\npwd > {where}\nexit $rc\n"
        operator, terminal = os.openpty()  # typed at a terminal (`approve` needs one)
        try:
            proc = subprocess.run(
                ["bash", "-c", script],
                cwd=self.cwd,
                env=self.env,
                stdin=terminal,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
                check=False,
            )
        finally:
            os.close(operator)
            os.close(terminal)
        self.cwd = Path(where.read_text().strip())
        return proc.stdout, proc.returncode


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_console_example_runs_as_shown(example: Example, tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    (sandbox / "home").mkdir(parents=True)
    (sandbox / "tmp").mkdir()
    shell = Shell(sandbox)
    if example.setup_demo:
        out, rc = shell.run("infomark demo --keep")
        kept = re.search(r"^kept: (\S+)", out, re.M)
        assert rc == 0 and kept, f"{example.where}: the demo set-up failed:\n{out}"
        shell.cwd = Path(kept.group(1)) / "project"
    refs: dict[str, str] = {}
    for step in example.steps:
        where = f"{example.where}: `$ {step.command}`"
        cat = re.fullmatch(r"cat (\S+)", step.command.strip())
        if cat and step.expected and not (shell.cwd / cat.group(1)).exists():
            (shell.cwd / cat.group(1)).write_text("\n".join(step.expected) + "\n", "utf-8")
        cd = re.fullmatch(r"cd ([\w.-]+)", step.command.split("#")[0].strip())
        if cd and not (shell.cwd / cd.group(1)).exists():
            (shell.cwd / cd.group(1)).mkdir(parents=True)
        command = _REF.sub(lambda m: refs.get(m.group(0), m.group(0)), step.command)
        actual, rc = shell.run(command)
        broke = "Traceback" in actual or rc == 70 or rc >= 126
        assert not broke, f"{where} (exit {rc}):\n{actual}"
        if not example.shows_output:
            continue
        expected = _with_refs("\n".join(step.expected), actual, refs)
        assert _normalise(actual) == _normalise(expected), (
            f"{where} printed something else (exit {rc}).\n--- documented\n"
            f"{_normalise(expected)}\n--- actual\n{_normalise(actual)}"
        )


def test_the_examples_were_found() -> None:
    commands = {s.command.split()[0] for e in EXAMPLES for s in e.steps}
    assert len(EXAMPLES) >= 5 and "infomark" in commands


def test_a_wrong_output_is_caught(tmp_path: Path) -> None:
    assert _normalise("verdict: x  \n") == "verdict: x"
    refs: dict[str, str] = {}
    doc = "stamped C1 → Exact (ev_" + "a" * 24 + ")"
    real = "stamped C1 → Exact (ev_" + "b" * 24 + ")"
    assert _with_refs(doc, real, refs) == real
    assert _normalise(_with_refs("stamped C1 → Inferred", real, refs)) != _normalise(real)
    assert ROOT.is_dir() and NO_TEST
