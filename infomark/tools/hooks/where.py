"""Where a hook call's ledger home and project root are (shared by the local and forwarding hook).

Standard library only and nothing else imported: the forwarding hook (``--url``) needs
these two paths before anything else, and must not pay for the local hook's imports.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = ["hook_paths"]


def hook_paths(payload: object, home: StrPath | None, root: StrPath | None) -> tuple[str, str]:
    """``(home, root)``: the options if given, else ``$CLAUDE_PROJECT_DIR``, the payload's
    ``cwd`` or the working directory for the root, and ``$INFOMARK_HOME`` or
    ``<root>/.infomark`` for the home."""
    if root is None:
        project_dir = os.environ.get("CLAUDE_PROJECT_DIR")
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        if project_dir:
            root = project_dir
        elif isinstance(cwd, str) and cwd and "\x00" not in cwd:
            root = cwd
        else:
            root = os.getcwd()
    root_s = os.fspath(root) or "."  # pathlib's reading of an empty option
    if home is not None:
        return os.fspath(home) or ".", root_s
    return os.environ.get("INFOMARK_HOME") or os.path.join(root_s, ".infomark"), root_s
