"""The operator's token: the HTTP approval is a person's act, never the agent's.

The service's bearer token lives in the ledger home (``<home>/token``), which a program the
agent writes can read. ``POST …/approve`` therefore needs a second secret, the operator
token, read once at start-up from a file the operator names (``infomark serve
--operator-token-file FILE``): a private file (0600) outside the ledger home, that never
lives in the agent's environment. Without one the route refuses every approval
(``403 operator_only``); a person then approves in a terminal (``infomark approve``) or at
Claude Code's own permission prompt.
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path

from infomark.kernel.errors import InfomarkError, UserError
from infomark.ledger.keys import check_private
from infomark.tools.service_io import ApiError

__all__ = [
    "OPERATOR_TOKEN_ENV",
    "check_operator",
    "default_operator_token_path",
    "load_operator_token",
    "operator_token",
    "read_token_fd",
]

#: An environment variable ``infomark serve`` reads the operator token from and then removes
#: from its own environment (so nothing it starts inherits it).
OPERATOR_TOKEN_ENV = "INFOMARK_OPERATOR_TOKEN"  # noqa: S105 (a name, not a secret)
_MIN_LEN = 16

_HOW = (
    "the G4 approval over HTTP is an operator act: start the service with "
    "--operator-token-file FILE (a 0600 file outside the ledger home, never in the agent's "
    "environment) and send that token as operator_token, or run `infomark approve` in a "
    "terminal"
)


def load_operator_token(path: Path | str, home: Path) -> str:
    """The token in ``path``; a clear :class:`UserError` when the file cannot be one."""
    p = Path(path)
    try:
        real, home_real = Path(os.path.realpath(p)), Path(os.path.realpath(home))
        if real == home_real or home_real in real.parents:
            raise UserError(
                f"--operator-token-file {p} is inside the ledger home {home}: the agent's "
                "programs can read the home; keep the operator token elsewhere"
            )
        if not p.is_file():
            raise UserError(f"--operator-token-file {p}: no such file (create it, mode 0600)")
        try:
            check_private(p)
        except InfomarkError as exc:  # say which option it is about
            raise UserError(f"--operator-token-file: {exc}") from exc
        token = p.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--operator-token-file {p} cannot be read: {exc}") from exc
    if len(token) < _MIN_LEN:
        raise UserError(
            f"--operator-token-file {p} holds no usable token (16 characters at least); "
            'e.g. python3 -c "import secrets; print(secrets.token_urlsafe(32))" > FILE'
        )
    return token


def default_operator_token_path(user_home: str | None = None) -> Path:
    """The well-known place of the operator token, ``~/.config/infomark/operator-token``:
    never named on a command line, and a directory the agent's sandbox hides
    (:func:`infomark.tools.agent_sandbox.private_paths`)."""
    base = user_home if user_home is not None else os.path.expanduser("~")
    return Path(base) / ".config" / "infomark" / "operator-token"


def read_token_fd(fd: int) -> str:
    """The token on an inherited file descriptor (``--operator-token-fd 3 3<FILE``); the
    descriptor is closed afterwards."""
    try:
        with os.fdopen(fd, "rb", closefd=True) as f:
            raw = f.read(4096)
    except OSError as exc:
        raise UserError(
            f"--operator-token-fd {fd} cannot be read ({exc.strerror}); open it in the shell "
            f"that starts the service, e.g. `infomark serve --operator-token-fd {fd} "
            f"{fd}<~/.config/infomark/operator-token`"
        ) from exc
    token = raw.decode("utf-8", "replace").strip()
    if len(token) < _MIN_LEN:
        raise UserError(f"--operator-token-fd {fd} holds no usable token (16 characters at least)")
    return token


def operator_token(
    home: Path,
    *,
    file: Path | str | None = None,
    fd: int | None = None,
    environ: dict[str, str] | None = None,
) -> tuple[str | None, str]:
    """The operator token and where it came from, in this order: ``fd``, ``file``,
    ``$INFOMARK_OPERATOR_TOKEN`` (removed from ``environ``, ``os.environ`` by default), the
    well-known file (:func:`default_operator_token_path`) when it exists; ``(None, "")``
    when there is none."""
    env: dict[str, str] = os.environ if environ is None else environ  # type: ignore[assignment]
    given = env.pop(OPERATOR_TOKEN_ENV, None)
    if fd is not None:
        return read_token_fd(fd), f"file descriptor {fd}"
    if file is not None:
        return load_operator_token(file, home), str(file)
    if given is not None:
        if len(given.strip()) < _MIN_LEN:
            raise UserError(f"${OPERATOR_TOKEN_ENV} holds no usable token (16 characters at least)")
        return given.strip(), f"${OPERATOR_TOKEN_ENV}"
    path = default_operator_token_path(env.get("HOME"))
    if path.exists():
        return load_operator_token(path, home), str(path)
    return None, ""


def check_operator(given: str | None, expected: str | None) -> None:
    """Raise ``403 operator_only`` unless ``given`` is the configured operator token."""
    if expected is None:
        raise ApiError(403, "operator_only", f"no operator token is configured; {_HOW}")
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise ApiError(403, "operator_only", f"missing or wrong operator_token; {_HOW}")
