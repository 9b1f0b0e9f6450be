"""A small real MCP stdio fetch server (like the reference ``mcp-fetch``) for the proxy tests.

Run as ``python mcp_fetch_server.py OUT_DIR``. ``fetch`` (read-only, open world, the name
infomark's tool table calls web) GETs a URL with the standard library and returns the body
as text; an HTTP error or an unreachable host is a tool error. ``save`` (no hints: modify)
writes one file in OUT_DIR: the mutation a premise must be grounded for. ``shell`` (no
hints) runs one command line with bash in OUT_DIR: a fetch through it (``curl …``) is web
evidence that must never be run again by a re-check. The server trusts ``SSL_CERT_FILE``
like any client, and resolves names as ``TEST_RESOLVE`` says (``tests/https_site.py``).
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

__all__ = ["build_server"]


def build_server(out: Path) -> MCPServer:
    srv = MCPServer("infomark-test-fetch")

    @srv.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    def fetch(url: str) -> str:
        """Fetch a URL and return its body as text."""
        with urllib.request.urlopen(url, timeout=10) as response:
            return bytes(response.read()).decode("utf-8", "replace")

    @srv.tool()
    def save(name: str, text: str) -> str:
        """Write one file in the output directory."""
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"bad file name {name!r}")
        (out / name).write_text(text, encoding="utf-8")
        return f"saved {name}"

    @srv.tool()
    def shell(command: str) -> str:
        """Run one command line with bash in the output directory."""
        done = subprocess.run(
            ["bash", "-c", command], cwd=out, capture_output=True, text=True, check=False
        )
        return done.stdout + done.stderr

    return srv


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from https_site import resolve_from_env

    resolve_from_env()
    build_server(Path(sys.argv[1])).run(transport="stdio")
