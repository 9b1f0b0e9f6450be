"""Decision profiles: what a project asks of its agent, and what the gatekeeper enforces.

Standard library only (hot path). The values are the configuration's spelling
(``profile = "verify"``) and what journal payloads and JSON carry; a ``StrEnum`` member *is*
that string, so serialised forms are unchanged. Code outside the kernel asks a profile's
properties (or compares members), never its name: ``tests/kernel/test_code_vocabulary.py``
fails on a profile name compared or listed as a string literal (docs/gates.md#profiles).
"""

from __future__ import annotations

from infomark.kernel.enums import StrEnum

__all__ = ["PROFILES", "Profile"]


class Profile(StrEnum):
    """The four decision profiles (docs/gates.md#profiles)."""

    LEDGER = "ledger"  # the default: the claim ledger's premises gate mutations
    STRICT = "strict"  # the agent walks the G0–G9 graph by lawful `gate:` lines
    OBSERVE = "observe"  # nothing enforced: each decision journaled as it would be (dryrun)
    VERIFY = "verify"  # no protocol asked: edits run ungated; the finish is judged on checks

    @property
    def enforcing(self) -> bool:
        """Decisions bind (every profile but observe, which journals what it would do, fails
        open and asks no attested runs or sandbox)."""
        return self is not Profile.OBSERVE

    @property
    def asks_protocol(self) -> bool:
        """The agent is asked for the claim-ledger protocol, and premises gate its edits
        (every profile but verify)."""
        return self is not Profile.VERIFY

    @property
    def judges_checks(self) -> bool:
        """The finish is judged on the project's required checks (their latest runs), not on
        claims (verify only)."""
        return self is Profile.VERIFY

    @property
    def walks_graph(self) -> bool:
        """The gate position binds: it moves only by lawful ``gate:`` lines, G6 needs the
        operator's approval, mutation happens only at G7 and the finish only from G9 (strict
        only); elsewhere the position follows the evidence."""
        return self is Profile.STRICT


#: the names, in the configuration's order, as plain strings (CLI choices, messages)
PROFILES: tuple[str, ...] = tuple(p.value for p in Profile)
