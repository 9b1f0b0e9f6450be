"""Ledger semantics: the rules, the context and the digests every block's judgement uses.

How parsed blocks change a session's claims, one module a kind of block: a ``claim_ledger``
(:mod:`infomark.ledger.claims`), an ``oracle_stamp`` / ``inference_stamp`` and a
``divergence_event`` (:mod:`infomark.ledger.stamps.rules`), a ``source_stamp``
(:mod:`infomark.ledger.stamps.source`). Each judges one block against the current state and
emits events; the reducer in :mod:`infomark.ledger.state` applies them. Only the runtime
raises a claim into G, and only through a stamp bound to evidence it issued. This module is
what they share and what the hook's hot path needs (:func:`check_artifacts`, the rules): the
judges themselves load when a block is ingested.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from infomark.kernel.digest import LARGE, sha256
from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason
from infomark.kernel.records import dataclass
from infomark.ledger.canonical import sha256_hex
from infomark.ledger.evidence import Evidence
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Protocol

    from _typeshed import StrPath

__all__ = [
    "LedgerContext",
    "LedgerRules",
    "artifact_digest",
    "check_artifacts",
    "demote",
    "shell_text",
    "text_hash",
]

OracleJudge = Callable[[str], "tuple[RejectReason, str] | None"]


@dataclass(frozen=True, slots=True)
class LedgerRules:
    require_declared_oracle: bool = True
    reject_evidence_predating_claim: bool = True
    source_primary: tuple[str, ...] = ()  # [sources] primary: host rules added to the defaults
    source_defaults: bool = True  # [sources] defaults: keep the built-in primary hosts
    # Judges an oracle at declaration (the gates layer's weak-oracle rules and the
    # operator's allow list): None accepts it, else (reason, message with the fix).
    judge_oracle: OracleJudge | None = None
    # True when a run's output says no test ran: such a PASS grounds nothing.
    ran_nothing: Callable[[bytes], bool] | None = None
    # Exact for a claim with a declared oracle needs attested evidence (infomark's own
    # sandboxed run, docs/security.md#attested-runs); the agent's own run stamps Inferred.
    require_attested: bool = False
    # An enforcing profile: the agent's own runs made while its commands had no OS sandbox
    # (``SessionState.unsandboxed_at``) ground nothing (docs/security.md#the-agents-sandbox).
    sandbox_required: bool = False


if TYPE_CHECKING:

    class LedgerContext(Protocol):
        """What the semantics need from the engine."""

        @property
        def state(self) -> SessionState: ...
        @property
        def rules(self) -> LedgerRules: ...
        @property
        def root_dir(self) -> str: ...
        @property
        def root(self) -> Path: ...
        def emit(self, type_: str, payload: Mapping[str, Any]) -> int: ...
        def verify_ref(self, ref: str) -> tuple[Evidence | None, RejectReason | None]: ...
        def output_of(self, ev: Evidence) -> bytes | None: ...

else:

    class LedgerContext:
        """What the semantics need from the engine (a ``typing.Protocol`` when type checking)."""


def text_hash(text: str) -> str:
    return sha256_hex(text.strip().encode("utf-8", "surrogatepass"))


def artifact_digest(root: StrPath, artifact: str) -> str | None:
    """``sha256:<hex>`` of the artifact file now, or None when it cannot be read."""
    try:
        with open(os.path.join(root, artifact), "rb") as f:  # an absolute artifact: itself
            h = sha256(large=os.fstat(f.fileno()).st_size >= LARGE)
            for chunk in iter(lambda: f.read(1 << 16), b""):
                h.update(chunk)
    except (OSError, ValueError):
        return None
    return "sha256:" + h.hexdigest()


def demote(written: InfoMark) -> InfoMark:
    """The rank a claim keeps once its stamp is gone: a grounded rank falls to Hypothetical."""
    return InfoMark.HYPOTHETICAL if written.grounded else written


def shell_text(command: str) -> str:
    """A command as the shell would run it, for comparing an oracle with a run.

    Runs of blanks outside quotes are one separator, a backslash-newline continues the
    line, blank lines vanish; a newline stays a newline (it separates commands) and
    quoted text is kept byte for byte.
    """
    out: list[str] = []
    quote = ""
    space = False

    def put(text: str) -> None:
        nonlocal space
        if space and out and out[-1] != "\n":
            out.append(" ")
        space = False
        out.append(text)

    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if quote:
            out.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < n:
                out.append(command[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch == "\\" and i + 1 < n and command[i + 1] == "\n":
            space = True  # a line continuation
            i += 1
        elif ch == "\\" and i + 1 < n:
            put(ch + command[i + 1])
            i += 1
        elif ch in " \t\r\f\v":
            space = True
        elif ch == "\n":
            space = False
            if out and out[-1] != "\n":
                out.append("\n")
        else:
            if ch in "'\"":
                quote = ch
            put(ch)
        i += 1
    return "".join(out).rstrip("\n")


# -- artifacts ------------------------------------------------------------------------------


def check_artifacts(ctx: LedgerContext) -> list[dict[str, Any]]:
    """Re-digest stamped artifacts; a changed or missing one revokes its stamp (divergence)."""
    out: list[dict[str, Any]] = []
    for claim in list(ctx.state.claims.values()):
        stamp = claim.stamp
        if stamp is None or not stamp.artifact:
            continue
        now = artifact_digest(ctx.root_dir, stamp.artifact)
        if now == stamp.artifact_digest:
            continue
        cause = "artifact_missing" if now is None else "artifact_changed"
        ctx.emit(
            "divergence",
            {
                "claim_id": claim.id,
                "evidence_ref": None,
                "revoked_ref": stamp.evidence_ref,
                "status": InfoMark.UNKNOWN.label,
                "cause": cause,
                "artifact": stamp.artifact,
                "digest": now,
            },
        )
        out.append({"claim_id": claim.id, "evidence_ref": stamp.evidence_ref, "cause": cause})
    return out
