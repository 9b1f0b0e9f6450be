"""The project's baseline: recorded the first time infomark sees a project, moved only by approval.

A session's baseline (:mod:`infomark.gates.baseline`) is what its attested runs are made
of. Taken from the tree as each session finds it, it would take in whatever an earlier
session left behind: a test that session rewrote to assert the bug (its own finish refused
for it) would grade the next one. So the baseline belongs to the **project**, not the
session: the first session infomark sees in a project records it here, and every later
session in the same home and project uses that record, whatever the tree holds when it
starts. It moves only by the user's approval of a changed grading file (the approval flow of
:mod:`infomark.gates.grading_flow`: the host's prompt for a held edit, or
``infomark approve --grading PATH``), which this record keeps so that later sessions grade
with the approved content too, or by ``infomark approve --baseline`` (the user accepts the
tree as it is now, for example after pulling new tests).

The record is ``<home>/projects/<id>.json`` (0600 in a 0700 directory; ``id``: SHA-256 of the
project's real path), the JSON body MACed with the home's key: the agent can neither read the
home nor write a record the key did not sign. A record that fails its MAC is not used and not
replaced (attested runs say why and fail closed). ``late``: the record was taken after the
recording session's first change (a hook failed before it could be taken): attested runs
refuse until the user accepts the tree (``infomark approve --baseline``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from infomark.kernel.digest import sha256_hex
from infomark.kernel.errors import UserError
from infomark.kernel.regular import read_regular
from infomark.ledger.keys import write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.ledger.engine import Ledger

__all__ = ["ACCEPT", "ProjectBaseline", "accept", "approve", "load", "path", "record"]

_DOMAIN = b"infomark-project-baseline\x00"
#: the user's one step to move the project's baseline to the tree as it is now
ACCEPT = "infomark approve --baseline"


class ProjectBaseline:
    """A verified project record: the baseline payload, and the approved grading files."""

    __slots__ = ("approved", "baseline", "late", "session")

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.baseline: dict[str, Any] = dict(body.get("baseline") or {})
        raw = body.get("approved") or {}
        self.approved: dict[str, str] = {str(k): str(v) for k, v in dict(raw).items()}
        self.late = bool(body.get("late"))
        self.session = str(body.get("session") or "")

    def approved_blobs(self) -> dict[str, str]:
        """Approved grading files (path -> blob); one approved as deleted is left out."""
        return {p: b for p, b in self.approved.items() if b}

    def body(self, root: str) -> dict[str, Any]:
        return {
            "v": 1,
            "root": root,
            "baseline": self.baseline,
            "approved": dict(sorted(self.approved.items())),
            "late": self.late,
            "session": self.session,
        }


def _root(ledger: Ledger) -> str:
    return os.path.realpath(ledger.root_dir)


def path(ledger: Ledger) -> str:
    """Where the record of the ledger's project lives in its home."""
    digest = sha256_hex(_root(ledger).encode("utf-8", "surrogateescape"))
    return os.path.join(ledger.home_dir, "projects", digest[:32] + ".json")


def load(ledger: Ledger) -> ProjectBaseline | None:
    """The project's verified record; None when none was recorded. Raises :class:`UserError`
    when one exists that is unreadable or whose MAC does not match (never replaced)."""
    where = path(ledger)
    try:
        raw = read_regular(where)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"the project's baseline record {where} cannot be read: {exc}") from None
    try:
        doc = json.loads(raw)
        body = str(doc["body"])
        mac = str(doc["mac"])
    except (ValueError, KeyError, TypeError):
        body, mac = "", ""
    if not mac or not ledger.key.verify(_DOMAIN + body.encode(), mac):
        raise UserError(
            f"the project's baseline record {where} is damaged or was not written by this "
            f"home's key; ask the user to look at it (`{ACCEPT}` records the tree as it is now)"
        )
    parsed: dict[str, Any] = json.loads(body)
    if parsed.get("root") != _root(ledger):
        raise UserError(f"the project's baseline record {where} names another project")
    return ProjectBaseline(parsed)


def _write(ledger: Ledger, rec: ProjectBaseline, *, first: bool = False) -> bool:
    """Write ``rec`` (complete, durable, 0600, through a private temp file); ``first``: only
    when no record exists (False when another process recorded one first)."""
    body = json.dumps(rec.body(_root(ledger)), sort_keys=True, separators=(",", ":"))
    doc = json.dumps({"body": body, "mac": ledger.key.mac(_DOMAIN + body.encode())})
    where = path(ledger)
    folder = os.path.dirname(where)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    # fsync'd, then linked (the first recording wins, whoever else races it) or renamed
    return write_private(where, doc.encode(), replace=not first)


def record(ledger: Ledger, payload: Mapping[str, Any], *, late: bool) -> ProjectBaseline:
    """Record ``payload`` (a captured baseline) as the project's, unless one is recorded
    already (then that one is returned: the first recording wins)."""
    found = load(ledger)
    if found is not None:
        return found
    rec = ProjectBaseline({"baseline": dict(payload), "late": late, "session": ledger.session})
    if _write(ledger, rec, first=True):
        return rec
    raced = load(ledger)
    if raced is None:
        raise UserError(f"the project's baseline record {path(ledger)} vanished while read")
    return raced


def accept(ledger: Ledger, payload: Mapping[str, Any]) -> ProjectBaseline:
    """The user accepts the tree as captured in ``payload`` as the project's baseline (the
    earlier approvals are folded into it, so none is kept)."""
    rec = ProjectBaseline({"baseline": dict(payload), "late": False, "session": ledger.session})
    _write(ledger, rec)
    return rec


def approve(ledger: Ledger, rel: str, blob: str | None) -> None:
    """The user approved ``rel``'s content ``blob`` (None: approved as deleted): later sessions
    grade with it. No record yet: nothing to move (the session's own record applies)."""
    try:
        rec = load(ledger)
    except UserError:
        return  # a damaged record stays as it is; attested runs say why
    if rec is None:
        return
    rec.approved[rel] = blob or ""
    _write(ledger, rec)
