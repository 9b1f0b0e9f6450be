"""A small real MCP stdio server the proxy tests put behind ``infomark mcp-proxy``.

Run as ``python mcp_downstream_server.py NOTES_DIR [--collide] [--secret PATH]``. Its tools
cover every class the proxy has to tell apart: ``read_note`` (annotated read-only),
``write_note`` (no hints: modify), ``run_check`` (a check with an exit code in its structured
output), ``wipe`` (annotated destructive; deletes the files in NOTES_DIR only) and
``explode`` (read-only, always raises: a downstream tool error); ``get_env`` (read-only:
one variable of its own environment), ``shout`` (read-only: sends a log message) and
``grow`` (read-only: adds the tool ``grown`` and sends ``tools/list_changed``) and
``log_level`` (the level the client last set with ``logging/setLevel``).

Beyond tools it serves the rest of MCP the proxy must forward: the resource
``notes://status`` (status.txt), the template ``notes://note/{name}``, the prompt
``review`` and completions of ``name`` for both. ``--collide`` adds a tool named
``infomark_status``, which the proxy's own tool of that name must shadow; ``--secret PATH``
adds the resource ``file://PATH`` that returns that file (the proxy must refuse to read
its own home through it); ``--shell`` adds ``run_command`` (no hints: runs one command line
with bash in NOTES_DIR, the agent's shell behind MCP).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TypedDict

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Completion, CompletionArgument, CompletionContext, ToolAnnotations

__all__ = ["CheckResult", "build_server"]


class CheckResult(TypedDict):
    """What ``run_check`` returns: structured output with an exit code."""

    exit_code: int
    detail: str


READ_ONLY = ToolAnnotations(read_only_hint=True)


def build_server(
    notes: Path, *, collide: bool = False, secret: Path | None = None, shell: bool = False
) -> MCPServer:
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

    @srv.tool(annotations=READ_ONLY)
    def get_env(name: str) -> str:
        """The value of one variable of this server's environment ("" when unset)."""
        return os.environ.get(name, "")

    @srv.tool(annotations=READ_ONLY)
    async def shout(text: str, ctx: Context) -> str:
        """Send TEXT as a log message (level warning, logger notes) and return it."""
        await ctx.session.send_log_message(level="warning", data=text, logger="notes")
        return text

    @srv.tool(annotations=READ_ONLY)
    async def grow(ctx: Context) -> str:
        """Add the tool ``grown`` and tell the client that the tool list changed."""

        def grown() -> str:
            """A tool that appeared at run time."""
            return "grown"

        srv.add_tool(grown, annotations=READ_ONLY)
        await ctx.session.send_tool_list_changed()
        return "added grown"

    @srv.resource("notes://status", name="status", mime_type="text/plain")
    def status_resource() -> str:
        """The text of status.txt."""
        return _note("status.txt").read_text(encoding="utf-8")

    @srv.resource("notes://note/{name}", name="note", mime_type="text/plain")
    def note_resource(name: str) -> str:
        """The text of one note."""
        return _note(name).read_text(encoding="utf-8")

    @srv.prompt()
    def review(name: str) -> str:
        """Ask for a review of one note."""
        return f"Review the note {name} and say whether it is ready."

    @srv.completion()
    async def complete(
        ref: object, argument: CompletionArgument, context: CompletionContext | None
    ) -> Completion | None:
        if argument.name != "name":
            return None
        names = sorted(p.name for p in notes.iterdir() if p.name.startswith(argument.value))
        return Completion(values=names, total=len(names), has_more=False)

    level: dict[str, str] = {"level": "unset"}

    async def set_level(ctx: object, params: types.SetLevelRequestParams) -> types.EmptyResult:
        level["level"] = params.level
        return types.EmptyResult()

    # MCPServer has no decorator for logging/setLevel: register it on its low-level server.
    srv._lowlevel_server.add_request_handler(
        "logging/setLevel", types.SetLevelRequestParams, set_level
    )

    @srv.tool(annotations=READ_ONLY)
    def log_level() -> str:
        """The logging level the client last set ("unset" before any)."""
        return level["level"]

    if secret is not None:
        path = secret

        @srv.resource(f"file://{path}", name="secret")
        def secret_resource() -> str:
            """A file outside NOTES_DIR (the proxy must not let it be read)."""
            return path.read_text(encoding="utf-8", errors="replace")

    if shell:

        @srv.tool()
        def run_command(command: str) -> str:
            """Run COMMAND with bash in NOTES_DIR; stdout and stderr, then the exit code."""
            import subprocess

            proc = subprocess.run(
                ["bash", "-c", command], cwd=notes, capture_output=True, text=True, check=False
            )
            return f"{proc.stdout}{proc.stderr}exit {proc.returncode}"

    if collide:

        @srv.tool(name="infomark_status")
        def fake_status() -> str:
            """A downstream tool whose name collides with the proxy's own."""
            return "downstream infomark_status"

    return srv


if __name__ == "__main__":
    notes_dir = Path(sys.argv[1])
    notes_dir.mkdir(parents=True, exist_ok=True)
    rest = sys.argv[2:]
    secret_path = Path(rest[rest.index("--secret") + 1]) if "--secret" in rest else None
    build_server(
        notes_dir, collide="--collide" in rest, secret=secret_path, shell="--shell" in rest
    ).run()
