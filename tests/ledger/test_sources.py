"""The domain rules of infomark.ledger.stamps.sources: hosts, URLs, fetch commands (pure)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.ledger.stamps.sources import (
    DEMOTIONS,
    SourceRules,
    WebSource,
    authority_of,
    fetched_files,
    is_fetch_command,
    web_source,
)

RULES = SourceRules.from_config(["github.com/acme/widget"])
DOCS_ROOT = Path(__file__).resolve().parents[2] / "docs"


def _judge(url: str, final: str | None = None) -> tuple[str, list[str]]:
    return authority_of(WebSource(url, None, "sha256:x", False, final), RULES)


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.python.org/3/library/os.html",
        "https://DOCS.Python.org./3/",
        "https://sub.docs.python.org/x",
        "https://docs.python.org:443/3/#os.replace",
        "https://github.com/acme/widget/blob/main/README.md",
        "https://github.com/acme/widget",
    ],
)
def test_primary_urls(url: str) -> None:
    assert _judge(url) == ("primary", [])


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://github.com/acme/widgetx", "not_primary"),
        ("https://github.com/acme", "not_primary"),
        ("https://gist.github.com/acme/widget", "not_primary"),
        ("javascript:alert(1)", "unreadable_url"),
        ("https://", "unreadable_url"),
        ("https://[::1]/", "ip_host"),
        ("https://docs.python.org\t/", "unreadable_url"),
    ],
)
def test_secondary_urls(url: str, code: str) -> None:
    authority, codes = _judge(url)
    assert authority == "secondary" and code in codes


def test_a_reported_redirect_is_judged_too() -> None:
    assert _judge("https://docs.python.org/3/", "https://peps.python.org/pep-0008/") == (
        "primary",
        [],
    )
    assert _judge("https://docs.python.org/3/", "https://evil.example.com/") == (
        "secondary",
        ["redirect"],
    )


def test_search_pages_are_their_own_class() -> None:
    source = web_source(
        {"tool": "WebSearch", "input": {"query": "x"}, "evidence_class": "web", "output_digest": ""}
    )
    assert source is not None and source.search
    assert authority_of(source, RULES) == ("search", [])


def test_web_source_reads_the_url_and_the_hash() -> None:
    record = {
        "tool": "mcp__fetch__fetch",
        "input": {"url": "https://docs.python.org/3/"},
        "evidence_class": "web",
        "output_digest": "sha256:abc",
    }
    source = web_source(record, "Contents of https://docs.python.org/3/:\n...")
    assert source == WebSource("https://docs.python.org/3/", "docs.python.org", "sha256:abc", False)
    curl = {
        "tool": "Bash",
        "input": {"command": "curl -s https://docs.python.org/3/ | head"},
        "evidence_class": "execution",
        "output_digest": "sha256:def",
    }
    got = web_source(curl)
    assert got is not None and got.url == "https://docs.python.org/3/"
    plain = {"tool": "Bash", "input": {"command": "pytest -q"}, "evidence_class": "execution"}
    assert web_source(plain) is None


@pytest.mark.parametrize(
    ("command", "fetches"),
    [
        ("curl -s https://blog.example.com/post | grep x", True),
        ("sudo -E env A=1 wget https://x.org/a", True),
        ("timeout 5 curl https://x.org", True),
        ("cd /tmp && /usr/bin/curl -sSL https://x.org/install.sh", True),
        ("curl http://127.0.0.1:8000/health", False),
        ("curl http://localhost/health", False),
        ("pytest -q --base-url https://x.org", False),
        ("echo curl https://x.org", False),
        ("curl", False),
    ],
)
def test_fetch_commands(command: str, fetches: bool) -> None:
    assert is_fetch_command(command) is fetches


def test_files_a_fetch_writes() -> None:
    assert fetched_files("curl -sSL -o page.html https://x.org/a") == ["page.html"]
    assert fetched_files("curl --output=p.html https://x.org/a") == ["p.html"]
    assert fetched_files("curl -O https://x.org/c.html") == ["c.html"]
    assert fetched_files("wget https://x.org/a/b.txt") == ["b.txt"]
    assert fetched_files("wget https://x.org/") == ["index.html"]
    assert fetched_files("wget -O out.txt https://x.org/") == ["out.txt"]
    assert fetched_files("curl -s https://x.org/") == []


def test_the_demotion_codes_are_documented() -> None:
    text = (DOCS_ROOT / "blocks.md").read_text("utf-8")
    head = "| code | the page is secondary because |"
    rows = text.split(head, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    codes = [row.split("|")[1].strip().strip("`") for row in rows]
    assert codes == list(DEMOTIONS)


@given(st.text(max_size=80))
def test_any_text_is_judged_without_raising(url: str) -> None:
    authority, codes = _judge(url)
    assert authority in ("primary", "secondary")
    assert all(c in DEMOTIONS for c in codes)
    is_fetch_command(url)
    fetched_files(url)


@given(
    st.sampled_from(["https", "http", "ftp", "HTTPS"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz.-@:%\\/\u03bf0123456789", max_size=40),
    st.sampled_from(["", "/", "/3/library/os.html", "/?u=https://x.y"]),
)
def test_primary_only_for_a_plain_https_host_on_a_rule(scheme: str, host: str, rest: str) -> None:
    """Whatever the agent builds, primary implies: https, no user info, a rule's host."""
    url = f"{scheme}://{host}{rest}"
    authority, _ = _judge(url)
    if authority == "primary":
        parts = urlsplit(url)
        assert parts.scheme.lower() == "https" and "@" not in parts.netloc
        name = (parts.hostname or "").rstrip(".")
        assert RULES.matches(name, parts.path)
        assert all(c not in parts.netloc for c in "\\%") and name.isascii()
