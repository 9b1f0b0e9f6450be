"""Issue 34 §2, for every code in the vocabulary: the refusal names the code, the claim and
one next step, and following that step moves the session forward.

The codes are enumerated from the kernel's enums (:class:`RejectReason`, :class:`RunReason`,
:class:`DecisionCode`, :class:`FinishCode`), so a new code fails
:func:`test_every_code_is_driven_or_listed` until it has a scenario here or a line in
:data:`NOT_A_REFUSAL` / :data:`ELSEWHERE` saying why not.
Each scenario drives a real session (a git project, a real SQLite home, real runs) into the
refusal, reads the text the agent would read (the Python API's denial output, the finish
refusal, the stamp-rejection instruction, the answer of `infomark check C1`: infomark's own
run in bubblewrap, judged from the runner's report), then does what the text says and checks
that the refusal is gone (the call runs, the stamp applies, the finish passes, or a later refusal
stands in its place). Every command a refusal tells the agent to run passes infomark's own
oracle judge (``weakness``), and every ``result=`` it tells it to stamp is the one the
claim's expectation needs.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import OWN_RUNS_TOML

from infomark.gatekeeper import Gatekeeper
from infomark.gates.oracles import weakness
from infomark.kernel.decisions import DecisionCode, FinishCode
from infomark.kernel.errors import RecordRefused
from infomark.kernel.reasons import RejectReason, RunReason
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.report import IngestReport
from infomark.wrapping import denied_outcome

ORACLE = "sh check.sh"  # passes once app.VALUE == 2 (no Python: a run takes milliseconds)
TEST_FILE = "test_app.py"
ATTESTED = "[attest]\nrequired = true\n"  # the enforcing profiles' default, said explicitly


# -- the vocabulary -------------------------------------------------------------------------
#: codes that never refuse anything: what the agent sees with them is not a refusal
NOT_A_REFUSAL: dict[str, str] = {
    "decision:allowed": "an allow",
    "decision:scratch": "an allow (the agent's own new files)",
    "decision:revert": "an allow (a revert of an unannounced mutation)",
    "decision:bypass": "an allow under INFOMARK_BYPASS_GROUNDING, journaled",
    "decision:grounded": "an allow",
    "decision:dryrun": "an allow in the observe profile",
    "decision:operator_approved": "an allow: the step a `destructive` hold names, tested there",
    "decision:verify": "an allow in the verify profile",
    "finish:allowed": "an allow",
    "finish:finished_blocked": "an allowed finish (the agent declared BLOCKED or asked)",
    "finish:refusal_cap_reached": (
        "an allowed finish, UNVERIFIED; its verdict and exit code are tested in "
        "tests/tools/test_anyagent_table.py and tests/security/test_forced_finish.py"
    ),
}

#: refusals not driven here, with the reason (reviewed, not silent)
ELSEWHERE: dict[str, str] = {}


def vocabulary() -> set[str]:
    return (
        {f"reject:{c.value}" for c in RejectReason}
        | {f"decision:{c.value}" for c in DecisionCode}
        | {f"finish:{c.value}" for c in FinishCode}
        | {f"run:{c.value}" for c in RunReason}
    )


# -- a session ------------------------------------------------------------------------------
@dataclass
class Refusal:
    """What the agent read, the claim it must name (None: the refusal is about no claim), and
    the step it says to take: doing it returns the code that stands now ("" when none)."""

    text: str
    claim: str | None
    follow: Callable[[], str]


OPEN: list[Session] = []  # the sessions a scenario opened (the test reads and closes them)


class Session:
    """A session on the agent's own runs (``[attest] required = false``) unless ``config``
    says otherwise: each refusal's step is the one that protocol names; the attested default's
    steps (`infomark check C…`) are driven where ``config`` turns it on."""

    def __init__(self, tmp: Path, config: str = "", files: dict[str, str] | None = None) -> None:
        if "[attest]" not in config:
            config += OWN_RUNS_TOML
        root = tmp / "p"
        root.mkdir(parents=True)
        (root / "app.py").write_text("VALUE = 1\n")
        (root / "check.sh").write_text("grep -qx 'VALUE = 2' app.py\n")
        (root / TEST_FILE).write_text("import app\n\n\ndef test_v():\n    assert app.VALUE\n")
        (root / "notes.txt").write_text("notes\n")
        for rel, text in (files or {}).items():
            (root / rel).write_text(text)
        if config:
            (root / "infomark.toml").write_text(config)
        git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run([*git[:3], "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "s"], check=True)
        self.root = root
        self.gk = Gatekeeper.open(root / ".infomark", "s", root=root)
        self.last: IngestReport | None = None
        OPEN.append(self)

    # the agent's moves
    def say(self, text: str) -> IngestReport:
        self.last = self.gk.ingest(text)
        return self.last

    def call(self, tool: str, tool_input: dict[str, object], cwd: Path | None = None) -> str:
        """Authorize a call; "" when allowed, else the denial text the agent reads."""
        c = ToolCall(tool, tool_input, cwd=str(cwd or self.root))
        d = self.gk.authorize(c)
        return "" if d.allowed else str(denied_outcome(d).output)

    def run(self, command: str, cwd: Path | None = None, background: bool = False) -> str:
        """Run a shell command as the agent would; its evidence ref."""
        tool_input: dict[str, object] = {"command": command}
        if background:
            tool_input["run_in_background"] = True
        call = ToolCall("Bash", tool_input, cwd=str(cwd or self.root))
        d = self.gk.authorize(call)
        assert d.allowed, d.reason
        proc = subprocess.run(
            command, shell=True, cwd=cwd or self.root, capture_output=True, text=True
        )
        out = ToolOutcome(proc.stdout + proc.stderr, exit_code=proc.returncode)
        ev = self.gk.record(
            call,
            out,
            call_id=d.call_id,
            cwd=str(cwd or self.root),
            background_id="bg_1" if background else None,
        )
        return ev.ref

    def read(self, rel: str) -> str:
        call = ToolCall("Read", {"file_path": str(self.root / rel)}, cwd=str(self.root))
        d = self.gk.authorize(call)
        assert d.allowed, d.reason
        text = (self.root / rel).read_text()
        return self.gk.record(call, ToolOutcome(text), call_id=d.call_id).ref

    def edit(self, value: int = 2) -> str:
        """Edit app.py (VALUE = value); "" when allowed, else the denial text."""
        call = ToolCall(
            "Edit",
            {"file_path": str(self.root / "app.py"), "old_string": "VALUE", "new_string": "VALUE"},
            cwd=str(self.root),
        )
        d = self.gk.authorize(call)
        if not d.allowed:
            return str(denied_outcome(d).output)
        (self.root / "app.py").write_text(f"VALUE = {value}\n")
        self.gk.record(call, ToolOutcome("ok"), call_id=d.call_id)
        return ""

    def finish(self, text: str = "Done, the check passes.") -> tuple[str, str]:
        """``(code, text the agent reads)``: the runner's and adapters' refusal form."""
        fin = self.gk.can_finish(text)
        if fin.allow:
            return "", ""
        return fin.code, f"[infomark finish refused: {fin.code}] {fin.reason}"

    def stamp(self, cid: str, ref: str, result: str = "PASS", extra: str = "") -> str:
        """Stamp; "" when applied, else the rejection's code."""
        kind = "inference_stamp" if result == "OBSERVED" else "oracle_stamp"
        tail = "" if result == "OBSERVED" else f" result={result}"
        report = self.say(f"{kind}: claim_id={cid} evidence_ref={ref}{tail}{extra}")
        return str(report.stamps_rejected[0]["reason"]) if report.stamps_rejected else ""

    def rejection(self) -> str:
        """The stamp-rejection instruction the agent reads after the last ingest."""
        assert self.last is not None and self.last.stamps_rejected, "nothing was rejected"
        return self.last.instructions

    def code_of_edit(self, value: int = 2) -> str:
        text = self.edit(value)
        m = re.match(r"\[infomark (?:denied|held for approval): (\w+)\]", text)
        return m.group(1) if m else ""


