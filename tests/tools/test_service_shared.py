"""Three ``infomark serve`` processes on one PostgreSQL store are one ledger (issue 19).

Each instance is a "host" of its own: its own home (the deployment's key copied in, joined
with the real ``infomark init --store``), its own uvicorn process on 127.0.0.1. What one
instance commits, the others see: the finish gate refuses on one instance after an edit
recorded on another; concurrent writers through all three keep one gap-free chain; the
steering inbox delivers through any instance to the runtime that holds the lease, and a
second runtime is refused the lease from another host.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import Service, start_service, stop_service
from helpers import OWN_RUNS_TOML, ledger_text
from store_backends import Backend

from infomark.client import Client
from infomark.kernel.errors import UserError
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.inbox import Inbox
from infomark.ledger.keys import load_key
from infomark.ledger.store.select import open_journal

pytestmark = [pytest.mark.postgres_only, pytest.mark.usefixtures("backend")]

EXE = str(Path(sys.executable).with_name("infomark"))
EDIT = ToolCall(tool="Edit", input={"file_path": "a.py", "old_string": "1", "new_string": "2"})
PYTEST = ToolCall(tool="Bash", input={"command": "pytest -q"})
PASSED = ToolOutcome(output="1 passed in 0.01s", exit_code=0)
LEDGER = ledger_text(("C1", "Exact", "pytest -q"), premises=("C1",))


def _join(home: Path, secret: bytes, url: str) -> None:
    """A new host: the deployment's key, then the real ``infomark init --store``."""
    home.mkdir(parents=True, mode=0o700)
    (home / "key").write_bytes(secret)
    (home / "key").chmod(0o600)
    proc = subprocess.run(
        [EXE, "init", "--home", str(home), "--store", url],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()


@pytest.fixture
def hosts(tmp_path: Path, backend: Backend) -> Iterator[list[Service]]:
    assert backend.url is not None
    secret = secrets.token_bytes(32)
    homes = [tmp_path / f"host{i}" / "home" for i in range(3)]
    for home in homes:
        _join(home, secret, backend.url)
    token = (homes[0] / "token").read_bytes()
    for home in homes[1:]:  # one service behind one address: one token
        (home / "token").write_bytes(token)
    project = tmp_path / "checkout"  # the same checkout path on every host
    project.mkdir()
    # one ledger across instances is the subject, not grounding: the operator's explicit
    # opt-out of attested runs, as start_service writes for its own projects
    (project / "infomark.toml").write_text(OWN_RUNS_TOML)
    started = [
        start_service(home.parent, "--no-access-log", store=backend.url, home=home, project=project)
        for home in homes
    ]
    yield started
    for svc in started:
        stop_service(svc)
        assert "Traceback" not in svc.log()


def _client(svc: Service, session: str) -> Client:
    return Client(svc.url, token=svc.token, session=session)


def test_the_finish_gate_sees_what_other_instances_committed(hosts: list[Service]) -> None:
    a, b, c = (_client(h, "task-1") for h in hosts)
    with a, b, c:
        a.ingest(LEDGER)
        # authorized through one instance, its result recorded through another
        ev = b.record(PYTEST, PASSED, call_id=a.authorize(PYTEST).call_id)
        stamped = c.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
        assert [s["claim_id"] for s in stamped.stamps_applied] == ["C1"], stamped.stamps_rejected
        assert a.ledger().status("C1") == "Exact"
        edit = a.authorize(EDIT)
        assert edit.allowed
        b.record(EDIT, ToolOutcome(output="edited", exit_code=0), call_id=edit.call_id)
        refused = c.can_finish("Done, all tests pass.")
        assert not refused.allow and "no claim is Exact on evidence produced af" in refused.reason
        fresh = a.record(PYTEST, PASSED, call_id=c.authorize(PYTEST).call_id)
        b.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={fresh.ref} result=PASS")
        assert c.can_finish("Done, all tests pass.").allow
        for cl in (a, b, c):
            report = cl.audit(verify=True)
            assert report.verified is True and report.problems == []


def test_concurrent_writers_through_three_instances_keep_one_chain(
    hosts: list[Service],
) -> None:
    errors: list[str] = []

    def write(svc: Service, n: int) -> None:
        try:
            with _client(svc, "shared") as cl:
                for i in range(n):
                    call = ToolCall("Bash", {"command": f"echo {svc.url} {i}"})
                    cl.record(call, PASSED, call_id=cl.authorize(call).call_id)
        except Exception as exc:  # reported to the test thread
            errors.append(f"{svc.url}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=write, args=(h, 15)) for h in hosts for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    seen = []
    for svc in hosts:
        with _client(svc, "shared") as cl:
            events = [(e.seq, e.type) for e in cl.events()]
            assert [s for s, _t in events] == list(range(1, len(events) + 1))  # gap-free
            assert [t for _s, t in events].count("evidence_recorded") == 90  # none lost
            assert cl.audit(verify=True).verified is True
            seen.append(events)
    assert seen[0] == seen[1] == seen[2]  # one journal, whichever instance reads it


def test_the_inbox_and_its_lease_work_across_instances(hosts: list[Service]) -> None:
    url = hosts[0].home.joinpath("store").read_text().strip()
    journals = [open_journal(h.home, load_key(h.home), url) for h in hosts]
    inboxes = [Inbox(j) for j in journals]
    headers = {"authorization": f"Bearer {hosts[0].token}"}
    try:
        inboxes[0].acquire("steer", holder="rt-host0")  # a runtime on host 0 holds the inbox
        with pytest.raises(UserError, match="already run by rt-host0"):
            inboxes[1].acquire("steer", holder="rt-host1")  # another host's runtime: refused
        sent = []
        for svc in hosts[1:]:  # delivered through instances on other hosts
            r = httpx.post(
                f"{svc.url}/v1/sessions/steer/send",
                json={"message": f"via {svc.url}"},
                headers=headers,
                timeout=30,
            )
            assert r.status_code == 200, r.text
            sent.append(r.json()["message_id"])
        got = inboxes[0].read("steer", "rt-host0")
        assert [m.id for m in got] == sent
        inboxes[0].release("steer", "rt-host0")
        r = httpx.post(
            f"{hosts[2].url}/v1/sessions/steer/send",
            json={"message": "late"},
            headers=headers,
            timeout=30,
        )
        assert r.status_code == 409 and r.json()["error"]["details"][0]["msg"] == "finished"
    finally:
        for inbox, journal in zip(inboxes, journals, strict=True):
            inbox.close()
            journal.close()
