"""Codex's own sandbox, told to keep the ledger home out of reach of the agent's commands.

Codex 0.171 compiles a *permission profile* (``default_permissions`` and
``[permissions.<name>]`` in ``config.toml``) into its sandbox (bubblewrap and seccomp on
Linux). ``infomark install codex`` writes one into the project's ``.codex/config.toml``:

    default_permissions = "infomark"
    [permissions.infomark]
    extends = ":workspace"
    [permissions.infomark.filesystem.":project_roots"]
    "." = "write"
    ".infomark" = "none"

Seen on the binary: under it a command run by the agent cannot list, read or write
``.infomark`` (``Permission denied``), while the rest of the project stays writable. The hook
itself runs outside the sandbox. Codex ignores the profile when any loaded config sets
``sandbox_mode`` (or ``--sandbox`` is passed): then this module writes nothing and says why,
and ``infomark doctor`` warns. The lines it adds are marked, and ``--uninstall`` removes
exactly them; a file that would not parse afterwards is never written. The home directory is
created with the profile: Codex puts an empty read-only file at a hidden path that is missing,
which would leave the hook no home.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from infomark.kernel.errors import UserError

__all__ = ["PROFILE", "policy_state", "remove_policy", "write_policy"]

PROFILE = "infomark"
_MARK = "  # infomark: the ledger home is unreadable to the agent's commands"
_HEAD = f'default_permissions = "{PROFILE}"{_MARK}\n'
_BEGIN = "# >>> infomark sandbox profile (`infomark install codex`; removed by --uninstall)\n"
_END = "# <<< infomark sandbox profile\n"


def _tables(home_rel: str) -> str:
    return (
        f"{_BEGIN}[permissions.{PROFILE}]\n"
        'extends = ":workspace"\n\n'
        f'[permissions.{PROFILE}.filesystem.":project_roots"]\n'
        '"." = "write"\n'
        f'"{home_rel}" = "none"\n{_END}'
    )


def policy_state(text: str) -> str:
    """``"ours"`` (our profile is selected), ``"absent"`` (nothing chooses a sandbox), or
    ``"theirs"`` (the file chooses one itself: ``sandbox_mode`` or another profile)."""
    if _HEAD in text and _BEGIN in text:
        return "ours"
    try:
        data = tomllib.loads(text)
    except ValueError:
        return "theirs"
    return "theirs" if "sandbox_mode" in data or "default_permissions" in data else "absent"


def _home_rel(root: Path, home: Path | None) -> str | None:
    home = (home if home is not None else root / ".infomark").resolve()
    try:
        rel = home.relative_to(root.resolve())
    except ValueError:
        return None
    text = rel.as_posix()
    return text if text not in ("", ".") and '"' not in text and "\\" not in text else None


def write_policy(root: Path, home: Path | None) -> tuple[bool, str]:
    """Add the profile to ``<root>/.codex/config.toml``: ``(changed, note)``; the note says
    why nothing was written when the file already chooses a sandbox."""
    path = root / ".codex" / "config.toml"
    try:
        text = path.read_text("utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} cannot be read ({exc}); nothing was changed") from exc
    state = policy_state(text)
    if state == "ours":
        return False, ""
    if state == "theirs":
        return False, (
            f"{path} chooses its own sandbox (sandbox_mode or default_permissions): the "
            "ledger home is not hidden from the agent's commands by Codex's sandbox"
        )
    rel = _home_rel(root, home)
    if rel is None:
        return (
            False,
            "the ledger home is outside the project: Codex's sandbox is not told to hide it",
        )
    new = _HEAD + text + ("" if not text or text.endswith("\n") else "\n") + "\n" + _tables(rel)
    parsed = tomllib.loads(new)  # what Codex will read: the profile, exactly
    profile = parsed.get("permissions", {}).get(PROFILE, {})
    if parsed.get("default_permissions") != PROFILE or profile.get("extends") != ":workspace":
        raise UserError(f"{path}: the sandbox profile would not parse as written; nothing changed")
    _ensure_home(root / rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(new, "utf-8")
    os.replace(tmp, path)
    return True, ""


def _ensure_home(home: Path) -> None:
    """The home must exist as a directory before Codex starts: for a path its profile hides
    that is missing, Codex 0.171 creates an empty read-only *file* there (seen on the binary),
    and the hook could then never create its home."""
    if home.is_file() and home.stat().st_size == 0:
        home.chmod(0o600)
        home.unlink()  # Codex's placeholder from an earlier run: nothing of infomark's
    home.mkdir(mode=0o700, parents=True, exist_ok=True)


def remove_policy(root: Path) -> bool:
    """Remove exactly the lines :func:`write_policy` added; whether there were any."""
    path = root / ".codex" / "config.toml"
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if policy_state(text) != "ours":
        return False
    start, end = text.index(_BEGIN), text.index(_END) + len(_END)
    rest = text[:start].rstrip("\n") + ("\n" if text[:start].strip() else "") + text[end:]
    rest = rest.replace(_HEAD, "", 1)
    if rest.strip():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(rest, "utf-8")
        os.replace(tmp, path)
    else:
        path.unlink()
    return True
