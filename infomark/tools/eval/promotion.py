"""The promotion journal: decisions with their numbers, and operator-approved activation.

Every promotion decision of ``infomark eval`` is a ``promotion_decided`` event in the ledger
home's ``eval-promotions`` session (signed and hash-chained like every journal event), with
the numbers it rests on and the exact policy text that was measured. A policy becomes the
project's configuration only through :func:`activate`: it needs a decision that said
*promote*, the name of the operator who approves (``policy_activated`` records it), and it
installs exactly the measured text (its digest is checked). The measured agent never writes
its grade: decisions are computed by the harness from the hidden checks, and an agent's own
``infomark`` calls are denied by self-protection.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import UserError
from infomark.tools.eval.policy import Policy
from infomark.tools.eval.stats import Promotion

__all__ = ["SESSION", "activate", "decisions", "journal_decision", "strip_eval_table"]

SESSION = "eval-promotions"
_TABLE = re.compile(r"^\s*\[\[?([^\]]+)\]\]?\s*(#.*)?$")


def strip_eval_table(text: str) -> str:
    """The policy file without its ``[eval]`` table (what goes into ``infomark.toml``)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        m = _TABLE.match(line)
        if m:
            skipping = m.group(1).strip() == "eval" or m.group(1).strip().startswith("eval.")
        if not skipping:
            out.append(line)
    return "".join(out)


def journal_decision(
    home: Path, promotion: Promotion, b: Policy, meta: dict[str, Any]
) -> dict[str, Any]:
    """Journal one decision; returns its payload (with its ``id``)."""
    config = strip_eval_table(b.text)
    body = {
        **promotion.to_dict(),
        **meta,
        "policy_b": b.to_dict(),
        "config_toml": config,
        "config_digest": hashlib.sha256(config.encode()).hexdigest(),
    }
    with Gatekeeper.open(home, SESSION, root=home.parent) as gk, gk.store.transaction():
        seq = gk.store.journal.last_seq(gk.session) + 1
        body["id"] = "prm_" + hashlib.sha256(f"{gk.session}\0{seq}".encode()).hexdigest()[:16]
        gk.store.emit("promotion_decided", body)
    return body


def decisions(home: Path) -> list[dict[str, Any]]:
    """Every journaled decision and activation, oldest first."""
    if not (home / "ledger.db").exists():
        return []
    with Gatekeeper.open(home, SESSION, root=home.parent) as gk:
        return [
            {"type": e.type, **e.payload}
            for e in gk.events()
            if e.type in ("promotion_decided", "policy_activated")
        ]


def activate(
    home: Path, decision_id: str, *, by: str, target: Path, replace: bool
) -> dict[str, Any]:
    """Install the measured policy of a *promote* decision as ``target``; journaled."""
    if not by.strip():
        raise UserError("activation needs the approving operator: --by NAME")
    found = [d for d in decisions(home) if d["type"] == "promotion_decided"]
    match = [d for d in found if d.get("id") == decision_id]
    if not match:
        known = ", ".join(d["id"] for d in found[-5:]) or "none"
        raise UserError(f"no promotion decision {decision_id!r} in {home} (latest: {known})")
    d = match[0]
    if d.get("decision") != "promote":
        raise UserError(
            f"decision {decision_id} refused promoting {d.get('b')!r} over {d.get('a')!r}: "
            + "; ".join(d.get("reasons", []))
        )
    config = str(d["config_toml"])
    if hashlib.sha256(config.encode()).hexdigest() != d.get("config_digest"):
        raise UserError(
            f"decision {decision_id}: the recorded policy text does not match its digest"
        )
    previous = None
    if target.exists():
        previous = hashlib.sha256(target.read_bytes()).hexdigest()
        if not replace:
            raise UserError(
                f"{target} exists; pass --replace to overwrite it (its digest is journaled)"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".infomark-activate-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(config)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    payload = {
        "decision_id": decision_id,
        "policy": d.get("b"),
        "by": by.strip(),
        "path": str(target),
        "config_digest": d["config_digest"],
        "previous_digest": previous,
    }
    with Gatekeeper.open(home, SESSION, root=home.parent) as gk, gk.store.transaction():
        gk.store.emit("policy_activated", payload)
    return payload
