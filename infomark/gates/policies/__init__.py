"""The adaptive policy layer: turn hooks, instruction packs, working memory, triggers.

``PolicyRuntime(config)`` runs the enabled policies at each phase of a turn and
keeps its state in the session journal (``policy_updated`` events), so it is
replayable and inspectable like everything else. See ``docs/policies.md``.
Standard library only: this runs inside the host's hook process.
"""

from __future__ import annotations

from infomark.gates.policies.context import (
    ALL_PHASES,
    PHASES,
    FinalizeVerdict,
    HookResult,
    PackSettings,
    ToolResult,
    TurnContext,
)
from infomark.gates.policies.registry import (
    DEFAULT_PACKS,
    ENTRY_POINT_GROUP,
    available_policies,
    register_policy,
)
from infomark.gates.policies.runtime import POLICY_KEYS, PolicyRuntime, PolicyStep
from infomark.gates.policies.settings import PolicySettings, validate_policy_config
from infomark.gates.policies.triggers import TriggerSpec


def _module_attribute(name: str) -> object:
    """PEP 562: ``Policy`` (a typing.Protocol) loads typing, so only when used; the views
    are not on a hook's ingest."""
    if name == "Policy":
        from infomark.gates.policies import registry

        return registry.Policy
    if name in ("context_view", "state_document"):
        from infomark.gates.policies import view

        return getattr(view, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TYPE_CHECKING = False
if TYPE_CHECKING:
    from infomark.gates.policies.registry import Policy
    from infomark.gates.policies.view import context_view, state_document
else:  # a binding only; the function above is checked
    __getattr__ = _module_attribute


__all__ = [
    "ALL_PHASES",
    "DEFAULT_PACKS",
    "ENTRY_POINT_GROUP",
    "PHASES",
    "POLICY_KEYS",
    "FinalizeVerdict",
    "HookResult",
    "PackSettings",
    "Policy",
    "PolicyRuntime",
    "PolicySettings",
    "PolicyStep",
    "ToolResult",
    "TriggerSpec",
    "TurnContext",
    "available_policies",
    "context_view",
    "register_policy",
    "state_document",
    "validate_policy_config",
]
