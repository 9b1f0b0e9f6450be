"""A hostile agent against the web-source rules (issue 18).

The agent has a shell, knows the code, and wants a claim resting on the web to rank higher
than its page allows: it claims primary for a blog, fetches through lookalike hosts and
redirects, stamps a local copy of a page, dresses a fetch up as an oracle run, and tries to
keep a stamp after the page changed. Each attack is a test; the last one is a hypothesis
property over whole sequences of such moves.
"""

from __future__ import annotations

import http.server
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import urlopen

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.kernel.infomark import InfoMark
from infomark.ledger.calls import ToolCall
from tests.ledger.web_helpers import PAGE, call, fetch, ledger, source_stamp

DOCS = "https://docs.python.org/3/library/os.html"
OBSERVE = Config(profile="observe")  # every call runs (and is journaled): only stamps matter


def _open(
    tmp: Path, session: str = "web", config: Config | None = None, observe: str | None = None
) -> Gatekeeper:
    gk = Gatekeeper.open(tmp / ".infomark", session, root=tmp, config=config)
    text = ledger(("C1", "os.chdir changes the working directory"))
    if observe:  # the claim names the file it rests on: a Read of it could infer it
        text = text.replace(
            "  premises_for_plan:", f"      observe: {observe}\n  premises_for_plan:"
        )
    assert gk.ingest(text).ledger_updated
    return gk


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://docs.python.org.evil.com/3/library/os.html", "not_primary"),
        ("https://docs.python.org@evil.com/3/library/os.html", "userinfo"),
        ("https://docs.python.org:443@evil.com/", "userinfo"),
        ("https://evil.com\\@docs.python.org/", "unreadable_url"),
        ("https://evil.com\\.docs.python.org/", "unreadable_url"),
        ("https://docs-python.org/3/", "not_primary"),
        ("https://docs.pyth\u03bfn.org/3/", "non_ascii_host"),  # Greek omicron
        ("https://xn--docs-pythn-xyz.org/", "non_ascii_host"),
        ("https://docs.python.org%2eevil.com/", "non_ascii_host"),
        ("http://docs.python.org/3/library/os.html", "not_https"),
        ("https://151.101.0.223/3/library/os.html", "ip_host"),
        ("https://docs.python.org/3/?next=https://evil.com/os.html", "embedded_url"),
        ("https://docs.python.org/3/?next=%68ttps:%2F%2Fevil.com", "embedded_url"),
        ("ftp://docs.python.org/3/", "unreadable_url"),
        ("https://docs.python.org /3/", "unreadable_url"),
    ],
)
def test_lookalike_hosts_are_never_primary(tmp_path: Path, url: str, code: str) -> None:
    gk = _open(tmp_path)
    report = gk.ingest(source_stamp("C1", fetch(gk, url).ref, "primary"))
    (applied,) = report.stamps_applied
    assert applied["status"] == "Hypothetical", url
    assert code in applied["demoted"], applied
    assert gk.ledger().status("C1") == "Hypothetical"


def test_a_redirect_from_a_blog_onto_a_primary_domain_is_secondary(tmp_path: Path) -> None:
    gk = _open(tmp_path)
    output = f"REDIRECT DETECTED: the URL redirects to a different host.\nRedirect URL: {DOCS}"
    ev = fetch(gk, "https://evil.example.com/go?to=docs", output)
    assert gk.ingest(source_stamp("C1", ev.ref)).stamps_applied[0]["status"] == "Hypothetical"


def test_a_redirect_off_a_primary_domain_is_secondary(tmp_path: Path) -> None:
    gk = _open(tmp_path)
    output = "Redirected to https://evil.example.com/fake-docs\n\n" + PAGE
    ev = fetch(gk, DOCS, output)
    (applied,) = gk.ingest(source_stamp("C1", ev.ref)).stamps_applied
    assert applied["status"] == "Hypothetical" and applied["demoted"] == ["redirect"]


