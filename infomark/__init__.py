"""infomark: an epistemic claim-ledger gatekeeper for AI agents.

The public API is re-exported here. Names load lazily (PEP 562) so that the hook
path, which imports ``infomark.tools.hooks`` directly, does not pay for pydantic,
lark or httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:
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
    from infomark.kernel.reasons import RejectReason
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
    from infomark.ledger.report import IngestReport


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'infomark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
