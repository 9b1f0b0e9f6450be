"""Sessions, audit, report and key as a team lead uses them: through the installed executable.

Sessions are made with the real facade (wrap() drives authorize → run → record), the CLI is
the real console script, the HTML page is loaded in a real headless Chromium.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser import browser
from helpers import OWN_RUNS_TOML

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.timeline import summarize

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))

LEDGER = (
    'claim_ledger:\n  claims:\n    - id: C1\n      text: "the check passes"\n'
    '      status: Hypothetical\n      falsifier: "check.sh exits non-zero"\n'
    '      oracle: "sh check.sh"\n  premises_for_plan: [C1]\n'
)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cwd = next(p for p in home.parents if p.is_dir())  # a home's parent may not exist (typos)
    return subprocess.run(
        [EXE, *args, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def _executor(call: ToolCall) -> ToolOutcome:
    if call.tool == "bash":
        return ToolOutcome(output="1 passed", exit_code=0)
    return ToolOutcome(output="edited")


def honest_session(home: Path, root: Path, session: str) -> None:
    """Declare C1, get denied, run the oracle, stamp it, edit, re-run, re-stamp, finish."""
    with Gatekeeper.open(home, session, root=root) as gk:
        tool = gk.wrap(_executor)
        gk.new_turn("fix it")
        gk.ingest(LEDGER)
        edit = ToolCall("Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"})
        assert tool(edit).is_error  # denied: C1 is outside G
        for _ in range(2):
            run = gk.evidence(_ref(tool(ToolCall("bash", {"command": "sh check.sh"}))))
            assert run is not None
            gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={run.ref} result=PASS")
            if _ == 0:
                assert not tool(edit).is_error
        assert gk.can_finish("Done: the check passes.").allow


def _ref(outcome: ToolOutcome) -> str:
    text = outcome.output if isinstance(outcome.output, str) else outcome.output.decode()
    found = re.search(r"evidence_ref=(ev_[0-9a-f]{24})", text)
    assert found, text
    return found.group(1)


def capped_session(home: Path, root: Path, session: str) -> None:
    """Edits, then keeps saying "done" without evidence until the refusal cap lets it go."""
    with Gatekeeper.open(home, session, root=root) as gk:
        tool = gk.wrap(_executor)
        gk.ingest(LEDGER)
        run = gk.evidence(_ref(tool(ToolCall("bash", {"command": "sh check.sh"}))))
        assert run is not None
        gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={run.ref} result=PASS")
        tool(ToolCall("Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"}))
        for _ in range(10):
            if gk.can_finish("Done.").allow:
                break


@pytest.fixture
def lead_home(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    # the executor is a stand-in (no real run to attest): what the lead reads, not grounding
    (root / "infomark.toml").write_text(OWN_RUNS_TOML)
    home = root / ".infomark"
    honest_session(home, root, "alpha")
    capped_session(home, root, "beta")
    return home


def test_sessions_lists_newest_first_with_verdicts(lead_home: Path) -> None:
    proc = cli(lead_home, "sessions", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["session"] for r in rows] == ["beta", "alpha"]
    assert {r["session"]: r["verdict"] for r in rows} == {
        "alpha": "finished",
        "beta": "finished_unverified",
    }
    assert set(rows[0]) == {"session", "host", "started", "last_activity", "events", "verdict"}
    human = cli(lead_home, "sessions")
    assert "finished_unverified" in human.stdout and "alpha" in human.stdout


def test_audit_without_a_session_takes_the_latest_and_says_so(lead_home: Path) -> None:
    proc = cli(lead_home, "audit")
    assert proc.returncode == 5, proc.stderr  # finished unverified: CI must not pass it
    assert "session beta (the latest" in proc.stderr
    assert "verdict finished_unverified is in --fail-on" in proc.stderr
    assert "finished through the refusal cap" in proc.stdout
    data = json.loads(cli(lead_home, "audit", "--json", "--fail-on", "none").stdout)
    assert data["session"] == "beta" and data["verdict"] == "finished_unverified"
    assert data["verified"] is True  # verified by default


def test_fail_on_gates_ci_on_the_verdict(lead_home: Path) -> None:
    assert cli(lead_home, "audit", "--session", "alpha").returncode == 0  # finished on evidence
    assert cli(lead_home, "audit", "--session", "beta", "--fail-on", "none").returncode == 0
    assert cli(lead_home, "report", "beta", "--fail-on", "bypass,tamper").returncode == 0
    assert cli(lead_home, "report", "beta").returncode == 5
    bad = cli(lead_home, "audit", "--fail-on", "unverifed")
    assert bad.returncode == 2 and "unknown category unverifed" in bad.stderr


def test_an_unknown_session_or_home_is_an_error_not_a_new_empty_one(lead_home: Path) -> None:
    typo = cli(lead_home, "audit", "--session", "alhpa")
    assert typo.returncode == 2
    assert "no session 'alhpa'" in typo.stderr and "did you mean alpha" in typo.stderr
    missing = lead_home.parent / ".infomrk"
    proc = cli(missing, "audit")
    assert proc.returncode == 2
    assert "no ledger home" in proc.stderr and "did you mean .infomark" in proc.stderr
    assert not missing.exists()
    assert "Traceback" not in typo.stderr + proc.stderr
    events_before = sqlite3.connect(lead_home / "ledger.db").execute(
        "SELECT count(DISTINCT session) FROM events"
    )
    assert events_before.fetchone()[0] == 2  # nothing created for the typo


def test_audit_verifies_by_default_and_no_verify_skips(lead_home: Path) -> None:
    db = sqlite3.connect(lead_home / "ledger.db")
    db.execute(
        "UPDATE events SET payload = replace(payload, 'Hypothetical', 'Exact') "
        "WHERE session = 'alpha' AND type = 'ledger_replaced'"
    )
    db.commit()
    db.close()
    proc = cli(lead_home, "audit", "--session", "alpha")
    assert proc.returncode == 1
    assert "verification FAILED at seq" in proc.stderr
    assert "does not verify" in proc.stdout  # the verdict line says tampered
    skipped = cli(lead_home, "audit", "--session", "alpha", "--no-verify", "--json")
    assert skipped.returncode == 0
    assert json.loads(skipped.stdout)["verified"] is None


def test_timeline_tells_the_story_in_order(lead_home: Path) -> None:
    proc = cli(lead_home, "report", "alpha", "--json")
    assert proc.returncode == 0, proc.stderr
    story = json.loads(proc.stdout)
    kinds = [e["kind"] for e in story["timeline"]]
    # prompt → claims → denied call → oracle run → stamp → edit → … → finish
    order = ["prompt", "ledger", "denied", "run", "stamp", "edit", "finish"]
    positions = [kinds.index(k) for k in order]
    assert positions == sorted(positions), kinds
    assert kinds[-1] == "finish"
    steps = story["history"]["C1"]
    assert [s["status"] for s in steps] == ["Hypothetical", "Exact", "Exact"]
    assert steps[1]["command"] == "sh check.sh" and steps[1]["outcome"] == "PASS"
    assert story["files_changed"] == ["app.py"]
    assert story["denied"] == 1 and story["verdict"] == "finished"


def test_report_markdown_for_a_pull_request(lead_home: Path, tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    proc = cli(lead_home, "report", "beta", "--md", str(md), "--fail-on", "none")
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert "**Verdict: finished_unverified**" in text
    assert "| C1 | the check passes | sh check.sh |" in text
    assert "`app.py`" in text


def _browser(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return browser(*args, profile=profile, what="the report page test")


def test_report_page_renders_in_a_real_browser(lead_home: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = cli(lead_home, "report", "alpha", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    dom = _browser("--dump-dom", page.as_uri(), profile=tmp_path / "p1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    verdict = re.search(r'<p id="verdict"[^>]*>(.*?)</p>', html, re.S)
    assert verdict and "backed by checks that passed" in verdict.group(1)
    assert re.search(r'<b id="verified">verified</b>', html)
    timeline = re.search(r'<table id="timeline">(.*?)</table>', html, re.S)
    assert timeline and timeline.group(1).count("<tr") >= 8
    assert "<script" not in page.read_text()  # self-contained: no script, no external resource
    assert "http" not in re.sub(r"<!doctype html>", "", page.read_text(), flags=re.I)
    shot = tmp_path / "report.png"
    done = _browser(
        f"--screenshot={shot}", "--window-size=1200,900", page.as_uri(), profile=tmp_path / "p2"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_page_escapes_what_the_agent_wrote(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    home = root / ".infomark"
    with Gatekeeper.open(home, "xss", root=root) as gk:
        gk.ingest(LEDGER.replace("the check passes", "<script>alert(1)</script>"))
    page = tmp_path / "r.html"
    assert cli(home, "report", "xss", "--html", str(page)).returncode == 0
    text = page.read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_key_public_pins_bundles(lead_home: Path, tmp_path: Path) -> None:
    proc = cli(lead_home, "key", "--public")
    assert proc.returncode == 0, proc.stderr
    pub = proc.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{64}", pub)
    secret = (lead_home / "key").read_bytes().hex()
    assert secret not in proc.stdout + cli(lead_home, "key", "--json").stdout
    bundle = tmp_path / "b.json"
    assert cli(lead_home, "audit", "--session", "alpha", "--export", str(bundle)).returncode == 0
    ok = subprocess.run(
        [EXE, "verify-bundle", str(bundle), "--public-key", pub],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    wrong = subprocess.run(
        [EXE, "verify-bundle", str(bundle), "--public-key", "0" * 64],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert wrong.returncode == 1


def _rows(home: Path, session: str) -> list[Any]:
    with Gatekeeper.open(home, session) as gk:
        return list(gk.events())


def test_verdicts_follow_what_happened(lead_home: Path, tmp_path: Path) -> None:
    alpha = summarize("alpha", _rows(lead_home, "alpha"))
    assert alpha.verdict == "finished" and alpha.flags == []
    assert summarize("alpha", _rows(lead_home, "alpha"), tampered=True).verdict == "tampered"
    root = tmp_path / "q"
    root.mkdir()
    (root / "infomark.toml").write_text(OWN_RUNS_TOML)  # a stand-in executor, as above
    home = root / ".infomark"
    with Gatekeeper.open(home, "open", root=root) as gk:
        gk.ingest(LEDGER)
    assert summarize("open", _rows(home, "open")).verdict == "open"
    with Gatekeeper.open(home, "bypass", root=root) as gk:
        tool = gk.wrap(_executor)
        gk.ingest(LEDGER)
        gk.authorize(ToolCall("Edit", {"file_path": "x"}), bypass=True)
        run = gk.evidence(_ref(tool(ToolCall("bash", {"command": "sh check.sh"}))))
        assert run is not None
        gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={run.ref} result=PASS")
        assert gk.can_finish("done").allow
    story = summarize("bypass", _rows(home, "bypass"))
    assert story.verdict == "bypassed" and story.bypassed == 1
    # issue 34 §3: CI gates on it through the real CLI (exit 5), and on a tampered journal
    for command in ("audit", "report"):
        gated = cli(home, command, "bypass")
        assert gated.returncode == 5 and "verdict bypassed is in --fail-on" in gated.stderr
        assert cli(home, command, "bypass", "--fail-on", "tamper").returncode == 0
    with sqlite3.connect(home / "ledger.db") as db:  # an event rewritten behind its back
        db.execute(
            "UPDATE events SET payload = replace(payload, 'check.sh', 'check.sH') "
            "WHERE session = 'bypass' AND payload LIKE '%check.sh%'"
        )
    for command in ("audit", "report"):  # tampering exits 1, whatever --fail-on says
        assert cli(home, command, "bypass", "--fail-on", "none").returncode == 1


def test_json_errors_are_json_and_exit_codes_hold(tmp_path: Path) -> None:
    home = tmp_path / "nowhere" / ".infomark"
    proc = cli(home, "audit", "--json")
    assert proc.returncode == 2
    err = json.loads(proc.stdout)["error"]
    assert err["code"] == "usage_error" and err["exit_code"] == 2
    assert "no ledger home" in err["message"]
    bad = cli(tmp_path / ".infomark", "authorize", "--tool", "Edit", "--input", "[1]", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "usage_error"


def test_an_unusable_home_is_a_clear_error_not_an_internal_one(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = cli(blocker / ".infomark", "ingest", "-", "--json")
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "os_error"
    assert str(blocker) in proc.stderr


def test_hook_help_prints_help_without_reading_stdin() -> None:
    # stdin stays open and empty: a hook that read it would still be waiting at the timeout
    proc = subprocess.Popen(
        [EXE, "hook", "claude-code", "--help"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        code = proc.wait(timeout=30)
        out = proc.stdout.read() if proc.stdout else ""
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()
    assert code == 0
    assert "usage: infomark hook claude-code" in out and "--url SERVICE_URL" in out


def test_audit_takes_the_session_as_report_does(lead_home: Path) -> None:
    """docs/cli.md: `infomark audit S` names the session like `infomark report S`."""
    by_arg = cli(lead_home, "audit", "alpha", "--json")
    by_opt = cli(lead_home, "audit", "--session", "alpha", "--json")
    assert by_arg.returncode == 0, by_arg.stderr
    a, b = json.loads(by_arg.stdout), json.loads(by_opt.stdout)
    assert a["session"] == b["session"] == "alpha" and a["verdict"] == b["verdict"] == "finished"
    assert cli(lead_home, "report", "alpha", "--json").returncode == 0
    both = cli(lead_home, "audit", "alpha", "--session", "beta")
    assert both.returncode == 2 and "two sessions named" in both.stderr


def test_a_failed_edit_is_not_a_changed_file(tmp_path: Path) -> None:
    """An `edit` whose tool errored (old_string not found) changed nothing: audit and report
    list it in the timeline as failed, never under `files changed`."""
    root = tmp_path / "project"
    root.mkdir()
    home = root / ".infomark"

    def executor(call: ToolCall) -> ToolOutcome:
        if call.input.get("old_string") == "missing":
            return ToolOutcome(output="", error="old_string not found in app.py", is_error=True)
        return _executor(call)

    with Gatekeeper.open(home, "edits", root=root) as gk:
        tool = gk.wrap(executor)
        gk.ingest(LEDGER)
        run = gk.evidence(_ref(tool(ToolCall("bash", {"command": "sh check.sh"}))))
        assert run is not None
        gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={run.ref} result=PASS")
        bad = ToolCall("Edit", {"file_path": "bad.py", "old_string": "missing", "new_string": "x"})
        assert tool(bad).is_error
        tool(ToolCall("Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"}))
    audit = json.loads(cli(home, "audit", "edits", "--json").stdout)
    assert audit["story"]["files_changed"] == ["app.py"]
    human = cli(home, "audit", "edits")
    assert "changed: app.py" in human.stdout and "changed: bad.py" not in human.stdout
    report = cli(home, "report", "edits")
    assert "bad.py failed: nothing changed" in report.stdout
    md = home.parent / "r.md"
    assert cli(home, "report", "edits", "--md", str(md)).returncode == 0
    assert "`bad.py`" not in md.read_text()