def test_a_read_of_a_local_copy_of_a_page_grounds_nothing(tmp_path: Path) -> None:
    gk = _open(tmp_path, config=OBSERVE, observe="page.html")  # observes the copy itself
    got = call(gk, "Bash", {"command": f"curl -sSL -o page.html {DOCS}"}, "", exit_code=0)
    copy = call(gk, "Read", {"file_path": str(tmp_path / "page.html")}, PAGE)
    inferred = gk.ingest(f"inference_stamp: claim_id=C1 evidence_ref={copy.ref}\n")
    assert [r["reason"] for r in inferred.stamps_rejected] == ["ineligible_evidence"]
    assert "a local copy of a page fetched in " + got.ref in inferred.stamps_rejected[0]["message"]
    sourced = gk.ingest(source_stamp("C1", copy.ref))
    assert [r["reason"] for r in sourced.stamps_rejected] == ["ineligible_evidence"]
    assert f"stamp {got.ref}" in sourced.stamps_rejected[0]["message"]
    # the fetch itself is web evidence: a source_stamp on it is graded like any page
    assert gk.ingest(source_stamp("C1", got.ref)).stamps_applied[0]["status"] == "Inferred"
    assert gk.ledger().status("C1") == "Inferred"


def test_a_read_of_the_observed_file_that_no_fetch_wrote_infers(tmp_path: Path) -> None:
    """The control: the same Read, of a file no fetch wrote, is a valid inference."""
    gk = _open(tmp_path, config=OBSERVE, observe="page.html")
    call(gk, "Bash", {"command": f"curl -sSL -o other.html {DOCS}"}, "", exit_code=0)
    copy = call(gk, "Read", {"file_path": str(tmp_path / "page.html")}, PAGE)
    assert gk.ingest(f"inference_stamp: claim_id=C1 evidence_ref={copy.ref}\n").stamps_applied


def test_wget_default_names_and_relative_paths_are_copies_too(tmp_path: Path) -> None:
    gk = _open(tmp_path, config=OBSERVE, observe="post.html")
    call(gk, "Bash", {"command": "cd . && wget https://blog.example.com/post.html"}, "", 0)
    copy = call(gk, "Read", {"file_path": "post.html"}, PAGE)
    report = gk.ingest(f"inference_stamp: claim_id=C1 evidence_ref={copy.ref}\n")
    assert [r["reason"] for r in report.stamps_rejected] == ["ineligible_evidence"]
    assert "a local copy of a page" in report.stamps_rejected[0]["message"]


def test_a_fetch_dressed_up_as_an_oracle_run_grounds_nothing(tmp_path: Path) -> None:
    gk = _open(tmp_path, config=OBSERVE)
    curl = f"curl -s {DOCS} | grep -q chdir"
    gk.ingest(
        "claim_ledger:\n  claims:\n    - id: C1\n      text: os has chdir\n      status: Guess\n"
        f'      falsifier: "grep finds nothing"\n      oracle: "{curl}"\n  premises_for_plan: []\n'
    )
    run = call(gk, "Bash", {"command": curl}, "", exit_code=0)
    for kind in ("oracle_stamp", "inference_stamp"):
        report = gk.ingest(f"{kind}: claim_id=C1 evidence_ref={run.ref} result=PASS\n")
        assert [r["reason"] for r in report.stamps_rejected] == ["ineligible_evidence"], kind
        assert "fetched a web page" in report.stamps_rejected[0]["message"]
    assert gk.ledger().status("C1") == "Guess"
    # a loopback URL is the project's own server, not the web: an oracle may use it
    local = "curl -sf http://127.0.0.1:8000/health"
    gk.ingest(
        "claim_ledger:\n  claims:\n    - id: C2\n      text: the server is up\n"
        '      status: Guess\n      falsifier: "curl fails"\n'
        f'      oracle: "{local}"\n  premises_for_plan: []\n'
    )
    up = call(gk, "Bash", {"command": local}, "ok", exit_code=0)
    passed = gk.ingest(f"oracle_stamp: claim_id=C2 evidence_ref={up.ref} result=PASS\n")
    assert passed.stamps_applied


def test_a_fetch_of_another_session_cannot_be_stamped(tmp_path: Path) -> None:
    other = _open(tmp_path, "other")
    ev = fetch(other, DOCS)
    gk = _open(tmp_path, "mine")
    report = gk.ingest(source_stamp("C1", ev.ref, "PRIMARY"))
    assert [r["reason"] for r in report.stamps_rejected] == ["foreign_evidence"]