def ledger(*claims: str, premises: str = "C1", done: str = "") -> str:
    text = "claim_ledger:\n  claims:\n" + "".join(f"    - {c}\n" for c in claims)
    text += f"  premises_for_plan: [{premises}]\n"
    return text + (f"  done_when: [{done}]\n" if done else "")


def claim(cid: str = "C1", oracle: str | None = ORACLE, **extra: str) -> str:
    parts = [f"id: {cid}", f'text: "claim {cid}"', "status: Hypothetical"]
    if extra.pop("falsifier", "x") == "x":
        parts.append('falsifier: "the check fails"')
    if oracle is not None:
        parts.append(f'oracle: "{oracle}"')
    parts += [f"{k}: {v}" for k, v in extra.items()]
    return "{" + ", ".join(parts) + "}"


SUGGESTED_RUN = re.compile(r"(?:run|re-run|Run) `([^`]+)`")
SUGGESTED_RESULT = re.compile(r"claim_id=(\w+) evidence_ref=ev_… result=(\w+)")


def suggested_run(text: str) -> str:
    runs = SUGGESTED_RUN.findall(text)
    assert runs, f"no command to run in: {text}"
    return str(runs[0])


# -- the scenarios, one per code --------------------------------------------------------------
Scenario = Callable[[Path], Refusal]
SCENARIOS: dict[str, Scenario] = {}


def scenario(key: str) -> Callable[[Scenario], Scenario]:
    def deco(fn: Scenario) -> Scenario:
        SCENARIOS[key] = fn
        return fn

    return deco


def _after_stamp(s: Session, cid: str = "C1", result: str = "PASS") -> Callable[[], str]:
    """Follow a stamp rejection's step: run the command it names, stamp that run."""

    def follow() -> str:
        command = suggested_run(s.rejection() + " " + s.edit())
        return s.stamp(cid, s.run(command), result)

    return follow


