"""Web sources: which page a piece of evidence stands for, and how much authority it has.

A ``source_stamp`` binds a claim to web evidence (``WebFetch``, an MCP ``fetch``, a shell
``curl``/``wget`` of a URL). infomark, not the agent, decides the page's **authority class**
from domain rules (``[sources] primary = [...]`` plus :data:`DEFAULT_PRIMARY`): a host on a
primary rule is ``primary`` (the vendor's docs, the spec, the project's own repository),
anything else is ``secondary``. The class caps the rank a page can give a claim:
``primary`` → at most Inferred, ``secondary`` → at most Hypothetical, a search result page →
nothing (:data:`CEILINGS`).

The host is read the way a hostile agent would try to fool a naive reader: a URL whose host
cannot be read unambiguously (user info ``docs.python.org@evil.com``, a backslash, spaces,
percent-escapes or non-ASCII in the host, an IP address, plain ``http``, another URL in its
query, a redirect the tool reported to another host) is never ``primary``; each such reason
is a stable code in :data:`DEMOTIONS`. Matching is by whole DNS labels (``docs.python.org``
matches itself and ``*.docs.python.org``, never ``docs.python.org.evil.com``), and a rule
with a path (``github.com/org/repo``) matches that host exactly and that path prefix by
whole segments.

Standard library only (the hook's hot path may judge a stamp).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from infomark.kernel.infomark import InfoMark
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass
from infomark.kernel.tools import EvidenceClass, normalise_tool_name, split_mcp_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CEILINGS",
    "DEFAULT_PRIMARY",
    "DEMOTIONS",
    "FETCHERS",
    "SourceRules",
    "WebSource",
    "authority_of",
    "fetched_files",
    "is_fetch_command",
    "web_source",
]

#: The rank a page of each authority class can give a claim at most (None: nothing).
CEILINGS: Mapping[str, InfoMark | None] = {
    "primary": InfoMark.INFERRED,
    "secondary": InfoMark.HYPOTHETICAL,
    "search": None,
}

#: Hosts whose pages are primary by default: language and platform vendors' own docs and
#: the standards bodies. ``[sources] primary`` adds to them (``defaults = false`` drops them).
DEFAULT_PRIMARY: tuple[str, ...] = (
    "docs.python.org",
    "peps.python.org",
    "packaging.python.org",
    "typing.readthedocs.io",
    "www.rfc-editor.org",
    "datatracker.ietf.org",
    "www.w3.org",
    "html.spec.whatwg.org",
    "url.spec.whatwg.org",
    "fetch.spec.whatwg.org",
    "tc39.es",
    "developer.mozilla.org",
    "doc.rust-lang.org",
    "docs.rs",
    "go.dev",
    "pkg.go.dev",
    "nodejs.org",
    "docs.oracle.com",
    "learn.microsoft.com",
    "man7.org",
    "docs.github.com",
    "git-scm.com",
    "www.sqlite.org",
    "www.postgresql.org",
    "pubs.opengroup.org",
)

#: Why a page was judged below primary (the payload's ``demoted`` codes, docs/blocks.md).
DEMOTIONS: Mapping[str, str] = {
    "not_primary": "its host is on no primary rule",
    "no_url": "the evidence names no URL infomark can read",
    "unreadable_url": "the URL cannot be read unambiguously (scheme, spaces, backslash, escapes)",
    "userinfo": "the URL carries user info (`name@host`): the real host is after the @",
    "non_ascii_host": "the host has non-ASCII or escaped characters (a lookalike?)",
    "ip_host": "the host is an IP address, not a named authority",
    "not_https": "plain http: the page may have been altered in transit",
    "embedded_url": "the URL carries another URL in its query or fragment (an open redirect?)",
    "redirect": "the tool reported a redirect to another host",
    "claimed_secondary": "the agent itself stamped it secondary",
}

#: Shell commands that fetch a URL: their runs are web evidence, whatever tool ran them.
FETCHERS = frozenset(
    {"curl", "wget", "http", "https", "xh", "httpie", "aria2c", "lynx", "w3m", "links", "elinks"}
)
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "time", "nice", "nohup", "timeout"})
_SEARCH_WORDS = ("search",)  # websearch, google_web_search, search_web, wikipedia_search
# urllib.parse and ipaddress (~9 M instructions), re and shlex load only for the calls that
# look at a URL or a shell command: a stamp on a Read result needs none of them
_URL = lazy_compile(r"(?i)https?://[^\s\"'<>`|;&)]+")
_HOST_OK = lazy_compile(
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
)
_URL_KEYS = ("url", "uri", "href", "link", "page")
_REDIRECT = lazy_compile(r"(?i)redirect")


@dataclass(frozen=True, slots=True)
class SourceRules:
    """The domain rules: ``primary`` entries are ``host`` or ``host/path-prefix``."""

    primary: tuple[str, ...] = DEFAULT_PRIMARY

    @classmethod
    def from_config(cls, primary: Iterable[str] = (), *, defaults: bool = True) -> SourceRules:
        rules = [*(DEFAULT_PRIMARY if defaults else ()), *primary]
        return cls(tuple(dict.fromkeys(r.strip().lower().rstrip("/") for r in rules if r.strip())))

    def matches(self, host: str, path: str) -> bool:
        for rule in self.primary:
            r_host, _, r_path = rule.partition("/")
            if not r_path:  # a host rule: the host and its subdomains
                if host == r_host or host.endswith("." + r_host):
                    return True
                continue
            if host != r_host:  # a path rule: that host only
                continue
            want = [s for s in r_path.split("/") if s]
            have = [s for s in path.lower().split("/") if s]
            if have[: len(want)] == want:
                return True
        return False


@dataclass(frozen=True, slots=True)
class WebSource:
    """The page a piece of web evidence stands for."""

    url: str | None  # as recorded (None: the evidence names none)
    host: str | None  # lower case, as infomark reads it (None: unreadable)
    content_hash: str  # the digest of the recorded output (sha256:…)
    search: bool  # a search result page: snippets, not a source
    final_url: str | None = None  # where the tool says it was redirected, if it says so

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "host": self.host,
            "content_hash": self.content_hash,
            "search": self.search,
            "final_url": self.final_url,
        }


def _tool_key(tool: str) -> str:
    mcp = split_mcp_name(tool)
    return normalise_tool_name(mcp[1] if mcp is not None else tool)


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a shell line, as words (a best effort; never raises)."""
    import re
    import shlex

    out: list[list[str]] = []
    for part in re.split(r"\|\||&&|[;|&\n(){}`]|\$\(", command):
        try:
            words = shlex.split(part, comments=False, posix=True)
        except ValueError:
            words = part.split()
        words = _unwrap(words)
        if words:
            out.append(words)
    return out