# -- the page changed before a mutation ---------------------------------------------------------
class _Page(http.server.BaseHTTPRequestHandler):
    body = PAGE.encode()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 standing in for the docs site."""
    _Page.body = PAGE.encode()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _refetch_from(site: str) -> object:
    def refetch(tool: str, inp: dict[str, object]) -> bytes:
        path = urlsplit(str(inp["url"])).path  # the docs URL, served by the local site
        with urlopen(site + path, timeout=10) as response:
            return bytes(response.read())

    return refetch


EDIT = ToolCall("Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, "toolu_e")


def _grounded_on_page(tmp: Path, site: str) -> Gatekeeper:
    (tmp / "a.py").write_text("x = 1\n")
    gk = Gatekeeper.open(tmp / ".infomark", "page", root=tmp)
    gk.ingest(ledger(("C1", "os.chdir exists"), premises=("C1",)))
    with urlopen(site + urlsplit(DOCS).path, timeout=10) as r:
        body = r.read()
    assert gk.ingest(source_stamp("C1", fetch(gk, DOCS, body).ref)).stamps_applied
    gk.refetch = _refetch_from(site)  # type: ignore[assignment]
    return gk


def test_an_unchanged_page_keeps_the_premise(tmp_path: Path, site: str) -> None:
    gk = _grounded_on_page(tmp_path, site)
    assert gk.authorize(EDIT).allowed
    assert gk.ledger().status("C1") == "Inferred"


def test_a_changed_page_makes_the_claim_stale_before_the_mutation(
    tmp_path: Path, site: str
) -> None:
    gk = _grounded_on_page(tmp_path, site)
    _Page.body = b"The os module was rewritten; chdir is gone."
    decision = gk.authorize(EDIT)
    assert not decision.allowed
    assert "stale web source" in decision.reason and "changed since" in decision.reason
    assert gk.ledger().status("C1") == "Guess"  # its stamp is revoked
    (div,) = [e.payload for e in gk.events() if e.type == "divergence"]
    assert div["cause"] == "source_changed" and div["url"] == DOCS
    assert div["was"] != div["digest"]
    # the old fetch cannot re-stamp it; a new fetch of the changed page can
    old = [e.payload["evidence_ref"] for e in gk.events() if e.type == "stamp_applied"][-1]
    assert [r["reason"] for r in gk.ingest(source_stamp("C1", old)).stamps_rejected] == [
        "evidence_predates_claim"
    ]


def test_an_unreachable_page_cannot_confirm_the_premise(tmp_path: Path, site: str) -> None:
    gk = _grounded_on_page(tmp_path, site)

    def down(tool: str, inp: object) -> bytes:
        raise OSError("connection refused")

    gk.refetch = down
    assert not gk.authorize(EDIT).allowed
    (div,) = [e.payload for e in gk.events() if e.type == "divergence"]
    assert div["cause"] == "source_unreachable"


def test_reads_do_not_refetch(tmp_path: Path, site: str) -> None:
    gk = _grounded_on_page(tmp_path, site)
    _Page.body = b"changed"
    assert gk.authorize(ToolCall("Read", {"file_path": "a.py"}, "toolu_r")).allowed
    assert gk.ledger().status("C1") == "Inferred"  # only a mutation re-checks


# -- the property ---------------------------------------------------------------------------------
_PRIMARY_HOSTS = ("docs.python.org", "sub.docs.python.org", "DOCS.python.org")
_OTHER_HOSTS = (
    "docs.python.org.evil.com",
    "evil.com",
    "docs-python.org",
    "docs.pyth\u03bfn.org",
    "151.101.0.223",
    "xn--dcs-python-9ob.org",
)


@st.composite
def urls(draw: st.DrawFn) -> tuple[str, bool]:
    """A URL built from parts, and whether its real host is primary (the test's own oracle)."""
    scheme = draw(st.sampled_from(("https", "https", "http")))
    host = draw(st.sampled_from(_PRIMARY_HOSTS + _OTHER_HOSTS))
    userinfo = draw(st.sampled_from(("", "", "docs.python.org@", "u:p@")))
    path = draw(st.sampled_from(("/3/library/os.html", "/", "/a%2Fb")))
    query = draw(st.sampled_from(("", "", "?q=1", "?next=https://evil.com/x")))
    trick = draw(st.sampled_from(("", "", "\\@evil.com")))
    url = f"{scheme}://{userinfo}{host}{trick}{path}{query}"
    primary = scheme == "https" and not userinfo and host in _PRIMARY_HOSTS and "next=" not in query
    return url, primary and not trick


_RANKS = ("Exact", "Inferred", "Hypothetical", "Guess", "Unknown")
_stamp = st.tuples(
    st.just("stamp"),
    st.sampled_from(("source_stamp", "source_stamp", "oracle_stamp", "inference_stamp")),
    st.sampled_from((-1, -1, -2, 0, 3)),  # which recorded ref (mostly the newest)
    st.sampled_from(("primary", "primary", "secondary", "PRIMARY", "official", None)),
)
actions = st.one_of(
    st.tuples(st.just("fetch"), urls(), st.sampled_from(("WebFetch", "mcp__fetch__fetch"))),
    _stamp,
    st.tuples(st.just("redirect"), urls()),
    _stamp,
    st.tuples(st.just("search")),
    st.tuples(st.just("curl"), urls()),
    st.tuples(st.just("oracle_run")),
    st.tuples(st.just("copy"), urls()),
    _stamp,
    st.tuples(st.just("redeclare"), st.sampled_from(_RANKS)),
)


def _claim(status: str, oracle: str) -> str:
    return (
        "claim_ledger:\n  claims:\n    - id: C1\n      text: os.chdir exists\n"
        f'      status: {status}\n      falsifier: "the docs say otherwise"\n'
        f'      oracle: "{oracle}"\n  premises_for_plan: []\n'
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(actions, min_size=2, max_size=10))
def test_no_agent_sequence_raises_a_web_only_claim_above_its_ceiling(
    moves: list[tuple[object, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gk = Gatekeeper.open(root / ".infomark", "prop", root=root, config=OBSERVE)
        oracle = f"curl -s {DOCS}"
        gk.ingest(_claim("Guess", oracle))
        refs: list[str] = []
        primary_seen = False
        for move in moves:
            kind = move[0]
            if kind in ("fetch", "redirect", "curl", "copy"):
                url, is_primary = move[1]  # type: ignore[misc]
                if kind == "fetch":
                    refs.append(fetch(gk, url, tool=str(move[2])).ref)
                    primary_seen |= is_primary
                elif kind == "redirect":
                    out = f"Redirect to https://evil.com/x\n{PAGE}"
                    refs.append(fetch(gk, url, out).ref)  # a redirect off-site: never primary
                elif kind == "curl":
                    refs.append(call(gk, "Bash", {"command": f"curl -s '{url}'"}, PAGE, 0).ref)
                    primary_seen |= is_primary
                else:
                    got = call(gk, "Bash", {"command": f"curl -o copy.html '{url}'"}, "", 0)
                    refs.append(got.ref)
                    primary_seen |= is_primary
                    refs.append(call(gk, "Read", {"file_path": "copy.html"}, PAGE).ref)
            elif kind == "oracle_run":  # the claim's own oracle: a curl of the docs page
                refs.append(call(gk, "Bash", {"command": oracle}, PAGE, exit_code=0).ref)
                primary_seen = True
            elif kind == "search":
                refs.append(call(gk, "WebSearch", {"query": "os chdir"}, PAGE).ref)
            elif kind == "stamp":
                pick = int(move[2])  # type: ignore[call-overload]
                ref = refs[pick % len(refs)] if refs else "ev_" + "a" * 24
                stamp_kind, authority = str(move[1]), move[3]
                tail = f" authority={authority}" if authority is not None else ""
                if stamp_kind != "source_stamp":
                    tail = " result=PASS"
                gk.ingest(f"{stamp_kind}: claim_id=C1 evidence_ref={ref}{tail}\n")
            else:
                gk.ingest(_claim(str(move[1]), oracle))
            rank = InfoMark.parse(gk.ledger().status("C1"))
            ceiling = InfoMark.INFERRED if primary_seen else InfoMark.HYPOTHETICAL
            assert rank <= ceiling, (move, rank, primary_seen)
        gk.close()
