"""The steering inbox and its lease, on a real ledger.db, from one and from several processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.errors import UserError
from infomark.ledger.engine import Ledger
from infomark.ledger.inbox import MAX_MESSAGE_CHARS, Inbox, InboxRefused, LeaseLost, new_holder
from tests.runner.conftest import events


@pytest.fixture
def ledger(home: Path) -> Ledger:
    return Ledger(home, "s")


@pytest.fixture
def inbox(ledger: Ledger) -> Inbox:
    return Inbox(ledger.journal)


def _refusal(inbox: Inbox, session: str, text: str = "hi") -> InboxRefused:
    with pytest.raises(InboxRefused) as info:
        inbox.send(session, text)
    return info.value


def test_a_session_that_never_had_an_inbox_refuses_and_journals_it(
    inbox: Inbox, home: Path
) -> None:
    err = _refusal(inbox, "s")
    assert err.reason == "never_had_inbox" and "never" in str(err)
    assert [p["reason"] for _, t, p in events(home, "s") if t == "inbox_refused"] == [
        "never_had_inbox"
    ]


def test_delivery_read_and_release_are_journaled_and_each_message_is_read_once(
    inbox: Inbox, home: Path
) -> None:
    holder = new_holder()
    inbox.acquire("s", holder=holder)
    a = inbox.send("s", "first", sender="ops")
    b = inbox.send("s", "second")
    assert inbox.pending("s") == 2
    got = inbox.read("s", holder)
    assert [(m.id, m.sender, m.text) for m in got] == [
        (a.message_id, "ops", "first"),
        (b.message_id, "operator", "second"),
    ]
    assert inbox.read("s", holder) == [] and inbox.pending("s") == 0
    inbox.send("s", "unread")
    inbox.release("s", holder, "finished")
    err = _refusal(inbox, "s")
    assert err.reason == "finished"
    kinds = [(t, p) for _, t, p in events(home, "s")]
    assert [t for t, _ in kinds] == [
        "inbox_opened",
        "inbox_delivered",
        "inbox_delivered",
        "inbox_read",
        "inbox_delivered",
        "inbox_closed",
        "inbox_refused",
    ]
    assert kinds[3][1]["message_ids"] == [a.message_id, b.message_id]
    assert kinds[5][1]["unread"] == 1  # a message left unread is named, not lost silently


def test_an_expired_lease_refuses_with_its_age(ledger: Ledger) -> None:
    now = [1000.0]
    inbox = Inbox(ledger.journal, clock=lambda: now[0])
    inbox.acquire("s", holder="h", ttl=10)
    now[0] = 1009.0
    assert inbox.liveness("s")[0] == "live"
    now[0] = 1011.0
    err = _refusal(inbox, "s")
    assert err.reason == "lease_expired" and "11s old" in str(err)


def test_a_dead_holder_is_not_live_and_its_lease_is_taken_over(
    inbox: Inbox, home: Path, ledger: Ledger
) -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    dead_pid = int(proc.stdout)
    inbox.acquire("s", holder="old")
    with ledger.journal.write() as db:  # the lease of a process that has since died
        db.execute("UPDATE inbox_leases SET pid = ? WHERE session = 's'", (dead_pid,))
    assert _refusal(inbox, "s").reason == "lease_expired"
    inbox.acquire("s", holder="new")
    with pytest.raises(LeaseLost):
        inbox.heartbeat("s", "old")
    opened = [p for _, t, p in events(home, "s") if t == "inbox_opened"]
    assert opened[-1]["previous"] == "old" and opened[-1]["previous_state"] == "live"


def test_a_live_lease_of_another_holder_is_not_stolen(inbox: Inbox) -> None:
    inbox.acquire("s", holder="mine")
    with pytest.raises(UserError, match="already run by mine"):
        inbox.acquire("s", holder="thief")
    inbox.heartbeat("s", "mine")  # still ours


@pytest.mark.parametrize(
    ("text", "reason"),
    [("", "empty"), ("   \n", "empty"), ("x" * (MAX_MESSAGE_CHARS + 1), "too_large"),
     ("bad \udc80 surrogate", "invalid_text")],
)  # fmt: skip
def test_unusable_messages_are_refused_even_to_a_live_inbox(
    inbox: Inbox, text: str, reason: str
) -> None:
    inbox.acquire("s", holder="h")
    assert _refusal(inbox, "s", text).reason == reason
    assert inbox.pending("s") == 0


@given(st.text(min_size=1, max_size=300).filter(lambda t: t.strip()))
def test_any_text_arrives_exactly_as_sent(inbox: Inbox, text: str) -> None:
    inbox.acquire("prop", holder="h")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert _refusal(inbox, "prop", text).reason == "invalid_text"
        return
    inbox.send("prop", text)
    assert [m.text for m in inbox.read("prop", "h")] == [text]


_SENDER = """
import sys
from infomark.tools.runner.send import send_message
for i in range(int(sys.argv[3])):
    send_message(sys.argv[1], "many", f"{sys.argv[2]}-{i}")
"""


def test_several_processes_send_while_the_holder_reads(home: Path, project: Path) -> None:
    with Ledger(home, "many") as ledger:
        inbox = Inbox(ledger.journal)
        inbox.acquire("many", holder="reader")
        procs = [
            subprocess.Popen([sys.executable, "-c", _SENDER, str(home), f"p{n}", "25"], cwd=project)
            for n in range(4)
        ]
        got: list[str] = []
        while any(p.poll() is None for p in procs):
            got += [m.text for m in inbox.read("many", "reader")]
        assert all(p.wait(timeout=120) == 0 for p in procs)
        got += [m.text for m in inbox.read("many", "reader")]
        inbox.close()
    assert sorted(got) == sorted(f"p{n}-{i}" for n in range(4) for i in range(25))
    rows = events(home, "many")
    assert sum(t == "inbox_delivered" for _, t, _ in rows) == 100
    read_ids = [i for _, t, p in rows if t == "inbox_read" for i in p["message_ids"]]
    assert len(read_ids) == len(set(read_ids)) == 100
    with Ledger(home, "many") as ledger:
        from infomark.ledger.audit import build_audit

        assert build_audit(ledger, verify=True).verified is True
