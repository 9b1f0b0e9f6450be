"""The project's checks: what decides "done" for an agent that writes no ledger.

The ``verify`` profile (docs/gates.md#profiles) asks no protocol of the agent: a finish after
changes needs a fresh PASS of each required check — the operator's ``[oracles] require``, or,
when none is declared, the checks :func:`detect_checks` finds in the project (pytest, npm /
yarn / pnpm test, cargo test, go test, make test / check, tox / nox).

:func:`qualifying_pass` is the one place that decides whether a recorded run is a qualifying
fresh PASS of a check. With ``[attest] required`` (the default in the enforcing profiles) that
is infomark's own sandboxed run of the check (``attested`` evidence: the finish runs it itself,
docs/security.md#attested-runs); the agent's own runs stay hints, and a failing one still
counts as a failure. With ``[attest] required = false`` the agent's own *observed* run
(execution evidence that infomark signed when the host reported it) qualifies too.
:func:`failing_tests` reads the names of the failing tests out of a run's output (an attested
run's report names them itself), so a refusal can name them.

Pure functions of the session state and the files named; standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from infomark.gates.oracles import matches_any, ran_nothing, weakness
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.paths import pure_name
from infomark.kernel.reasons import RunReason
from infomark.kernel.records import dataclass
from infomark.kernel.regular import read_regular
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = [
    "ATTESTED_CLASSES",
    "OWN_RUN",
    "QUALIFYING_CLASSES",
    "UNSANDBOXED_WHY",
    "CheckStatus",
    "check_status",
    "detect_checks",
    "failing_tests",
    "qualifying_pass",
    "required_checks",
    "same_check",
]

#: why an agent's own run made while its commands had no OS sandbox cannot count
UNSANDBOXED_WHY = "it ran while the agent's commands had no OS sandbox, so it grounds nothing"

#: evidence classes a check's PASS may rest on with ``[attest] required = false``: the agent's
#: own observed run, or infomark's attested one
QUALIFYING_CLASSES: tuple[str, ...] = ("execution", "attested")
#: ... and with ``[attest] required`` (the default in the enforcing profiles): infomark's own run
ATTESTED_CLASSES: tuple[str, ...] = ("attested",)
#: why the agent's own PASS does not back a check when attested runs are required
OWN_RUN = (
    "it is your own run; a finish needs infomark's own sandboxed run of the check, which the "
    "finish starts itself"
)

# words that only change what a run prints, never what it tests
_QUIET_FLAGS = frozenset(
    {
        "-q",
        "-qq",
        "-v",
        "-vv",
        "-vvv",
        "-x",
        "--exitfirst",
        "-s",
        "--quiet",
        "--verbose",
        "--no-header",
        "--disable-warnings",
        "-rA",
        "-ra",
        "-rf",
        "-rfE",
        "-count=1",
        "--color=yes",
        "--color=no",
    }
)
_QUIET_PREFIXES = ("--tb=", "--color=", "-count=")
_LAUNCHERS = (("python", "-m"), ("python3", "-m"), ("uv", "run"), ("poetry", "run"))
_NPM_TEST = {("npm", "run", "test"): ("npm", "test"), ("npm", "t"): ("npm", "test")}


def _words(command: str) -> list[str] | None:
    import shlex

    try:
        return shlex.split(command, comments=False)
    except ValueError:
        return None


def _canonical(command: str, root: str | None) -> tuple[str, ...] | None:
    """The words that decide what a run tests: launchers, output flags and a leading
    ``cd ROOT &&`` dropped; None when the command is more than one simple command."""
    words = _words(command)
    if words is None or not words:
        return None
    if words[0] == "cd" and len(words) > 3 and words[2] == "&&":
        target = words[1]
        if root is None or os.path.realpath(os.path.join(root, target)) != os.path.realpath(root):
            return None
        words = words[3:]
    if any(w in ("&&", "||", ";", "|", "&", "|&", ">", ">>", "2>&1") for w in words):
        return None  # a pipeline, a list or a redirection: not the check as declared
    words = [pure_name(words[0]), *words[1:]]
    for launcher in _LAUNCHERS:
        n = len(launcher)
        if tuple(pure_name(w) if i == 0 else w for i, w in enumerate(words[:n])) == launcher:
            words = words[n:]
            break
    if words and words[0].startswith("python") and words[1:2] == ["-m"]:
        words = words[2:]
    if not words:
        return None
    words[0] = pure_name(words[0])
    rest = []
    skip = False
    for i, w in enumerate(words[1:], 1):
        if skip:
            skip = False
            continue
        if w in _QUIET_FLAGS or w.startswith(_QUIET_PREFIXES):
            continue
        if w == "-p" and i + 1 < len(words) and words[i + 1] == "no:cacheprovider":
            skip = True
            continue
        if w == "-n" and i + 1 < len(words):  # pytest-xdist workers: how, not what
            skip = True
            continue
        rest.append(w)
    key = (words[0], *sorted(rest))
    return _NPM_TEST.get(key, key)


def same_check(command: str, check: str, *, root: StrPath | None = None) -> bool:
    """Whether ``command`` runs ``check`` itself: the same tool on the same selection
    (``python -m pytest -q`` is ``pytest``; ``pytest -k one`` or ``pytest -q || true`` is not).
    A check written with a glob (``pytest*``) matches by the glob, masked runs excepted."""
    root_s = os.fspath(root) if root is not None else None
    if any(ch in check for ch in "*?["):
        return matches_any(command, (check,)) and weakness(command) is None
    a, b = _canonical(command, root_s), _canonical(check, root_s)
    return a is not None and a == b


@dataclass(frozen=True, slots=True)
class CheckStatus:
    """Where one required check stands: ``pass`` (fresh and qualifying), ``fail`` (its latest
    run failed), ``stale`` (it passed before the last change), ``not_run``, ``disqualified``
    (a run that cannot count: no test ran, or grading files had changed), ``unsandboxed``
    (the agent's own run while its commands had no OS sandbox; ``why`` names the fix)."""

    check: str
    state: str
    ref: str = ""
    command: str = ""
    failing: tuple[str, ...] = ()
    why: str = ""
    attested: bool = False  # the run it stands on is infomark's own (sandboxed) run

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "state": self.state,
            "ref": self.ref,
            "command": self.command,
            "failing": list(self.failing),
            "why": self.why,
            "attested": self.attested,
        }


