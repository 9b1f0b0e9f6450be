"""``audit``'s story, told from the verification pass itself (issue 28).

The audit reads the session once: each row is verified, replayed and told. Its story keeps
the last entries of the timeline and of the commands run and counts the rest, so memory is
flat in the number of events; everything else is the story ``report`` tells, entry for
entry. Memory is pinned by tracemalloc's peak (deterministic), never by a clock.
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from infomark.ledger import timeline as timeline_mod
from infomark.ledger.audit import build_audit
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import EvidenceClass, build_record, ref_for
from infomark.ledger.keys import Key
from infomark.ledger.timeline import (
    READS,
    SessionStory,
    finish_story,
    story_reader,
    summarize,
)

KEY = Key.from_bytes(b"s" * 32)
SESSION = "long"


def _run(led: Ledger, n: int, command: str) -> str:
    """Journal a command run (an execution evidence event and its index row) at seq ``n``."""
    output = f"{n} passed\n".encode()
    record = build_record(
        session=SESSION,
        seq=n,
        call=ToolCall("Bash", {"command": command}),
        outcome=ToolOutcome(output, 0),
        evidence_class=EvidenceClass.EXECUTION,
        key_id=KEY.key_id,
        tool_class="execute",
        output=(led.blobs.put(output), len(output)),
    )
    ref, mac = ref_for(KEY, record)
    led.emit("evidence_recorded", {"ref": ref, "record": record, "mac": mac})
    led.journal.index_evidence(ref, SESSION, n, record, mac)
    return ref


def grow(home: Path, events: int) -> Ledger:
    """A session of ``events`` rows, each a timeline entry: a command run, a denied call, a
    prompt, in turn (the shape of ``bench.core.grow``, with every row told)."""
    led = Ledger(home, SESSION, key=KEY, root=home.parent)
    with led.transaction():
        for n in range(1, events + 1):
            if n % 3 == 1:
                _run(led, n, f"pytest -q tests/test_{n % 50}.py")
            elif n % 3 == 2:
                led.emit("decision", {"decision": "deny", "tool": "Edit", "code": "x", "i": n})
            else:
                led.emit("turn_started", {"turn": n})
    return led


def audit_story(led: Ledger, keep: int | None) -> SessionStory:
    """What ``infomark audit`` tells: the story fed from the audit's own pass."""
    reader = story_reader(SESSION, keep=keep, ledger=led)
    report = build_audit(led, verify=True, feed=reader.take, wants=READS)
    assert report.verified is True, report.problems
    return finish_story(reader)


def test_the_story_keeps_its_last_entries_and_counts_the_rest(tmp_path: Path) -> None:
    led = grow(tmp_path / ".infomark", 600)
    full = summarize(SESSION, led.journal.events(SESSION))  # what `report` tells
    assert len(full.timeline) == 600 and len(full.commands_run) == 200
    assert audit_story(led, None).to_dict() == full.to_dict()  # from the pass: the same
    kept = audit_story(led, 100)
    assert kept.timeline == full.timeline[-100:]
    assert kept.commands_run == full.commands_run[-100:]
    assert (kept.timeline_omitted, kept.commands_run_omitted) == (500, 100)
    shown = kept.to_dict()
    assert list(shown) == [
        *list(full.to_dict())[:9],
        "timeline_omitted",
        *list(full.to_dict())[9:13],
        "commands_run_omitted",
        *list(full.to_dict())[13:],
    ]
    for name in ("timeline", "timeline_omitted", "commands_run", "commands_run_omitted"):
        del shown[name]
    rest = full.to_dict()
    del rest["timeline"], rest["commands_run"]
    assert shown == rest  # the verdict, the counts, the claims and the files: all of it
    led.close()


def test_a_short_session_is_told_whole(tmp_path: Path) -> None:
    led = grow(tmp_path / ".infomark", 30)
    kept = audit_story(led, 100)
    assert kept.timeline == summarize(SESSION, led.journal.events(SESSION)).timeline
    assert (kept.timeline_omitted, kept.commands_run_omitted) == (0, 0)
    led.close()


def test_a_stamp_of_evidence_the_story_forgot_still_names_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The story remembers the last few evidence events; a stamp that names an older one
    has the journal read again (once) and shows the command that ran, as `report` does."""
    monkeypatch.setattr(timeline_mod, "_EVIDENCE_KEPT", 4)
    led = Ledger(tmp_path / ".infomark", SESSION, key=KEY, root=tmp_path)
    with led.transaction():
        first = _run(led, 1, "sh check.sh")
        for n in range(2, 12):
            _run(led, n, f"echo {n}")
        last = _run(led, 12, "sh last.sh")
        for n, ref in ((13, first), (14, last), (15, "ev_none"), (16, first)):
            led.emit(
                "stamp_applied",
                {"claim_id": "C1", "status": "Exact", "kind": "oracle_stamp", "evidence_ref": ref},
            )
            assert led.state.seq == n
    full = summarize(SESSION, led.journal.events(SESSION))
    kept = audit_story(led, 100)
    assert kept.history == full.history
    ran = [(s.command, s.outcome) for s in kept.history["C1"]]
    check, last = ("sh check.sh", "PASS"), ("sh last.sh", "PASS")
    assert ran == [check, last, (None, None), check]
    led.close()


@pytest.mark.parametrize(
    "garbled", ["not json", "[1, 2]", '{"decision": "deny"} and more', "", "5", b"\x00{}"]
)
def test_a_garbled_payload_is_named_and_the_rest_is_still_told(
    tmp_path: Path, garbled: str | bytes
) -> None:
    """The pass parses a payload with one call of the C scanner; whatever else a row holds
    (not JSON, not an object, trailing text, not text) is read as garbled: the row is named
    as edited and every other row is still reduced and told."""
    home = tmp_path / ".infomark"
    led = grow(home, 30)
    clean = summarize(SESSION, led.journal.events(SESSION))
    led.close()
    db = sqlite3.connect(home / "ledger.db")
    with db:
        db.execute("UPDATE events SET payload = ? WHERE seq = 5", (garbled,))
    db.close()
    led = Ledger(home, SESSION, key=KEY, root=tmp_path)
    reader = story_reader(SESSION, keep=100, ledger=led)
    report = build_audit(led, verify=True, feed=reader.take, wants=READS)
    story = finish_story(reader, tampered=True)
    assert report.verified is False
    assert report.first_problem == {
        "session": SESSION,
        "seq": 5,
        "code": "edited",
        "message": "event 5 (decision) was edited",
    }
    assert report.events == 30 and story.events == 30
    assert [e for e in story.timeline if e.seq != 5] == [e for e in clean.timeline if e.seq != 5]
    assert story.commands_run == clean.commands_run and story.denied == clean.denied - 1
    led.close()


def _peak(led: Ledger, keep: int | None) -> int:
    tracemalloc.start()
    audit_story(led, keep)
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return top


def test_audit_memory_is_flat_in_the_number_of_events(tmp_path: Path) -> None:
    """The audit with its story holds no more at 6,000 events than at 600 (rows streamed,
    the story kept to its last entries); a story that keeps every entry grows tenfold."""
    small = grow(tmp_path / "small" / ".infomark", 600)
    big = grow(tmp_path / "big" / ".infomark", 6_000)
    kept_small, kept_big = _peak(small, 100), _peak(big, 100)
    assert kept_big < 1.2 * kept_small + 64_000, (kept_small, kept_big)
    whole_small, whole_big = _peak(small, None), _peak(big, None)
    assert whole_big > 5 * whole_small, (whole_small, whole_big)  # the measure sees growth
    small.close()
    big.close()
