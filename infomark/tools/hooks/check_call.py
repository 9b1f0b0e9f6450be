"""``infomark check C1`` typed as a Bash command: the hook runs the attested check itself.

The agent's shell never runs it (the call is answered ``deny`` with the result: the text,
the evidence_ref and the claim's rank), so nothing the agent's shell sets (environment,
working directory, a wrapper) reaches the run. Any other spelling that runs infomark from
the shell stays denied by self-protection.
"""

from __future__ import annotations

from infomark.kernel.lazyre import lazy_compile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper

__all__ = ["check_target", "lazy_attester", "run_check"]

# `infomark check C1` and nothing else: no redirection, no second command, no wrapper
_CHECK = lazy_compile(r"\s*infomark\s+check\s+([A-Za-z0-9_.:-]{1,64})\s*")
_SHELLS = ("bash", "shell", "run_shell_command")


def check_target(tool: str, tool_input: dict[str, Any]) -> str | None:
    """The claim id when this call is exactly ``infomark check <ID>`` in a shell tool."""
    if tool.lower() not in _SHELLS:
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or "infomark" not in command:
        return None  # the pattern needs the word: no compile for every other command
    m = _CHECK.fullmatch(command)
    return m.group(1) if m else None


def _budget(gk: Gatekeeper) -> float:
    return float(gk.config.attest.get("wall_seconds", 240)) + 60


def run_check(gk: Gatekeeper, claim_id: str) -> str:
    """Run the attested check (the watchdog waits for it) and return the text to answer."""
    from infomark.tools.attest import check
    from infomark.tools.hooks.deadline import extend

    extend(_budget(gk))
    result = check(gk, claim_id)
    return "infomark ran this check itself (your shell did not run the command):\n" + result.text


def lazy_attester(gk: Gatekeeper) -> None:
    """Let the finish run attested checks (a claim's oracle, a required check of the verify
    profile); nothing is imported until one runs."""

    def attest(claim_id: str) -> str:
        from infomark.tools.attest import check
        from infomark.tools.hooks.deadline import extend

        extend(_budget(gk))
        return check(gk, claim_id).text

    def attest_check(command: str) -> str:
        from infomark.tools.attest import check_command
        from infomark.tools.hooks.deadline import extend

        extend(_budget(gk))
        return check_command(gk, command).text

    gk.attester = attest
    gk.check_attester = attest_check
