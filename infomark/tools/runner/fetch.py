"""The runner's ``fetch`` tool, and the re-fetch that re-checks a premise's page.

``fetch(url)`` GETs one ``http``/``https`` URL with the standard library and returns the
body as text (decoded by its charset, capped); a redirect is reported on the first line
(``redirected to URL``), so the authority rules judge the page where it really came from.
Its class is ``web``: its result backs only a ``source_stamp``.

:func:`page_refetch` is the runner's ``Gatekeeper.refetch``: before a mutation the gatekeeper
re-checks each page a grounded premise rests on, and the runner answers by running the same
``fetch`` with the same input (not gated and not recorded: infomark's own check, not the
agent's call). Output is deterministic for an unchanged page, so the digests compare. A page
fetched by ``bash`` (``curl``, ``wget``) is never run again (a shell line may do more than
fetch, and its output mixes in curl's progress meter): the runner cannot confirm it, and the
gatekeeper counts it as changed. So does a fetch that fails now (HTTP error, unreachable,
time-out), whoever made it fail.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.runner.tools import RunnerTool, schema_of

__all__ = ["FETCH_MAX_BYTES", "fetch_page", "fetch_tool", "page_refetch"]

FETCH_MAX_BYTES = 2 << 20
"""Bytes read from one page at most (the text is then capped like every tool's output)."""


def fetch_page(url: object, *, timeout: float, cap: int) -> ToolOutcome:
    """One GET of ``url``; an error outcome (never a raise) when it cannot be fetched."""
    if not isinstance(url, str) or not url:
        return ToolOutcome(error="fetch needs input.url (an http or https URL)", is_error=True)
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:
        return ToolOutcome(error=f"fetch: {url!r} is not a URL ({exc})", is_error=True)
    if scheme not in ("http", "https"):
        return ToolOutcome(
            error=f"fetch: only http and https URLs, not {scheme or 'no scheme'}", is_error=True
        )
    request = urllib.request.Request(url, headers={"User-Agent": "infomark-runner/fetch"})  # noqa: S310
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data = bytes(response.read(FETCH_MAX_BYTES + 1))
            final = str(response.geturl())
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as exc:
        return ToolOutcome(
            error=f"fetch: HTTP {exc.code} {exc.reason} for {url}",
            is_error=True,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    except (OSError, ValueError) as exc:  # URLError, a time-out, a TLS failure
        return ToolOutcome(
            error=f"fetch: {url} could not be fetched ({exc})",
            is_error=True,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    try:
        text = data[:FETCH_MAX_BYTES].decode(charset, "replace")
    except LookupError:  # a charset Python does not know
        text = data[:FETCH_MAX_BYTES].decode("utf-8", "replace")
    if len(data) > FETCH_MAX_BYTES or len(text) > cap:
        text = text[:cap] + f"\n[output truncated at {cap} characters]"
    if final != url:
        text = f"redirected to {final}\n{text}"
    return ToolOutcome(output=text, duration_ms=(time.perf_counter() - started) * 1000)


def fetch_tool(*, timeout: float, output_cap: int) -> RunnerTool:
    """The ``fetch`` tool (class ``web``)."""

    def run(call: ToolCall) -> ToolOutcome:
        return fetch_page(call.input.get("url"), timeout=timeout, cap=output_cap)

    return RunnerTool(
        "fetch",
        f"Fetch one web page (http or https) and return its text (timeout {timeout:g}s). Its "
        "result backs a source_stamp only; before a mutation the runner fetches the page "
        "again, and a page that changed (or cannot be fetched) revokes that stamp. Fetch "
        "pages with this tool, not with bash: a page fetched by curl cannot be re-checked.",
        schema_of({"url": {"type": "string", "description": "the page's URL"}}, ("url",)),
        run,
        ToolClass.WEB.value,
    )


def page_refetch(
    tools: Mapping[str, RunnerTool],
) -> Callable[[str, Mapping[str, object]], str | bytes | None]:
    """The runner's ``Gatekeeper.refetch``: the same ``fetch``, run again; None otherwise."""

    def refetch(tool: str, arguments: Mapping[str, object]) -> str | bytes | None:
        fetch = tools.get("fetch")
        if tool != "fetch" or fetch is None:
            return None  # a shell fetch (curl) is not run again: it cannot be confirmed
        out = fetch.run(ToolCall("fetch", dict(arguments)))
        if out.is_error:
            return None
        return out.output if isinstance(out.output, str | bytes) else str(out.output)

    return refetch
