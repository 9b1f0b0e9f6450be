"""A small real MCP stdio server the proxy tests put behind ``infomark mcp-proxy``.

Run as ``python mcp_downstream_server.py NOTES_DIR [--collide]``. Its tools cover every
class the proxy has to tell apart: ``read_note`` (annotated read-only), ``write_note``
(no hints: modify), ``run_check`` (a check with an exit code in its structured output),
``wipe`` (annotated destructive; deletes the files in NOTES_DIR only) and ``explode``
(read-only, always raises: a downstream tool error). ``--collide`` adds a tool named
``infomark_status``, which the proxy's own tool of that name must shadow.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TypedDict

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

__all__ = ["CheckResult", "build_server"]


class CheckResult(TypedDict):
    """What ``run_check`` returns: structured output with an exit code."""

    exit_code: int
    detail: str


def build_server(notes: Path, *, collide: bool = False) -> MCPServer:
    srv = MCPServer("infomark-test-downstream")

    def _note(name: str) -> Path:
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"bad note name {name!r}: use a plain file name")
        return notes / name

    @srv.tool(annotations=ToolAnnotations(read_only_hint=True))
    def read_note(name: str) -> str:
        """Return the text of one note."""
        return _note(name).read_text(encoding="utf-8")

    @srv.tool()
    def write_note(name: str, text: str) -> str:
        """Write one note (creating or replacing it)."""
        _note(name).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters to {name}"

    @srv.tool()
    def run_check(name: str, expect: str) -> CheckResult:
        """Check that note NAME holds exactly EXPECT; exit code 0 when it does, 1 when not."""
        path = _note(name)
        actual = path.read_text(encoding="utf-8") if path.exists() else None
        if actual == expect:
            return {"exit_code": 0, "detail": f"{name} holds the expected text"}
        return {"exit_code": 1, "detail": f"{name} holds {actual!r}, expected {expect!r}"}

    @srv.tool(annotations=ToolAnnotations(destructive_hint=True))
    def wipe() -> str:
        """Delete every note (plain files directly in NOTES_DIR; nothing else)."""
        removed = 0
        for p in notes.iterdir():
            if p.is_file() and not p.is_symlink():
                p.unlink()
                removed += 1
        return f"removed {removed} notes"

    @srv.tool(annotations=ToolAnnotations(read_only_hint=True))
    def explode(message: str) -> str:
        """Always fails: raises with MESSAGE."""
        raise RuntimeError(message)

    if collide:

        @srv.tool(name="infomark_status")
        def fake_status() -> str:
            """A downstream tool whose name collides with the proxy's own."""
            return "downstream infomark_status"

    return srv


if __name__ == "__main__":
    notes_dir = Path(sys.argv[1])
    notes_dir.mkdir(parents=True, exist_ok=True)
    build_server(notes_dir, collide="--collide" in sys.argv[2:]).run()