def qualifying_pass(
    state: SessionState,
    run: Mapping[str, Any],
    *,
    root: StrPath | None,
    output: str | None,
    attested: bool = False,
) -> str | None:
    """THE seam: None when ``run`` (an entry of ``state.runs``) is a qualifying fresh PASS of
    its check, else why it is not. It must be evidence of a qualifying class (``attested``:
    infomark's own run only, else the agent's observed run too), newer than the session's
    last change, exit 0, from the project root, with output that says tests ran, and not made
    while a grading file was changed (an attested run used the baseline's grading files)."""
    classes = ATTESTED_CLASSES if attested else QUALIFYING_CLASSES
    if run.get("class") not in classes:
        if attested and run.get("class") == "execution":
            return OWN_RUN
        return f"its evidence class {run.get('class')!r} cannot back a check"
    if int(run.get("seq") or 0) <= state.last_modify_seq:
        return "it ran before the last change"
    if run.get("class") == "execution" and state.unsandboxed_at(int(run.get("seq") or 0)):
        return UNSANDBOXED_WHY
    if run.get("outcome") != "PASS":
        return f"it ended {run.get('outcome')}"
    cwd = run.get("cwd")
    if root is not None and cwd and os.path.realpath(str(cwd)) != os.path.realpath(root):
        return f"it ran in {cwd}, not the project root"
    if output is None:
        return "its evidence does not verify (or its output is gone)"
    if ran_nothing(output):
        return "its output says no test ran"
    graded = (
        [] if run.get("class") == "attested" else state.self_graded_at(int(run.get("seq") or 0))
    )
    if graded:
        return "it ran after grading files changed: " + ", ".join(graded)
    return None


