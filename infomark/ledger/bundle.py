"""Signed audit bundles: verify a ledger anywhere with the public key alone.

An Ed25519 key pair lives in the home (``signing_key``, 0600). A bundle holds the
session's events (with their chain hashes), evidence records, the projection and
the audit, the public key and a signature over all of it. ``verify_bundle``
recomputes the chain, checks the signature, replays the events and compares the
projection: it never needs the HMAC key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError
from infomark.ledger.canonical import canonical_json
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import check_private, write_private
from infomark.ledger.state import SessionState, apply
from infomark.ledger.store.journal import GENESIS, event_hash

__all__ = ["BUNDLE_FORMAT", "export_bundle", "public_key_hex", "verify_bundle"]

BUNDLE_FORMAT = "infomark-bundle/1"


def _signing_key(home: Path) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = home / "signing_key"
    if not path.exists():
        write_private(path, Ed25519PrivateKey.generate().private_bytes_raw())
    check_private(path)
    return Ed25519PrivateKey.from_private_bytes(path.read_bytes())


def public_key_hex(home: Path) -> str:
    """The hex Ed25519 public key that signs this home's bundles (created if missing)."""
    return str(_signing_key(home).public_key().public_bytes_raw().hex())


def _body(bundle: dict[str, Any]) -> bytes:
    return canonical_json({k: v for k, v in bundle.items() if k != "signature"})


def export_bundle(ledger: Ledger, path: Path, audit: dict[str, Any]) -> dict[str, Any]:
    key = _signing_key(ledger.home)
    events = [
        {
            "session": r[1],
            "seq": r[2],
            "type": r[3],
            "payload": r[4],
            "timestamp": r[5],
            "prev_hash": r[6],
            "hash": r[7],
            "key_id": r[9],
        }
        for r in ledger.journal.raw_rows(ledger.session)
    ]
    evidence = [
        {"ref": ref, "seq": seq, "record": json.loads(rec)}
        for ref, _s, seq, rec, _mac in ledger.journal.evidence_rows(ledger.session)
    ]
    bundle: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "session": ledger.session,
        "events": events,
        "evidence": evidence,
        "projection": ledger.replay().to_dict(),
        "audit": audit,
        "public_key": key.public_key().public_bytes_raw().hex(),
    }
    bundle["signature"] = key.sign(_body(bundle)).hex()
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(bundle, ensure_ascii=True))
    os.replace(tmp, path)
    return bundle


def verify_bundle(path: Path, *, expected_public_key: str | None = None) -> dict[str, Any]:
    """Check a bundle's signature, chain and projection; never needs the HMAC key."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        bundle = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not a readable bundle: {exc}") from exc
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise UserError(f"{path} is not an {BUNDLE_FORMAT} bundle")
    problems: list[str] = []
    pub_hex = str(bundle.get("public_key", ""))
    if expected_public_key and expected_public_key.lower() != pub_hex.lower():
        problems.append("signed by a different public key than the one pinned")
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(pub_hex)).verify(
            bytes.fromhex(str(bundle.get("signature", ""))), _body(bundle)
        )
    except (InvalidSignature, ValueError):
        problems.append("signature does not verify: the bundle was altered or not signed")
    state = SessionState(session=str(bundle.get("session")))
    prev = GENESIS
    try:
        for i, ev in enumerate(bundle.get("events", []), start=1):
            if ev["seq"] != i or ev["prev_hash"] != prev:
                problems.append(f"event {ev['seq']}: chain broken (missing, inserted or reordered)")
                break
            h = event_hash(
                prev,
                ev["session"],
                ev["seq"],
                ev["type"],
                ev["payload"],
                ev["timestamp"],
                ev["key_id"],
            )
            if h != ev["hash"]:
                problems.append(f"event {ev['seq']}: hash mismatch (edited)")
                break
            apply(state, ev["seq"], ev["type"], json.loads(ev["payload"]))
            prev = h
    except (KeyError, TypeError, ValueError) as exc:
        problems.append(f"malformed event list: {exc}")
    if not problems and canonical_json(state.to_dict()) != canonical_json(bundle.get("projection")):
        problems.append("the projection does not equal the replay of the events")
    return {
        "ok": not problems,
        "session": bundle.get("session"),
        "events": len(bundle.get("events", [])),
        "public_key": pub_hex,
        "problems": problems,
    }
