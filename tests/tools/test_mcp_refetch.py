"""The MCP proxy re-fetches the page a premise rests on before a mutation (issue 18).

A real HTTPS site on 127.0.0.1 standing in for ``docs.python.org`` (a primary authority;
``tests/https_site.py``), a real MCP stdio fetch server of ours behind the real ``infomark
mcp-proxy`` process, and a real MCP client: the agent fetches the page, source-stamps its
premise, and asks for a mutation (``save``). The proxy re-calls the downstream ``fetch``
with the same arguments first: an unchanged page lets the mutation run; a changed page, or
one that can no longer be fetched, makes the claim stale and the mutation is denied with
the reason. A shell tool that fetched a page is never run again by the re-check.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from https_site import Site, https_site
from mcp import ClientSession, StdioServerParameters, stdio_client

from infomark.gatekeeper import Gatekeeper
from infomark.tools.mcp_proxy import GatekeeperProxy

FETCH_SERVER = Path(__file__).with_name("mcp_fetch_server.py")
SESSION = "web"
PAGE = b"os.replace(src, dst): if dst exists, it is replaced atomically (POSIX)."
LEDGER = {
    "claims": [
        {
            "id": "C1",
            "text": "os.replace is atomic on POSIX",
            "status": "Guess",
            "falsifier": "the docs say os.replace may leave both files",
        }
    ],
    "premises_for_plan": ["C1"],
}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with https_site(tmp_path / "tls") as s:
        s.pages["/3/library/os.html"] = PAGE
        yield s


@pytest.fixture
def out(project: Path) -> Path:
    d = project.parent / "out"
    d.mkdir()
    return d


def _params(project: Path, home: Path, out: Path, site: Site) -> StdioServerParameters:
    args = ["-m", "infomark.tools.mcp_proxy", "--home", str(home), "--session", SESSION, "--"]
    env = {"PATH": os.environ["PATH"], "HOME": str(project), **site.env()}
    return StdioServerParameters(
        command=sys.executable,
        args=[*args, sys.executable, str(FETCH_SERVER), str(out)],
        cwd=project,
        env=env,
    )


def _texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def _ref(result: types.CallToolResult) -> str:
    tag = _texts(result)[-1]
    assert tag.startswith("[infomark evidence_ref=") and "eligible=source_stamp]" in tag, tag
    return tag.split("evidence_ref=", 1)[1].split()[0]


def _session(
    project: Path, home: Path, out: Path, site: Site, change: Any
) -> list[types.CallToolResult]:
    """Declare, fetch, source-stamp, let ``change(site)`` act, then try the mutation."""
    got: list[types.CallToolResult] = []

    async def go() -> None:
        with (project.parent / "proxy.err").open("a") as err:
            async with (
                stdio_client(_params(project, home, out, site), errlog=err) as (r, w),
                ClientSession(r, w) as s,
            ):
                with anyio.fail_after(120):
                    await s.initialize()
                    assert not (await s.call_tool("infomark_ledger", LEDGER)).is_error
                    page = await s.call_tool("fetch", {"url": site.url("/3/library/os.html")})
                    assert not page.is_error, _texts(page)
                    stamp = {"claim_id": "C1", "evidence_ref": _ref(page), "kind": "source"}
                    stamped = await s.call_tool("infomark_stamp", stamp)
                    assert not stamped.is_error, _texts(stamped)
                    assert stamped.structured_content is not None
                    (applied,) = stamped.structured_content["stamps_applied"]
                    assert (applied["status"], applied["authority"]) == ("Inferred", "primary")
                    change(site)
                    got.append(await s.call_tool("save", {"name": "notes.txt", "text": "atomic"}))
                    got.append(await s.call_tool("infomark_status", {}))

    anyio.run(go)
    return got


def _divergences(project: Path, home: Path) -> list[dict[str, Any]]:
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        return [dict(e.payload) for e in gk.events() if e.type == "divergence"]


def test_an_unchanged_page_lets_the_mutation_run(
    project: Path, home: Path, out: Path, site: Site
) -> None:
    saved, status = _session(project, home, out, site, lambda s: None)
    assert not saved.is_error, _texts(saved)
    assert (out / "notes.txt").read_text() == "atomic"
    assert site.hits == ["/3/library/os.html"] * 2  # the fetch, then the proxy's re-check
    assert status.structured_content is not None
    claims = {c["id"]: c for c in status.structured_content["ledger"]["claims"]}
    assert claims["C1"]["status"] == "Inferred"
    assert _divergences(project, home) == []


def test_a_changed_page_makes_the_claim_stale_and_denies_the_mutation(
    project: Path, home: Path, out: Path, site: Site
) -> None:
    def rewrite(s: Site) -> None:
        s.pages["/3/library/os.html"] = b"os.replace may fail on Windows; see below."

    saved, status = _session(project, home, out, site, rewrite)
    assert saved.is_error and not (out / "notes.txt").exists()
    reason = "\n".join(_texts(saved))
    assert "stale web source" in reason and "changed since" in reason, reason
    assert status.structured_content is not None
    claims = {c["id"]: c for c in status.structured_content["ledger"]["claims"]}
    assert claims["C1"]["status"] == "Guess"  # the stamp is revoked
    (div,) = _divergences(project, home)
    assert div["cause"] == "source_changed" and div["url"] == site.url("/3/library/os.html")
    assert div["was"] != div["digest"] is not None


def test_a_page_that_cannot_be_fetched_again_fails_closed(
    project: Path, home: Path, out: Path, site: Site
) -> None:
    """The agent makes the re-check fail (the page is gone): that cannot confirm the page."""
    saved, _ = _session(project, home, out, site, lambda s: s.pages.clear())
    assert saved.is_error and not (out / "notes.txt").exists()
    assert "could not be fetched again" in "\n".join(_texts(saved))
    (div,) = _divergences(project, home)
    assert div["cause"] == "source_unreachable" and div["digest"] is None


def test_the_re_check_never_runs_a_shell_tool_again(
    project: Path, home: Path, out: Path, site: Site
) -> None:
    """Evidence from a shell (``curl …`` through an MCP shell tool) is never re-run."""
    marker = out / "ran"

    async def go() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=[str(FETCH_SERVER), str(out)], env=site.env()
        )
        with Gatekeeper.open(home, SESSION, root=project) as gk:
            async with stdio_client(params) as (r, w), ClientSession(r, w) as down:
                with anyio.fail_after(60):
                    await down.initialize()
                    proxy = GatekeeperProxy(gk, down)
                    await proxy.refresh()
                    proxy.can_refetch(gk)
                    assert gk.refetch is not None
                    shell = {"command": f"echo once >> {marker}; curl -s {site.url('/x')}"}
                    again = await anyio.to_thread.run_sync(proxy.refetch, "shell", shell)
                    assert again is None  # cannot be confirmed: counts as changed
                    assert not marker.exists()
                    fetch = {"url": site.url("/3/library/os.html")}
                    page = await anyio.to_thread.run_sync(proxy.refetch, "fetch", fetch)
                    assert page == PAGE.decode()
                    gone = await anyio.to_thread.run_sync(proxy.refetch, "nope", fetch)
                    assert gone is None  # a tool the downstream does not list

    anyio.run(go)
    assert json.dumps(site.hits) == json.dumps(["/3/library/os.html"])
