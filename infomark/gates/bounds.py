"""The configuration's numeric bounds and the policy section's keys, written once.

Both validators read them: the pydantic model of the file
(:mod:`infomark.gates.config_model`) and the stdlib re-check of a
:class:`~infomark.gates.config.Config` built in code
(:mod:`infomark.gates.policies.settings`). Each bound is ``(low, high)``, inclusive.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "EXPIRES_AFTER",
    "MAX_ACTIVE_PACKS",
    "PACK_BUDGET_CHARS",
    "PACK_OVERRIDE_KEYS",
    "POLICY_KEYS",
    "SEVERITY",
    "THRESHOLD_MAX",
]

MAX_ACTIVE_PACKS: Final = (1, 3)
PACK_BUDGET_CHARS: Final = (100, 4000)
SEVERITY: Final = (0, 10)
EXPIRES_AFTER: Final = (1, 100)
#: a pack threshold is a number above 0 and at most this
THRESHOLD_MAX: Final = 1_000_000

#: the keys of the policy section (top-level keys in the file, ``Config.policies`` in code)
POLICY_KEYS: Final = (
    "adaptive_packs",
    "pack_overrides",
    "max_active_packs",
    "pack_budget_chars",
    "triggers",
    "policies",
)
PACK_OVERRIDE_KEYS: Final = ("threshold", "severity", "expires_after", "enabled")