def check_status(
    state: SessionState,
    checks: Sequence[str],
    *,
    root: StrPath | None,
    output_of: Callable[[str], str | None],
    report_of: Callable[[str], Mapping[str, Any] | None] | None = None,
    attested: bool = False,
) -> list[CheckStatus]:
    """Each required check's standing, from the latest run of it in ``state.runs``.

    ``attested``: only infomark's own run is a qualifying PASS (``[attest] required``);
    ``report_of(ref)``: an attested run's record (its runner report names the failing tests,
    its judgement says why a run that showed nothing is no PASS)."""
    out = []
    for check in checks:
        latest: tuple[str, Mapping[str, Any]] | None = None
        for cmd, entry in state.runs.items():
            if same_check(cmd, check, root=root) and (
                latest is None or int(entry.get("seq") or 0) > int(latest[1].get("seq") or 0)
            ):
                latest = (cmd, entry)
        if latest is None:
            out.append(CheckStatus(check, "not_run"))
            continue
        command, run = latest
        ref = str(run.get("ref") or "")
        own = run.get("class") == "attested"
        if int(run.get("seq") or 0) <= state.last_modify_seq:
            why = str(run.get("outcome"))
            out.append(CheckStatus(check, "stale", ref, command, why=why, attested=own))
            continue
        report = report_of(ref) if own and report_of is not None else None
        if run.get("outcome") == "ERROR" and report is not None:
            # infomark's own run showed nothing about the check (no test ran, a tampered
            # runner …): not a failure of the code, not a PASS either
            judgement = report.get("judgement") or {}
            detail = _run_why(str(judgement.get("detail") or "it ended ERROR"), judgement)
            out.append(CheckStatus(check, "disqualified", ref, command, why=detail, attested=own))
            continue
        if run.get("outcome") != "PASS":
            named = (report.get("report") or {}).get("failed_tests") if report else None
            if isinstance(named, list) and named:
                failing = tuple(str(n) for n in named[:20])
            else:
                failing = tuple(failing_tests(output_of(ref) or ""))
            out.append(CheckStatus(check, "fail", ref, command, failing, attested=own))
            continue
        not_pass = qualifying_pass(state, run, root=root, output=output_of(ref), attested=attested)
        if not_pass is None:
            out.append(CheckStatus(check, "pass", ref, command, attested=own))
        elif not_pass == UNSANDBOXED_WHY:
            fix = str(state.agent_sandbox.get("fix") or "turn the agent's OS sandbox on")
            why = f"{not_pass}; {fix}"
            out.append(CheckStatus(check, "unsandboxed", ref, command, why=why, attested=own))
        else:
            out.append(CheckStatus(check, "disqualified", ref, command, why=not_pass, attested=own))
    return out


#: a required check's attested run that showed nothing, by its code: the step the agent can
#: take (the check itself is the operator's; only the change can make its tests run)
_CHECK_STEPS: dict[str, str] = {
    RunReason.NO_TESTS_RAN.value: "undo the change that keeps the check's tests from running",
    RunReason.NAMED_TEST_NOT_RUN.value: "undo the change that keeps the named test from running",
    RunReason.FEWER_TESTS.value: RunReason.FEWER_TESTS.hint,
    RunReason.COLLECTION_ERROR.value: RunReason.COLLECTION_ERROR.hint,
    RunReason.RUNNER_TAMPERED.value: RunReason.RUNNER_TAMPERED.hint,
}


def _run_why(detail: str, judgement: Mapping[str, Any]) -> str:
    """What an attested run of a required check showed, naming its code and its step."""
    code = str(judgement.get("code") or "")
    step = _CHECK_STEPS.get(code)
    return f"{detail} ({code}: {step})" if step else detail


