"""source_stamp semantics (issue 18): web evidence graded by the page's authority."""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from tests.ledger.web_helpers import (
    PAGE,
    call,
    fetch,
    ledger,
    search,
    source_stamp,
)

DOCS = "https://docs.python.org/3/library/os.html"
BLOG = "https://someblog.example.com/posts/python-os"


@pytest.fixture
def gk(tmp_path: Path) -> Gatekeeper:
    g = Gatekeeper.open(tmp_path / ".infomark", "web", root=tmp_path)
    g.ingest(ledger(("C1", "os is portable"), ("C2", "os has chdir")))
    return g


def _rank(gk: Gatekeeper, cid: str = "C1") -> str | None:
    return gk.ledger().status(cid)


def test_a_primary_page_raises_a_claim_to_inferred(gk: Gatekeeper) -> None:
    ev = fetch(gk, DOCS)
    report = gk.ingest(source_stamp("C1", ev.ref))
    assert report.stamps_applied == [
        {"claim_id": "C1", "evidence_ref": ev.ref, "status": "Inferred", "authority": "primary"}
    ]
    assert _rank(gk) == "Inferred"
    applied = [e for e in gk.events() if e.type == "stamp_applied"][-1].payload
    assert applied["kind"] == "source_stamp"
    assert applied["source"]["url"] == DOCS and applied["source"]["host"] == "docs.python.org"
    assert applied["source"]["content_hash"] == ev.output_digest.lower()
    assert applied["source"]["authority"] == "primary" and applied["source"]["demoted"] == []


def test_a_secondary_page_gives_at_most_hypothetical(gk: Gatekeeper) -> None:
    ev = fetch(gk, BLOG)
    report = gk.ingest(source_stamp("C1", ev.ref, "secondary"))
    assert report.stamps_applied[0]["status"] == "Hypothetical"
    assert _rank(gk) == "Hypothetical"


def test_an_agent_claiming_primary_for_a_blog_is_demoted_with_a_reason(gk: Gatekeeper) -> None:
    ev = fetch(gk, BLOG)
    report = gk.ingest(source_stamp("C1", ev.ref, "primary"))
    (applied,) = report.stamps_applied
    assert applied["status"] == "Hypothetical" and applied["authority"] == "secondary"
    assert applied["demoted"] == ["not_primary"]
    assert any("demoted to secondary (not_primary)" in d["message"] for d in report.diagnostics)
    payload = [e for e in gk.events() if e.type == "stamp_applied"][-1].payload
    assert payload["source"]["claimed"] == "primary" and payload["source"]["demoted"]


def test_an_agent_may_claim_less_than_infomark_decides(gk: Gatekeeper) -> None:
    ev = fetch(gk, DOCS)
    report = gk.ingest(source_stamp("C1", ev.ref, "secondary"))
    assert report.stamps_applied[0]["status"] == "Hypothetical"


def test_without_authority_infomark_decides(gk: Gatekeeper) -> None:
    assert gk.ingest(source_stamp("C1", fetch(gk, DOCS).ref, None)).stamps_applied
    assert _rank(gk) == "Inferred"


def test_a_search_result_grounds_nothing(gk: Gatekeeper) -> None:
    report = gk.ingest(source_stamp("C1", search(gk).ref))
    assert [r["reason"] for r in report.stamps_rejected] == ["ineligible_evidence"]
    assert "snippets ground nothing" in report.stamps_rejected[0]["message"]
    assert _rank(gk) == "Guess"


def test_a_source_stamp_on_a_read_is_ineligible(gk: Gatekeeper) -> None:
    ev = call(gk, "Read", {"file_path": "notes.md"}, PAGE)
    report = gk.ingest(source_stamp("C1", ev.ref))
    assert [r["reason"] for r in report.stamps_rejected] == ["ineligible_evidence"]
    assert "not a page infomark saw fetched" in report.stamps_rejected[0]["message"]


def test_a_failed_fetch_grounds_nothing(gk: Gatekeeper) -> None:
    ev = call(gk, "WebFetch", {"url": DOCS, "prompt": "p"}, "timeout", exit_code=1)
    report = gk.ingest(source_stamp("C1", ev.ref))
    assert [r["reason"] for r in report.stamps_rejected] == ["failed_evidence"]