@scenario("reject:missing_evidence")
def _missing_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    s.say("oracle_stamp: C1 EXPECTED_FAIL")  # the legacy form: self-certification

    def follow() -> str:  # "copy evidence_ref=ev_… from a result's tag"
        return s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL")

    return Refusal(s.rejection(), "C1", follow)


@scenario("reject:unknown_evidence")
def _unknown_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    ref = s.run(ORACLE)
    s.stamp("C1", "ev_" + "0" * 24, "EXPECTED_FAIL")
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", ref, "EXPECTED_FAIL"))


@scenario("reject:tampered_evidence")
def _tampered_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    ref = s.run(ORACLE)
    s.gk.close()
    with sqlite3.connect(s.root / ".infomark" / "ledger.db") as db:
        db.execute("UPDATE evidence SET mac = 'x' || substr(mac, 2) WHERE ref = ?", (ref,))
    s.gk = Gatekeeper.open(s.root / ".infomark", "s", root=s.root)
    s.stamp("C1", ref, "EXPECTED_FAIL")
    # "run the check again": a new run, stamped
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL"))


@scenario("reject:foreign_evidence")
def _foreign_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    other = Gatekeeper.open(s.root / ".infomark", "other", root=s.root)
    call = ToolCall("Bash", {"command": ORACLE}, cwd=str(s.root))
    d = other.authorize(call)
    ref = other.record(call, ToolOutcome("", exit_code=1), call_id=d.call_id).ref
    other.close()
    s.say(ledger(claim(expect="FAIL")))
    s.stamp("C1", ref, "EXPECTED_FAIL")
    # "run the check in this session"
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL"))


@scenario("reject:ineligible_evidence")
def _ineligible_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    s.stamp("C1", s.read("app.py"), "EXPECTED_FAIL")  # a read backs no oracle_stamp
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL"))


@scenario("reject:failed_evidence")
def _failed_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim()))
    ref = s.run(ORACLE)  # fails: VALUE is 1
    s.stamp("C1", ref, "PASS")
    # "stamp what the evidence shows"
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", ref, "FAIL"))


@scenario("reject:unknown_claim")
def _unknown_claim(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    ref = s.run(ORACLE)
    s.stamp("C9", ref, "EXPECTED_FAIL")

    def follow() -> str:  # "declare the claim in a claim_ledger before stamping it"
        s.say(ledger(claim(expect="FAIL"), claim("C9", expect="FAIL")))
        return s.stamp("C9", s.run(ORACLE), "EXPECTED_FAIL")

    return Refusal(s.rejection(), "C9", follow)


@scenario("reject:missing_falsifier")
def _missing_falsifier(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL", falsifier="")))
    ref = s.run(ORACLE)
    s.stamp("C1", ref, "EXPECTED_FAIL")

    def follow() -> str:  # "give the claim a falsifier"
        s.say(ledger(claim(expect="FAIL")))
        return s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL")

    return Refusal(s.rejection(), "C1", follow)


@scenario("reject:missing_oracle")
def _missing_oracle(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(oracle=None)))
    s.stamp("C1", s.run(ORACLE), "FAIL")

    def follow() -> str:  # "declare `oracle:` …, then run it"
        s.say(ledger(claim(expect="FAIL")))
        return s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL")

    return Refusal(s.rejection(), "C1", follow)


@scenario("reject:oracle_mismatch")
def _oracle_mismatch(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    s.stamp("C1", s.run("sh check.sh; true"), "EXPECTED_FAIL")
    return Refusal(s.rejection(), "C1", _after_stamp(s, result="EXPECTED_FAIL"))


@scenario("reject:evidence_predates_claim")
def _evidence_predates_claim(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim("C0", oracle="test -f nothing", expect="FAIL"), premises="C0"))
    ref = s.run(ORACLE)  # before C1 declares it
    s.say(ledger(claim(expect="FAIL")))
    s.stamp("C1", ref, "EXPECTED_FAIL")
    return Refusal(s.rejection(), "C1", _after_stamp(s, result="EXPECTED_FAIL"))


@scenario("reject:content_mismatch")
def _content_mismatch(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    ref = s.run(ORACLE)
    s.stamp("C1", ref, "EXPECTED_FAIL", extra=" artifact=app.py content_hash=sha256:" + "0" * 64)
    text = s.rejection() + " " + str(s.last.stamps_rejected[0]["message"])  # type: ignore[union-attr]

    def follow() -> str:  # the hash it shows is the artifact as it is now
        digest = re.findall(r"\((sha256:[0-9a-f]{64})\)", text)
        assert digest, text
        return s.stamp(
            "C1", ref, "EXPECTED_FAIL", extra=f" artifact=app.py content_hash={digest[0]}"
        )

    return Refusal(s.rejection(), "C1", follow)


@scenario("reject:weak_oracle")
def _weak_oracle(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(oracle=f"{ORACLE} || true")))
    s.stamp("C1", s.run(f"{ORACLE} || true"), "PASS")

    def follow() -> str:  # "use an oracle that can fail"
        s.say(ledger(claim(expect="FAIL")))
        return s.stamp("C1", s.run(suggested_run(s.edit())), "EXPECTED_FAIL")

    return Refusal(s.rejection(), "C1", follow)


@scenario("reject:oracle_not_allowed")
def _oracle_not_allowed(tmp: Path) -> Refusal:
    s = Session(tmp, config=f'[oracles]\nallow = ["{ORACLE}"]\n')
    s.say(ledger(claim(oracle="bash check.sh", expect="FAIL")))
    s.stamp("C1", s.run("bash check.sh"), "EXPECTED_FAIL")
    text = s.rejection()

    def follow() -> str:  # "declare one of the oracles the operator allows" (named)
        assert ORACLE in text or ORACLE in s.edit(), text
        s.say(ledger(claim(expect="FAIL")))
        return s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL")

    return Refusal(text, "C1", follow)


@scenario("reject:self_graded")
def _self_graded(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim()))
    original = (s.root / "check.sh").read_text()
    (s.root / "check.sh").write_text("exit 0\n")  # the check, loosened
    s.stamp("C1", s.run(ORACLE), "PASS")

    def follow() -> str:  # "restore it", then run the oracle again: it fails, as it should
        (s.root / "check.sh").write_text(original)
        return s.stamp("C1", s.run(ORACLE), "PASS")

    return Refusal(s.rejection(), "C1", follow)