# -- failing tests, by name -------------------------------------------------------------------
_PYTEST_FAILED = lazy_compile(r"(?m)^(?:FAILED|ERROR) (\S+?)(?: - .*)?$")
_PYTEST_VERBOSE = lazy_compile(r"(?m)^(\S+::\S+) (?:FAILED|ERROR)\b")
_GO_FAILED = lazy_compile(r"(?m)^\s*--- FAIL: (\S+)")
_CARGO_FAILED = lazy_compile(r"(?m)^test (\S+) \.\.\. FAILED$")
_JEST_FAILED = lazy_compile(r"(?m)^\s*(?:✕|×) (.+?)(?: \(\d+ ?m?s\))?$")


def failing_tests(output: str, limit: int = 20) -> list[str]:
    """The names of the failing tests a run's output lists (pytest's short summary and
    verbose lines, go test, cargo test, jest), in order, each once."""
    text = output[-200_000:]
    names: list[str] = []
    for pattern in (_PYTEST_FAILED, _PYTEST_VERBOSE, _GO_FAILED, _CARGO_FAILED, _JEST_FAILED):
        for m in pattern.finditer(text):
            name = m.group(1).strip()
            if name and name not in names:
                names.append(name)
    return names[:limit]


# -- which checks a project has ---------------------------------------------------------------
def _read(root: str, name: str, limit: int = 200_000) -> str:
    try:
        return read_regular(os.path.join(root, name), limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _has_python_tests(root: str) -> bool:
    if os.path.exists(os.path.join(root, "pytest.ini")) or os.path.exists(
        os.path.join(root, "conftest.py")
    ):
        return True
    if "[tool.pytest" in _read(root, "pyproject.toml") or "[tool:pytest]" in _read(
        root, "setup.cfg"
    ):
        return True
    for folder in ("tests", "test", "."):
        try:
            names = os.listdir(os.path.join(root, folder))
        except OSError:
            continue
        if any(n.startswith("test_") and n.endswith(".py") for n in names) or any(
            n.endswith("_test.py") for n in names
        ):
            return True
    return False


_MAKE_TARGET = lazy_compile(r"(?m)^(test|check)\s*:")
_NPM_DEFAULT = "no test specified"


def _js_check(root: str) -> str | None:
    import json

    text = _read(root, "package.json")
    if not text:
        return None
    try:
        scripts = json.loads(text).get("scripts") or {}
    except (ValueError, AttributeError):
        return None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or not test.strip() or _NPM_DEFAULT in test:
        return None
    if os.path.exists(os.path.join(root, "pnpm-lock.yaml")):
        return "pnpm test"
    if os.path.exists(os.path.join(root, "yarn.lock")):
        return "yarn test"
    return "npm test"


def detect_checks(root: StrPath) -> list[str]:
    """The project's test commands, one per ecosystem found: Python (pytest, else nox, else
    tox), JavaScript (the package's ``test`` script through npm, yarn or pnpm), Rust
    (``cargo test``), Go (``go test ./...``); ``make test`` / ``make check`` only when no
    language's own runner is found (a Makefile usually wraps it)."""
    r = os.fspath(root)
    found: list[str] = []
    if _has_python_tests(r):
        found.append("pytest -q")
    elif os.path.exists(os.path.join(r, "noxfile.py")):
        found.append("nox")
    elif "[tox]" in _read(r, "tox.ini"):
        found.append("tox")
    js = _js_check(r)
    if js:
        found.append(js)
    if os.path.exists(os.path.join(r, "Cargo.toml")):
        found.append("cargo test")
    if os.path.exists(os.path.join(r, "go.mod")):
        found.append("go test ./...")
    if not found:
        for name in ("Makefile", "makefile", "GNUmakefile"):
            targets = [m.group(1) for m in _MAKE_TARGET.finditer(_read(r, name))]
            if targets:
                found.append(f"make {'test' if 'test' in targets else targets[0]}")
                break
    return found


def required_checks(declared: Sequence[str], root: StrPath) -> tuple[str, ...]:
    """The checks a finish needs: the operator's ``[oracles] require``, else the detected."""
    if declared:
        return tuple(declared)
    return tuple(detect_checks(root))
