"""The Python API's attester: a Gatekeeper made through ``infomark.Gatekeeper`` (or
``infomark.AsyncGatekeeper``) runs, at its finish, the attested checks it needs, as the hook,
the runner, the MCP proxy and the HTTP service do (docs/security.md#attested-runs).

Nothing of the attested runner is imported until a run happens.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper

__all__ = ["install", "lazy_attester"]


def lazy_attester(gk: Gatekeeper) -> None:
    """Give ``gk`` its attester and check attester; each imports the runner on first use."""

    def attest(claim_id: str) -> str:
        from infomark.tools.attest import check

        return check(gk, claim_id).text

    def attest_check(command: str) -> str:
        from infomark.tools.attest import check_command

        return check_command(gk, command).text

    gk.attester = attest
    gk.check_attester = attest_check


def install() -> None:
    """Every Gatekeeper made from now on gets :func:`lazy_attester` (an integration that sets
    its own replaces it)."""
    from infomark.gatekeeper import set_default_attester

    set_default_attester(lazy_attester)