def test_oracle_and_inference_stamps_on_a_page_are_ineligible(gk: Gatekeeper) -> None:
    ev = fetch(gk, DOCS)
    for kind in ("oracle_stamp", "inference_stamp"):
        report = gk.ingest(f"{kind}: claim_id=C1 evidence_ref={ev.ref} result=PASS\n")
        assert [r["reason"] for r in report.stamps_rejected] == ["ineligible_evidence"], kind
    assert _rank(gk) == "Guess"


def test_a_source_never_lowers_a_claim(gk: Gatekeeper) -> None:
    assert gk.ingest(source_stamp("C1", fetch(gk, DOCS).ref)).stamps_applied
    report = gk.ingest(source_stamp("C1", fetch(gk, BLOG).ref, "secondary"))
    assert report.stamps_applied == [] and report.stamps_rejected == []
    assert any("changes nothing" in d["message"] for d in report.diagnostics)
    assert _rank(gk) == "Inferred"
    # a secondary page first, then a primary one: the claim rises
    assert gk.ingest(source_stamp("C2", fetch(gk, BLOG).ref)).stamps_applied
    assert _rank(gk, "C2") == "Hypothetical"
    assert gk.ingest(source_stamp("C2", fetch(gk, DOCS).ref)).stamps_applied
    assert _rank(gk, "C2") == "Inferred"


def test_unknown_claim_missing_ref_and_forged_ref_are_rejected(gk: Gatekeeper) -> None:
    ev = fetch(gk, DOCS)
    texts = {
        "unknown_claim": source_stamp("C9", ev.ref),
        "missing_evidence": "source_stamp: claim_id=C1 authority=primary\n",
        "unknown_evidence": source_stamp("C1", "ev_" + "0" * 24),
    }
    for reason, text in texts.items():
        assert [r["reason"] for r in gk.ingest(text).stamps_rejected] == [reason]


def test_configured_primary_hosts_and_repositories(tmp_path: Path) -> None:
    cfg = Config(sources_primary=("someblog.example.com", "github.com/acme/widget"))
    gk = Gatekeeper.open(tmp_path / ".infomark", "cfg", root=tmp_path, config=cfg)
    gk.ingest(ledger(("C1", "a"), ("C2", "b"), ("C3", "c")))
    gk.ingest(source_stamp("C1", fetch(gk, BLOG).ref))
    gk.ingest(source_stamp("C2", fetch(gk, "https://github.com/acme/widget/blob/main/x").ref))
    gk.ingest(source_stamp("C3", fetch(gk, "https://github.com/evil/widget").ref))
    assert [gk.ledger().status(c) for c in ("C1", "C2", "C3")] == [
        "Inferred",
        "Inferred",
        "Hypothetical",
    ]
    only = Config(sources_primary=("someblog.example.com",), sources_defaults=False)
    gk2 = Gatekeeper.open(tmp_path / ".infomark", "only", root=tmp_path, config=only)
    gk2.ingest(ledger(("C1", "a")))
    gk2.ingest(source_stamp("C1", fetch(gk2, DOCS).ref))
    assert gk2.ledger().status("C1") == "Hypothetical"  # the defaults were dropped


def test_the_sources_table_in_the_config_file(tmp_path: Path) -> None:
    from infomark.gates.config import load_config
    from infomark.kernel.errors import ConfigError

    (tmp_path / "infomark.toml").write_text(
        '[sources]\nprimary = ["https://Docs.Example.com/", "github.com/acme/widget"]\n'
    )
    cfg = load_config(tmp_path, tmp_path / ".infomark")
    assert cfg.sources_primary == ("docs.example.com", "github.com/acme/widget")
    (tmp_path / "infomark.toml").write_text('[sources]\nprimary = ["not a host"]\n')
    with pytest.raises(ConfigError, match="is not a host rule"):
        load_config(tmp_path, None)


def test_replay_equals_live_with_source_stamps(gk: Gatekeeper) -> None:
    gk.ingest(source_stamp("C1", fetch(gk, DOCS).ref))
    gk.ingest(source_stamp("C2", fetch(gk, BLOG).ref, "primary"))
    assert gk.store.replay().to_dict() == gk.state.to_dict()
    assert gk.audit().verified is True
