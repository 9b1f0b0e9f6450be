"""infomark: an epistemic claim-ledger gatekeeper for AI agents.

The public API is re-exported here. Names load lazily (PEP 562) so that the hook
path, which imports ``infomark.tools.hooks`` directly, does not pay for pydantic,
lark or httpx.
"""

from __future__ import annotations

from infomark._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_EXPORTS: dict[str, str] = {
    "InfoMark": "infomark.kernel.infomark",
    "GROUNDING_SET": "infomark.kernel.infomark",
    "RejectReason": "infomark.kernel.reasons",
    "InfomarkError": "infomark.kernel.errors",
    "UserError": "infomark.kernel.errors",
    "ConfigError": "infomark.kernel.errors",
    "BlockSyntaxError": "infomark.kernel.errors",
    "KeyFileError": "infomark.kernel.errors",
    "StoreError": "infomark.kernel.errors",
    "StoreBusyError": "infomark.kernel.errors",
    "VerificationError": "infomark.kernel.errors",
    "GraphError": "infomark.kernel.errors",
    "ToolCall": "infomark.ledger.calls",
    "ToolOutcome": "infomark.ledger.calls",
    "Evidence": "infomark.ledger.evidence",
    "EvidenceClass": "infomark.ledger.evidence",
    "Outcome": "infomark.ledger.evidence",
    "IngestReport": "infomark.ledger.report",
    "AuditReport": "infomark.ledger.audit",
    "Gatekeeper": "infomark.gatekeeper",
    "AsyncGatekeeper": "infomark.async_gatekeeper",
    "GatedResult": "infomark.wrapping",
    "LedgerView": "infomark.gates.views",
    "GateView": "infomark.gates.views",
    "Decision": "infomark.gates.decision",
    "FinishDecision": "infomark.gates.decision",
    "Verdict": "infomark.gates.decision",
    "Config": "infomark.gates.config",
    "ToolClass": "infomark.gates.classify",
    "Classification": "infomark.gates.classify",
    "classify_tool": "infomark.gates.classify",
    "PolicyRuntime": "infomark.gates.policies.runtime",
    "render_protocol": "infomark.kernel.protocol",
    "make_builtins": "infomark.tools.builtin",
    "agent_env": "infomark.kernel.environ",
    "Client": "infomark.tools.http_client",
    "AsyncClient": "infomark.tools.http_client",
    "ServiceError": "infomark.tools.http_client",
    "ServiceUnavailable": "infomark.tools.http_client",
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:
    from infomark.async_gatekeeper import AsyncGatekeeper
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates.classify import Classification, ToolClass, classify_tool
    from infomark.gates.config import Config
    from infomark.gates.decision import Decision, FinishDecision, Verdict
    from infomark.gates.policies.runtime import PolicyRuntime
    from infomark.gates.views import GateView, LedgerView
    from infomark.kernel.environ import agent_env
    from infomark.kernel.errors import (
        BlockSyntaxError,
        ConfigError,
        GraphError,
        InfomarkError,
        KeyFileError,
        StoreBusyError,
        StoreError,
        UserError,
        VerificationError,
    )
    from infomark.kernel.infomark import GROUNDING_SET, InfoMark
    from infomark.kernel.protocol import render_protocol
    from infomark.kernel.reasons import RejectReason
    from infomark.ledger.audit import AuditReport
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
    from infomark.ledger.report import IngestReport
    from infomark.tools.builtin import make_builtins
    from infomark.tools.http_client import AsyncClient, Client, ServiceError, ServiceUnavailable
    from infomark.wrapping import GatedResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'infomark' has no attribute {name!r}")
    # __import__, not importlib.import_module: importlib costs a hook ~1.5 M instructions
    value = getattr(__import__(module, fromlist=[name]), name)
    if name in ("Gatekeeper", "AsyncGatekeeper"):
        # the public API's sessions run, at their finish, the attested checks they need
        from infomark.tools.attest_lazy import install

        install()
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