def _unwrap(words: list[str]) -> list[str]:
    """Drop ``VAR=value`` prefixes and wrappers (``sudo``, ``env``, ``timeout 5`` …)."""
    while words:
        head = words[0]
        if "=" in head and not head.startswith("="):
            words = words[1:]
        elif head.rsplit("/", 1)[-1] in _WRAPPERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
            if head.rsplit("/", 1)[-1] == "timeout" and words:
                words = words[1:]  # the duration
        else:
            break
    return words


def is_fetch_command(command: str) -> bool:
    """Does this shell line run a URL fetcher (curl, wget, httpie …) on a non-loopback URL?"""
    if not command or not _URL.search(command):
        return False
    fetches = any(w[0].rsplit("/", 1)[-1].lower() in FETCHERS for w in _segments(command))
    if not fetches:
        return False
    return any(not _loopback(m.group(0)) for m in _URL.finditer(command))


def _loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def fetched_files(command: str) -> list[str]:
    """Files a fetcher command writes (``curl -o F``, ``wget -O F``, wget's default name)."""
    out: list[str] = []
    for words in _segments(command):
        name = words[0].rsplit("/", 1)[-1].lower()
        if name not in FETCHERS:
            continue
        urls = [w for w in words[1:] if _URL.fullmatch(w)]
        explicit = False
        for i, w in enumerate(words[1:], start=1):
            nxt = words[i + 1] if i + 1 < len(words) else None
            if name == "curl" and w in ("-O", "--remote-name"):
                out.extend(_basename(u) for u in urls)
                explicit = True
            elif w in ("-o", "--output", "-O", "--output-document") and nxt and nxt != "-":
                out.append(nxt)
                explicit = True
            elif w.startswith("--output=") or w.startswith("--output-document="):
                out.append(w.split("=", 1)[1])
                explicit = True
        if name == "wget" and not explicit:
            out.extend(_basename(u) for u in urls)
    return [f for f in out if f]


