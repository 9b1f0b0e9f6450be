"""``infomark run``: a reference agent runtime with the gatekeeper inside.

A tool loop against any OpenAI-compatible Chat Completions endpoint; built-in tools gated
through authorize → run → record; the four turn hooks; a steering inbox
(:mod:`infomark.ledger.inbox`); sub-agents; a persistent idle loop on headlong's backoff
schedule; crash and resume from the journal. docs/runner.md is the user's guide.
"""

from __future__ import annotations

from infomark.tools.runner.agentfile import AgentSpec, IdleSpec, ModelSpec, load_agent
from infomark.tools.runner.loop import Runner
from infomark.tools.runner.model import ModelClient, ModelError
from infomark.tools.runner.result import RunResult
from infomark.tools.runner.resume import resume_run
from infomark.tools.runner.schedule import FakeClock, IdleSchedule, SystemClock
from infomark.tools.runner.scripted import ScriptedModelServer
from infomark.tools.runner.send import send_message

__all__ = [
    "AgentSpec",
    "FakeClock",
    "IdleSchedule",
    "IdleSpec",
    "ModelClient",
    "ModelError",
    "ModelSpec",
    "RunResult",
    "Runner",
    "ScriptedModelServer",
    "SystemClock",
    "load_agent",
    "resume_run",
    "send_message",
]