@scenario("reject:expectation_mismatch")
def _expectation_mismatch(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    ref = s.run(ORACLE)
    s.stamp("C1", ref, "PASS")
    text = s.rejection()

    def follow() -> str:
        (result,) = re.findall(r"result=(EXPECTED_FAIL)", text)
        return s.stamp("C1", ref, result)

    return Refusal(text, "C1", follow)


@scenario("reject:evidence_not_named")
def _evidence_not_named(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(oracle=None, observe="app.py")))
    s.stamp("C1", s.read("notes.txt"), "OBSERVED")
    # "use … a Read of its `observe:`"
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.read("app.py"), "OBSERVED"))


@scenario("reject:background_run")
def _background_run(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    s.stamp("C1", s.run(ORACLE, background=True), "EXPECTED_FAIL")
    # "run it in the foreground"
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL"))


@scenario("reject:wrong_directory")
def _wrong_directory(tmp: Path) -> Refusal:
    s = Session(tmp)
    sub = s.root / "sub"
    sub.mkdir()
    (sub / "check.sh").write_text("exit 1\n")
    s.say(ledger(claim(expect="FAIL")))
    s.stamp("C1", s.run(ORACLE, cwd=sub), "EXPECTED_FAIL")
    # "run the oracle from the project root"
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL"))


@scenario("reject:delegated_evidence")
def _delegated_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    call = ToolCall("Task", {"prompt": f"run {ORACLE}"}, cwd=str(s.root))
    d = s.gk.authorize(call)
    ref = s.gk.record(call, ToolOutcome("it fails"), call_id=d.call_id).ref
    s.stamp("C1", ref, "EXPECTED_FAIL")
    # "run the check yourself"
    return Refusal(s.rejection(), "C1", lambda: s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL"))


def _record_refusal(s: Session, call: ToolCall, call_id: str) -> str:
    """What a host tells the agent when a result is not evidence (the hook's text)."""
    try:
        s.gk.record(call, ToolOutcome("x", exit_code=0), call_id=call_id)
    except RecordRefused as exc:
        return f"[infomark: no evidence for this result ({exc.code}): {exc}]"
    raise AssertionError("recorded")


@scenario("reject:unpaired_record")
def _unpaired_record(tmp: Path) -> Refusal:
    s = Session(tmp)
    call = ToolCall("Bash", {"command": ORACLE}, cwd=str(s.root))
    text = _record_refusal(s, call, "call_never_authorized")

    def follow() -> str:  # "only results of calls infomark authorized become evidence"
        s.run(ORACLE)
        return ""

    return Refusal(text, None, follow)


@scenario("reject:repeated_record")
def _repeated_record(tmp: Path) -> Refusal:
    s = Session(tmp)
    call = ToolCall("Bash", {"command": ORACLE}, cwd=str(s.root))
    d = s.gk.authorize(call)
    first = s.gk.record(call, ToolOutcome("", exit_code=1), call_id=d.call_id).ref
    text = _record_refusal(s, call, d.call_id)
    s.say(ledger(claim(expect="FAIL")))
    # "a call is recorded exactly once": its first record is the evidence
    return Refusal(text, None, lambda: s.stamp("C1", first, "EXPECTED_FAIL") or "")


# -- decisions ----------------------------------------------------------------------------------
@scenario("decision:no_ledger")
def _no_ledger(tmp: Path) -> Refusal:
    s = Session(tmp)
    text = s.edit()

    def follow() -> str:  # copy and fill in the ledger it shows
        template = text[text.index("claim_ledger:") :]
        filled = template.replace("<what this change rests on>", "VALUE is wrong")
        filled = filled.replace("<what would refute it>", "the check passes now")
        filled = filled.replace("<the command that decides it>", ORACLE)
        s.say(filled)
        return s.code_of_edit()

    return Refusal(text, None, follow)


@scenario("decision:ungrounded_premises")
def _ungrounded_premises(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    text = s.edit()

    def follow() -> str:
        (cid, result) = SUGGESTED_RESULT.findall(text)[0]
        assert s.stamp(cid, s.run(suggested_run(text)), result) == ""
        return s.code_of_edit()

    return Refusal(text, "C1", follow)


@scenario("decision:unannounced_mutation")
def _unannounced_mutation(tmp: Path) -> Refusal:
    s = Session(tmp)
    (s.root / "bump.sh").write_text("echo 'VALUE = 7' > app.py\n")
    s.say(ledger(claim(expect="FAIL")))
    s.run("sh bump.sh")  # an execute that changes a tracked file while C1 is ungrounded
    text = s.edit()

    def follow() -> str:  # "revert with `git checkout -- app.py`"
        (command,) = re.findall(r"revert with `([^`]+)`", text)
        s.run(command)
        return s.code_of_edit()

    return Refusal(text, "C1", follow)


def _strict(tmp: Path) -> Session:
    s = Session(tmp, config='profile = "strict"\n')
    s.say(ledger(claim(expect="FAIL")))
    assert s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL") == ""
    return s


@scenario("decision:gate_position")
def _gate_position(tmp: Path) -> Refusal:
    s = _strict(tmp)
    text = s.edit()

    def follow() -> str:  # the moves it names, the approval it says G4 needs
        moves = re.findall(r"`gate: (G\d)`", text)
        assert moves, text
        for gate in moves:
            if gate == "G6":
                s.gk.approve(by="user")
            s.say(f"gate: {gate}")
        s.gk.new_turn("go on")
        return s.code_of_edit()

    return Refusal(text, None, follow)


@scenario("decision:approval_turn")
def _approval_turn(tmp: Path) -> Refusal:
    s = _strict(tmp)
    for gate in ("G1", "G2", "G3", "G4"):
        s.say(f"gate: {gate}")
    s.gk.approve(by="user")
    for gate in ("G6", "G7"):
        s.say(f"gate: {gate}")
    text = s.edit()

    def follow() -> str:  # "continue in the next turn"
        s.gk.new_turn("next")
        return s.code_of_edit()

    return Refusal(text, None, follow)


def _approve_held(s: Session, text: str) -> None:
    """What the hold tells the agent to ask of the user: the operator's approval, by id."""
    from infomark.ledger.holds import approve_held

    (did,) = re.findall(r"infomark approve --call (dec_[0-9a-f]+)", text)
    approve_held(s.gk._ledger, did, by="operator")


@scenario("decision:destructive")
def _destructive(tmp: Path) -> Refusal:
    s = Session(tmp, config='profile = "verify"\n')
    text = s.call("Bash", {"command": "rm -rf notes.txt"})

    def follow() -> str:
        _approve_held(s, text)
        return "" if s.call("Bash", {"command": "rm -rf notes.txt"}) == "" else "destructive"

    return Refusal(text, None, follow)


@scenario("decision:grading_edit")
def _grading_edit(tmp: Path) -> Refusal:
    s = Session(tmp)
    (s.root / "app.py").write_text("VALUE = 2\n")
    s.say(ledger(claim()))
    assert s.stamp("C1", s.run(ORACLE), "PASS") == ""
    edit = {"file_path": str(s.root / "check.sh"), "old_string": "grep", "new_string": "grep"}
    text = s.call("Edit", edit)

    def follow() -> str:  # the user answers the host's prompt: the edit runs, and is approved
        assert "the user answers the host's prompt" in text, text
        call = ToolCall("Edit", edit, cwd=str(s.root))
        d = s.gk.authorize(call)
        (s.root / "check.sh").write_text("grep -qx 'VALUE = 2' app.py && test -f app.py\n")
        s.gk.record(call, ToolOutcome("ok"), call_id=d.call_id)
        return s.stamp("C1", s.run(ORACLE), "PASS")  # not self_graded: the user approved it

    return Refusal(text, None, follow)


def _protected(
    tmp: Path, tool: str, bad: dict[str, object], fixed: dict[str, object] | None
) -> Refusal:
    """A guarded call: the step is the same work without what the guard names (``fixed``),
    or, when nothing the agent can do may touch it, leaving it to the user."""
    s = Session(tmp, config='profile = "verify"\n')
    text = s.call(tool, bad)

    def follow() -> str:
        if fixed is None:  # "ask the user": the session goes on without it
            assert re.search(r"the user|off-limits|only the user", text), text
            return s.code_of_edit()
        return "" if s.call(tool, fixed) == "" else "still denied"

    return Refusal(text, None, follow)


@scenario("decision:protected_home")
def _protected_home(tmp: Path) -> Refusal:
    return _protected(tmp, "Read", {"file_path": str(tmp / "p" / ".infomark" / "key")}, None)


@scenario("decision:protected_cli")
def _protected_cli(tmp: Path) -> Refusal:
    return _protected(tmp, "Bash", {"command": "infomark approve"}, None)


@scenario("decision:protected_config")
def _protected_config(tmp: Path) -> Refusal:
    return _protected(
        tmp, "Write", {"file_path": str(tmp / "p" / "infomark.toml"), "content": "x"}, None
    )


@scenario("decision:protected_install")
def _protected_install(tmp: Path) -> Refusal:
    import infomark

    target = Path(infomark.__file__).parent / "gatekeeper.py"
    return _protected(tmp, "Edit", {"file_path": str(target), "old_string": "a"}, None)


@scenario("decision:protected_opaque")
def _protected_opaque(tmp: Path) -> Refusal:
    # "spell the paths out literally"
    return _protected(
        tmp, "Bash", {"command": 'f=notes.txt; rm -f "$f"'}, {"command": "cat notes.txt"}
    )


@scenario("decision:protected_transcript")
def _protected_transcript(tmp: Path) -> Refusal:
    s = Session(tmp, config='profile = "verify"\n')
    transcript = tmp / "transcript.jsonl"
    transcript.write_text("")
    s.gk.host_files = (str(transcript),)
    text = s.call("Bash", {"command": f"rm {transcript}"})

    def follow() -> str:
        assert "may not change" in text, text
        return s.code_of_edit()

    return Refusal(text, None, follow)


@scenario("decision:protected_sandbox")
def _protected_sandbox(tmp: Path) -> Refusal:
    # "run the same command without dangerouslyDisableSandbox"
    return _protected(
        tmp,
        "Bash",
        {"command": "cat notes.txt", "dangerouslyDisableSandbox": True},
        {"command": "cat notes.txt"},
    )


# -- finishes -----------------------------------------------------------------------------------
def _grounded_edited(s: Session, done: str = "C2") -> None:
    s.say(ledger(claim(expect="FAIL"), claim("C2"), done=done))
    assert s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL") == ""
    assert s.edit() == ""


def _follow_finish(s: Session, text: str) -> Callable[[], str]:
    """Run each command the refusal names, stamp each as it says; the finish code after."""

    def follow() -> str:
        from infomark.tools.attest import check

        for cid in dict.fromkeys(re.findall(r"`infomark check (C\d+)`", text)):
            ran = check(s.gk, cid)  # infomark's own run, in its sandbox
            assert ran.evidence is not None, ran.text
        results = dict(SUGGESTED_RESULT.findall(text))
        for command in dict.fromkeys(SUGGESTED_RUN.findall(text)):
            ref = s.run(command)
            for cid, result in results.items():
                s.stamp(cid, ref, result)
        return s.finish()[0]

    return follow


@scenario("finish:completion_without_evidence")
def _completion_without_evidence(tmp: Path) -> Refusal:
    s = Session(tmp, config=ATTESTED)  # the default: its step is `infomark check C2`
    _grounded_edited(s)
    _, text = s.finish()
    return Refusal(text, "C2", _follow_finish(s, text))


@scenario("finish:stale_evidence")
def _stale_evidence(tmp: Path) -> Refusal:
    s = Session(tmp)
    _grounded_edited(s)
    assert s.stamp("C2", s.run(ORACLE)) == ""
    assert s.edit(2) == ""
    _, text = s.finish()
    return Refusal(text, "C2", _follow_finish(s, text))


@scenario("finish:oracle_failed")
def _oracle_failed(tmp: Path) -> Refusal:
    s = Session(tmp)
    _grounded_edited(s)
    assert s.stamp("C2", s.run(ORACLE)) == ""
    (s.root / "app.py").write_text("VALUE = 3\n")  # broken behind the stamp's back
    s.run(ORACLE)  # and the oracle says so
    _, text = s.finish()

    def follow() -> str:  # fix it, then run the oracle and stamp, as it says
        assert s.edit(2) == ""
        return _follow_finish(s, text)()

    return Refusal(text, "C2", follow)


@scenario("finish:ungrounded_premises")
def _finish_ungrounded(tmp: Path) -> Refusal:
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL"), claim("C2"), premises="C1", done="C2"))
    _, text = s.finish()
    return Refusal(text, "C1", _follow_finish(s, text))


@scenario("finish:gate_position")
def _finish_gate_position(tmp: Path) -> Refusal:
    s = Session(tmp, config='profile = "strict"\n')
    s.say(ledger(claim(expect="FAIL")))
    assert s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL") == ""
    for gate in ("G1", "G2", "G3", "G4", "G6", "G7"):
        if gate == "G6":
            s.gk.approve(by="user")
        s.say(f"gate: {gate}")
    s.gk.new_turn("go on")
    assert s.edit() == ""
    s.say(ledger(claim(expect="FAIL"), claim("C2"), done="C2"))
    assert s.stamp("C2", s.run(ORACLE)) == ""
    _, text = s.finish()

    def follow() -> str:  # the moves it names
        for gate in re.findall(r"`gate: (G\d)`", text):
            s.say(f"gate: {gate}")
        return s.finish()[0]

    return Refusal(text, None, follow)


_VERIFY = f'profile = "verify"\n[oracles]\nrequire = ["{ORACLE}"]\n'


@scenario("finish:required_oracle")
def _required_oracle(tmp: Path) -> Refusal:
    s = Session(tmp, config=_VERIFY)
    assert s.edit(2) == ""
    _, text = s.finish()
    return Refusal(text, None, _follow_finish(s, text))


@scenario("finish:check_failed")
def _check_failed(tmp: Path) -> Refusal:
    s = Session(tmp, config=_VERIFY)
    assert s.edit(3) == ""
    s.run(ORACLE)
    _, text = s.finish()

    def follow() -> str:  # fix what fails, re-run the check it names
        assert s.edit(2) == ""
        return _follow_finish(s, text)()

    return Refusal(text, None, follow)


@scenario("finish:self_graded")
def _finish_self_graded(tmp: Path) -> Refusal:
    s = Session(tmp, config=_VERIFY)
    original = (s.root / "check.sh").read_text()
    assert s.edit(3) == ""
    (s.root / "check.sh").write_text("exit 0\n")  # the check, loosened
    s.run(ORACLE)
    _, text = s.finish()

    def follow() -> str:  # "restore them", fix the code, re-run the check
        (s.root / "check.sh").write_text(original)
        assert s.edit(2) == ""
        return _follow_finish(s, text)()

    return Refusal(text, None, follow)


@scenario("finish:weakened_checks")
def _weakened_checks(tmp: Path) -> Refusal:
    s = Session(tmp, config=_VERIFY)
    original = (s.root / TEST_FILE).read_text()
    assert s.edit(2) == ""
    (s.root / TEST_FILE).write_text(original + "\n\ndef test_more():\n    pass\n")
    s.run(ORACLE)
    _, text = s.finish()

    def follow() -> str:  # give the test an assertion (or drop it), re-run the check
        (s.root / TEST_FILE).write_text(original)
        return _follow_finish(s, text)()

    return Refusal(text, None, follow)


@scenario("reject:unsandboxed_run")
def _unsandboxed_run(tmp: Path) -> Refusal:
    from infomark.tools.attest import check
    from infomark.tools.sandbox import probe

    if not probe().available:
        pytest.fail(f"bubblewrap must run for this step: {probe().detail}")
    s = Session(tmp)
    s.say(ledger(claim(expect="FAIL")))
    s.gk.record_sandbox(False, host="claude-code", detail="the settings say no", fix="turn it on")
    s.stamp("C1", s.run(ORACLE), "EXPECTED_FAIL")
    text = s.rejection()

    def follow() -> str:  # "`infomark check C1` runs its oracle in infomark's own sandbox"
        assert "`infomark check C1`" in text, text
        ran = check(s.gk, "C1")
        assert ran.evidence is not None and ran.outcome == "FAIL", ran.text
        return "" if s.gk.state.claims["C1"].status == "Exact" else "unsandboxed_run"

    return Refusal(text, "C1", follow)


# -- infomark's own runs: `infomark check C…` judges the runner's report ------------------------
PY = f"{sys.executable} -m pytest -q -p no:cacheprovider"
RUN_FILES = {
    "test_fix.py": (
        "import pytest\n\nimport app\n\n\ndef test_two():\n    assert app.VALUE == 2\n\n\n"
        "@pytest.mark.skip\ndef test_later():\n    assert app.VALUE\n"
    ),
    "test_cases.py": (
        "import pytest\n\nimport app\n\n\n"
        "@pytest.mark.parametrize('v', getattr(app, 'CASES', [1, 2]))\n"
        "def test_case(v):\n    assert v\n"
    ),
}
PATCH_RUNTEST = (
    "import _pytest.python\n_orig = _pytest.python.Function.runtest\n\n\ndef runtest(self):\n"
    "    try:\n        _orig(self)\n    except AssertionError:\n        pass\n\n\n"
    "_pytest.python.Function.runtest = runtest\nVALUE = 1\n"
)


def _attested_session(tmp: Path) -> Session:
    """A session whose claims are grounded by infomark's own runs only; its baseline is
    recorded before the agent's changes (as a session's first action records it)."""
    from infomark.gates import baseline
    from infomark.tools.sandbox import probe

    if not probe().available:
        pytest.fail(f"bubblewrap must run for this step: {probe().detail}")
    s = Session(tmp, config=ATTESTED, files=RUN_FILES)
    baseline.ensure(s.gk.store)
    return s


def _check(s: Session, cid: str = "C1") -> str:
    """`infomark check C1`: the text the agent reads."""
    from infomark.tools.attest import check

    return check(s.gk, cid).text


def _run_code(text: str) -> str:
    """The code an attested run's answer names in its first line ("" when none)."""
    m = re.match(r"\[infomark attested run of [^\n]*?: [A-Z_]+ \((\w+)\) evidence_ref=", text)
    return m.group(1) if m else ""


def _redeclare(s: Session, **claim_fields: str) -> Callable[[], str]:
    """Follow "declare an oracle that …": the same claim with another oracle, checked again."""

    def follow() -> str:
        s.say(ledger(claim(**claim_fields)))
        return _run_code(_check(s))

    return follow


def _change_back(s: Session, text: str) -> Callable[[], str]:
    """Follow "undo / fix the change …": app.py as ``text``, checked again."""

    def follow() -> str:
        (s.root / "app.py").write_text(text)
        return _run_code(_check(s))

    return follow


@scenario("run:no_tests_ran")
def _no_tests_ran(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    s.say(ledger(claim(oracle=f"{PY} test_fix.py::test_later", expect="FAIL")))  # skipped
    follow = _redeclare(s, oracle=f"{PY} test_fix.py::test_two", expect="FAIL")
    return Refusal(_check(s), "C1", follow)


@scenario("run:named_test_not_run")
def _named_test_not_run(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    s.say(ledger(claim(oracle=f"{PY} {TEST_FILE} test_fix.py::test_later")))
    return Refusal(_check(s), "C1", _redeclare(s, oracle=f"{PY} {TEST_FILE}"))


@scenario("run:oracle_cannot_fail")
def _oracle_cannot_fail(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    s.say(ledger(claim(oracle=f"{PY} {TEST_FILE}", expect="FAIL")))  # passes before any fix
    follow = _redeclare(s, oracle=f"{PY} test_fix.py::test_two", expect="FAIL")
    return Refusal(_check(s), "C1", follow)


@scenario("run:masked_failure")
def _masked_failure(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    masked = f"{PY} test_fix.py::test_two || {sys.executable} -c pass"  # no static mask
    s.say(ledger(claim(oracle=masked, expect="FAIL")))
    follow = _redeclare(s, oracle=f"{PY} test_fix.py::test_two", expect="FAIL")
    return Refusal(_check(s), "C1", follow)


@scenario("run:collection_error")
def _collection_error(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    s.say(ledger(claim(oracle=f"{PY} test_fix.py::test_two")))
    (s.root / "app.py").write_text("VALUE = (2\n")  # a fix with a syntax error
    return Refusal(_check(s), "C1", _change_back(s, "VALUE = 2\n"))


@scenario("run:fewer_tests")
def _fewer_tests(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    s.say(ledger(claim(oracle=f"{PY} test_cases.py")))
    (s.root / "app.py").write_text("VALUE = 1\nCASES = [1]\n")  # one case fewer
    return Refusal(_check(s), "C1", _change_back(s, "VALUE = 1\n"))


@scenario("run:runner_tampered")
def _runner_tampered(tmp: Path) -> Refusal:
    s = _attested_session(tmp)
    s.say(ledger(claim(oracle=f"{PY} test_fix.py::test_two")))
    (s.root / "app.py").write_text(PATCH_RUNTEST)  # failures swallowed by a patched runner
    return Refusal(_check(s), "C1", _change_back(s, "VALUE = 2\n"))


# -- the property -------------------------------------------------------------------------------
def test_every_code_is_driven_or_listed() -> None:
    covered = set(SCENARIOS) | set(NOT_A_REFUSAL) | set(ELSEWHERE)
    assert vocabulary() - covered == set(), "a code with no scenario and no listed reason"
    assert covered - vocabulary() == set(), "a scenario for a code that no longer exists"
    assert not set(SCENARIOS) & (set(NOT_A_REFUSAL) | set(ELSEWHERE))


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_the_refusal_names_its_code_claim_and_a_step_that_moves_forward(
    tmp_path: Path, key: str
) -> None:
    code = key.split(":", 1)[1]
    OPEN.clear()
    refusal = SCENARIOS[key](tmp_path)
    text = refusal.text
    claims = OPEN[-1].gk.state.claims if OPEN else {}
    for cid, result in SUGGESTED_RESULT.findall(text):  # the result its expectation needs
        want = "EXPECTED_FAIL" if claims[cid].expect == "FAIL" else "PASS"
        assert result == want, f"{cid} is told result={result}: {text}"
    assert re.search(rf"(?<![a-z_]){code}(?![a-z_])", text), f"code {code} not named: {text}"
    if refusal.claim is not None:
        assert re.search(rf"\b{refusal.claim}\b", text), f"claim not named: {text}"
    if key.startswith("run:"):  # infomark's own run: the judge's code, and its step
        assert RunReason(code).hint in text, f"no step for {code}: {text}"
    for command in SUGGESTED_RUN.findall(text):  # never a command infomark would refuse
        assert weakness(command) is None, (command, text)
    after = refusal.follow()
    assert after != code, f"following the step of {key} left the same refusal: {text}"
    for session in OPEN:
        session.gk.close()