def _basename(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    base = path.rsplit("/", 1)[-1]
    return base or "index.html"


def _output_url(output: str | None) -> str | None:
    """A redirect target the tool reported in its output (WebFetch and fetch servers do)."""
    head = (output or "")[:1000]
    if not _REDIRECT.search(head):
        return None
    found = _URL.findall(head)
    return found[-1] if found else None


def web_source(record: Mapping[str, Any], output: str | None = None) -> WebSource | None:
    """The page this evidence record stands for; None when it is not web evidence.

    Web evidence is what the tool table calls web (``WebFetch``, ``fetch``, ``WebSearch`` …)
    and any run of a URL fetcher in a shell (``curl https://…``). ``output`` (the recorded
    output, when available) is read only for a redirect the tool reported.
    """
    tool = str(record.get("tool", ""))
    key = _tool_key(tool)
    inp = record.get("input") if isinstance(record.get("input"), Mapping) else {}
    assert isinstance(inp, Mapping)
    eclass = str(record.get("evidence_class", ""))
    shell_cmd = next(
        (v for k in ("command", "cmd", "script") if isinstance(v := inp.get(k), str)), None
    )
    if eclass == EvidenceClass.WEB.value:
        url = next((v for k in _URL_KEYS if isinstance(v := inp.get(k), str)), None)
        if url is None and shell_cmd:
            m = _URL.search(shell_cmd)
            url = m.group(0) if m else None
    elif shell_cmd is not None and is_fetch_command(shell_cmd):
        url = next(m.group(0) for m in _URL.finditer(shell_cmd) if not _loopback(m.group(0)))
    else:
        return None
    search = any(w in key for w in _SEARCH_WORDS) and not isinstance(inp.get("url"), str)
    final = _output_url(output)
    return WebSource(
        url=url,
        host=_host(url)[0] if url else None,
        content_hash=str(record.get("output_digest", "")),
        search=search,
        final_url=final,
    )


def _host(url: str) -> tuple[str | None, str | None, str]:
    """``(host, problem, path)``: the host as infomark reads it, or the demotion code."""
    import ipaddress
    from urllib.parse import unquote, urlsplit

    if any(c.isspace() or c == "\\" or ord(c) < 0x20 for c in url):
        return None, "unreadable_url", ""
    try:
        parts = urlsplit(url)
        raw_host = parts.hostname
    except ValueError:
        return None, "unreadable_url", ""
    if parts.scheme.lower() not in ("http", "https") or not raw_host:
        return None, "unreadable_url", ""
    netloc = parts.netloc
    if "@" in netloc:
        return raw_host.lower(), "userinfo", parts.path
    host = raw_host.lower().rstrip(".")
    if "%" in netloc or not host.isascii() or host.startswith("xn--") or ".xn--" in host:
        return host, "non_ascii_host", parts.path
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host, "ip_host", parts.path
    except ValueError:
        pass
    if not _HOST_OK.fullmatch(host):
        return host, "unreadable_url", parts.path
    return host, None, unquote(parts.path)


def authority_of(source: WebSource, rules: SourceRules) -> tuple[str, list[str]]:
    """``(authority, demotion codes)``: ``primary``, ``secondary`` or ``search``.

    Every doubt demotes, and the codes say which: a page is primary only when its URL (and
    any redirect target the tool reported) is plain ``https`` on a host of a primary rule.
    """
    from urllib.parse import unquote, urlsplit

    if source.search:
        return "search", []
    if not source.url:
        return "secondary", ["no_url"]
    codes: list[str] = []
    for url in (source.url, source.final_url):
        if url is None:
            continue
        host, problem, path = _host(url)
        if problem is not None:
            codes.append(problem)
            continue
        assert host is not None
        if urlsplit(url).scheme.lower() != "https":
            codes.append("not_https")
        query = urlsplit(url).query + "#" + urlsplit(url).fragment
        if _URL.search(unquote(query)) or "%2f%2f" in query.lower() or "//" in unquote(query):
            codes.append("embedded_url")
        if not rules.matches(host, path):
            codes.append("redirect" if url is source.final_url else "not_primary")
    return ("secondary" if codes else "primary"), list(dict.fromkeys(codes))
