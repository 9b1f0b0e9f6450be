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

__all__ = ["check_operator", "load_operator_token"]

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
            raise UserError(f"--operator-token-file: {exc}") from None
        token = p.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--operator-token-file {p} cannot be read: {exc}") from None
    if len(token) < 16:
        raise UserError(
            f"--operator-token-file {p} holds no usable token (16 characters at least); "
            'e.g. python3 -c "import secrets; print(secrets.token_urlsafe(32))" > FILE'
        )
    return token


def check_operator(given: str | None, expected: str | None) -> None:
    """Raise ``403 operator_only`` unless ``given`` is the configured operator token."""
    if expected is None:
        raise ApiError(403, "operator_only", f"no operator token is configured; {_HOW}")
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise ApiError(403, "operator_only", f"missing or wrong operator_token; {_HOW}")
