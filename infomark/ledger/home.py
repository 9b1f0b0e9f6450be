"""The ledger home: where it is, and the one code path that creates it.

Every entry point (``infomark init``, the hook, ``serve``, the MCP proxy, the Python API)
creates a home through :func:`ensure_private_dir`: the folder 0700, and a ``.gitignore`` and
an ``.ignore`` that ignore everything, so ``git add -A`` never commits the key and ripgrep
(Claude Code's Grep) never searches it. Secret files inside are
written 0600 by :func:`infomark.ledger.keys.write_private`. Standard library only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

__all__ = [
    "GITIGNORE",
    "HOME_ENV",
    "default_home",
    "default_home_dir",
    "ensure_private_dir",
    "journal_recovery",
]

HOME_ENV = "INFOMARK_HOME"
GITIGNORE = "# infomark ledger home: keys and journal, never commit\n*\n"


def journal_recovery(home: str | os.PathLike[str]) -> str:
    """The commands that bring back a home whose journal fails its check
    (docs/reliability.md#a-journal-that-fails-its-check)."""
    import shlex

    h = shlex.quote(os.fspath(home))
    return (
        f"restore {h}/ledger.db from a backup, or start a new journal and keep this one for "
        f"audit: `mv {h}/ledger.db {h}/ledger.db.broken && infomark init --home {h}`; then "
        f"`infomark doctor --home {h}` clears this state"
    )


def default_home_dir() -> str:
    """``$INFOMARK_HOME``, else ``.infomark`` in the current directory."""
    return os.environ.get(HOME_ENV) or ".infomark"


def default_home() -> Path:
    """:func:`default_home_dir` as a :class:`~pathlib.Path`."""
    from pathlib import Path  # not on the hook's path

    return Path(default_home_dir())


def ensure_private_dir(path: StrPath) -> None:
    """Create a ledger home 0700 with its ``.gitignore`` and ``.ignore``; tighten nothing that
    exists.

    An existing directory is left as it is (``infomark init`` tightens it), but a missing
    ignore file is always written, so a home made by an older version is covered too.
    """
    if not os.path.exists(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask
    for name in (".gitignore", ".ignore"):
        ignore = os.path.join(path, name)
        if os.path.exists(ignore):
            continue
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w") as f:
            f.write(GITIGNORE)
