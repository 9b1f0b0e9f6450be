"""The runner re-fetches the page a premise rests on before a mutation (issue 18).

A real HTTPS site on 127.0.0.1 standing in for ``docs.python.org`` (``tests/https_site.py``:
real TLS, the name resolved to the site in this process), the scripted model server, and the
runner's own ``fetch`` tool: the model fetches the page, source-stamps its premise, and asks
for a ``write``. Before the write the runner fetches the page again: unchanged, the write
runs; changed, or no longer fetchable, the claim is stale and the write is denied with the
reason. A page fetched by ``bash`` is never run again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from https_site import Site, https_site, resolving

from infomark.tools.runner import AgentSpec, ModelSpec, Runner, ScriptedModelServer
from infomark.tools.runner.fetch import page_refetch
from infomark.tools.runner.scripted import Request, call, evidence_refs, reply, tool_results
from tests.runner.conftest import events

PATH = "/3/library/os.html"
PAGE = b"os.replace(src, dst): if dst exists, it is replaced atomically (POSIX)."
LEDGER = """Checking the docs first.

claim_ledger:
  claims:
    - id: C1
      text: "os.replace is atomic on POSIX"
      status: Guess
      falsifier: "the docs say os.replace may leave both files"
  premises_for_plan: [C1]
"""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with https_site(tmp_path / "tls") as s, resolving(s):
        s.pages[PATH] = PAGE
        yield s


def _run(
    server: ScriptedModelServer,
    project: Path,
    home: Path,
    site: Site,
    change: Callable[[], Any],
    profile: str | None = None,
) -> list[str]:
    def stamp(req: Request) -> dict[str, Any]:
        (ref,) = evidence_refs(req)
        return reply(f"source_stamp: claim_id=C1 evidence_ref={ref}", call("read", file_path="a"))

    def write(req: Request) -> dict[str, Any]:
        change()  # between the stamp and the mutation
        return reply("Writing it down.", call("write", file_path="notes.txt", content="atomic"))

    def done(req: Request) -> dict[str, Any]:
        results.extend(tool_results(req))
        return reply("Done.")

    results: list[str] = []
    server.add(
        "web",
        reply(LEDGER, call("fetch", url=site.url(PATH))),
        stamp,
        write,
        done,
    )
    server.state.default = reply("I stop here.")
    spec = AgentSpec(name="t", model=ModelSpec(url=server.url, name="s", retries=0), max_steps=6)
    (project / "a").write_text("a\n")
    with Runner(spec, home=home, session="web", root=project, profile=profile) as runner:
        runner.start("Note whether os.replace is atomic.")
    return results


def _decisions(home: Path) -> list[dict[str, Any]]:
    return [p for _, t, p in events(home, "web") if t == "decision" and p["tool"] == "write"]


def _divergences(home: Path) -> list[dict[str, Any]]:
    return [p for _, t, p in events(home, "web") if t == "divergence"]


def _applied(home: Path) -> list[dict[str, Any]]:
    return [p for _, t, p in events(home, "web") if t == "stamp_applied"]


def test_an_unchanged_page_lets_the_write_run(
    server: ScriptedModelServer, project: Path, home: Path, site: Site
) -> None:
    _run(server, project, home, site, lambda: None)
    (stamped,) = _applied(home)
    assert stamped["status"] == "Inferred" and stamped["source"]["authority"] == "primary"
    (decision,) = _decisions(home)
    assert decision["decision"] == "allow"
    assert (project / "notes.txt").read_text() == "atomic"
    assert site.hits == [PATH, PATH]  # the fetch, then the runner's re-check
    assert _divergences(home) == []


def test_a_changed_page_makes_the_claim_stale_and_denies_the_write(
    server: ScriptedModelServer, project: Path, home: Path, site: Site
) -> None:
    def rewrite() -> None:
        site.pages[PATH] = b"os.replace may fail on Windows; see below."

    results = _run(server, project, home, site, rewrite)
    (decision,) = _decisions(home)
    assert decision["decision"] == "deny" and not (project / "notes.txt").exists()
    assert "stale web source" in decision["reason"] and "changed since" in decision["reason"]
    assert any("changed since" in r for r in results)  # the model is told why
    (div,) = _divergences(home)
    assert div["cause"] == "source_changed" and div["url"] == site.url(PATH)


def test_a_page_that_cannot_be_fetched_again_fails_closed(
    server: ScriptedModelServer, project: Path, home: Path, site: Site
) -> None:
    _run(server, project, home, site, site.pages.clear)  # the page is gone: a 404 now
    (decision,) = _decisions(home)
    assert decision["decision"] == "deny" and not (project / "notes.txt").exists()
    assert "could not be fetched again" in decision["reason"]
    (div,) = _divergences(home)
    assert div["cause"] == "source_unreachable"


def test_the_observe_profile_journals_the_denial_it_would_be(
    server: ScriptedModelServer, project: Path, home: Path, site: Site
) -> None:
    """observe denies nothing: the write runs, the stamp is revoked all the same."""
    _run(server, project, home, site, site.pages.clear, profile="observe")
    (decision,) = _decisions(home)
    assert decision["decision"] == "allow" and "would deny" in decision["reason"]
    assert (project / "notes.txt").read_text() == "atomic"
    (div,) = _divergences(home)
    assert div["cause"] == "source_unreachable"


def test_a_shell_fetch_is_never_run_again(project: Path, home: Path, site: Site) -> None:
    """The re-check runs only the runner's own ``fetch``; a ``bash`` line is not replayed."""
    marker = project / "ran"
    spec = AgentSpec(name="t", model=ModelSpec(url="http://127.0.0.1:9/v1", name="s"))
    with Runner(spec, home=home, session="sh", root=project) as runner:
        assert runner.gk.refetch is not None
        command = f"touch {marker}; curl -s {site.url(PATH)}"
        assert runner.gk.refetch("bash", {"command": command}) is None
        assert runner.gk.refetch("fetch", {"url": site.url(PATH)}) == PAGE.decode()
    assert not marker.exists() and site.hits == [PATH]
    assert page_refetch({})("fetch", {"url": site.url(PATH)}) is None  # no fetch tool listed
