"""Attested runs: infomark runs a claim's oracle itself, sandboxed, on the baseline's grading
surface (docs/security.md#attested-runs)."""

from infomark.tools.attest.run import CheckResult, check, check_command

__all__ = ["CheckResult", "check", "check_command"]
