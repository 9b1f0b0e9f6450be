"""Pydantic validation of the configuration file (off the hot path; results are cached)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from infomark.gates.bounds import (
    EXPIRES_AFTER,
    MAX_ACTIVE_PACKS,
    PACK_BUDGET_CHARS,
    POLICY_KEYS,
    SEVERITY,
    THRESHOLD_MAX,
)
from infomark.kernel.errors import ConfigError
from infomark.kernel.profiles import Profile

__all__ = ["ConfigModel", "EvidenceClassName", "ToolClassName", "validate_config"]

ToolClassName = Literal[
    "read",
    "search",
    "web",
    "execute",
    "delegation",
    "modify",
    "destructive",
    "ledger",
    "unknown",
]
EvidenceClassName = Literal["execution", "observation", "web", "ineligible"]
Family = Literal["file", "git", "db", "mcp"]


_GATES = frozenset(f"G{i}" for i in range(10))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PackOverride(_Strict):
    threshold: float | None = Field(default=None, gt=0, le=THRESHOLD_MAX)
    severity: int | None = Field(default=None, ge=SEVERITY[0], le=SEVERITY[1])
    expires_after: int | None = Field(default=None, ge=EXPIRES_AFTER[0], le=EXPIRES_AFTER[1])
    enabled: bool | None = None


class TriggerModel(_Strict):
    name: str = Field(min_length=1)
    when: dict[str, Any]
    prompt: str = Field(min_length=1, max_length=4000)
    requires_read: list[str] = Field(default_factory=list)
    at: Literal["finish", "tool"] = "finish"


class OraclesModel(_Strict):
    allow: list[str] = Field(default_factory=list)
    require: list[str] = Field(default_factory=list)


class GradingModel(_Strict):
    """``[grading]``: what an attested run carries over from the agent (docs/gates.md)."""

    # root-relative globs of source files (`**` spans directories); empty: the default rule
    source: list[str] = Field(default_factory=list)

    @field_validator("source")
    @classmethod
    def _relative(cls, value: list[str]) -> list[str]:
        for glob in value:
            parts = glob.replace("\\", "/").split("/")
            if not glob.strip() or glob.startswith("/") or ".." in parts:
                raise ValueError(
                    f"{glob!r} is not a project-relative glob; write one such as "
                    '"src/**" or "*.py" (no leading /, no ..)'
                )
        return value


class AttestModel(_Strict):
    """``[attest]``: infomark's own sandboxed runs of an oracle (docs/security.md)."""

    # Exact for a claim with an oracle needs an attested run; None: the profile's default (yes,
    # except in observe); false: the operator's explicit opt-out
    required: bool | None = None
    env: list[str] = Field(default_factory=list)  # variables passed through by name
    network: bool = False
    cpu_seconds: int = Field(default=600, ge=1, le=86400)
    memory_mb: int = Field(default=4096, ge=64, le=1 << 20)
    wall_seconds: float = Field(default=240, gt=0, le=840)  # below the hook timeout (900 s)
    at_finish: int = Field(default=3, ge=0, le=20)  # claims the finish may run, at most

    @field_validator("env")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value


class ScratchModel(_Strict):
    """``[scratch]``: writes to the agent's own new files and the temp dir (docs/gates.md)."""

    enabled: bool = True
    in_project: bool = True  # new untracked files under the root count (else only the temp dir)
    protected: list[str] = Field(default_factory=list)  # extra patterns that are never scratch


_RULE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+(/[^\s?#]*)?")


class SourcesModel(_Strict):
    """``[sources]``: which web hosts are primary authorities (docs/blocks.md#source_stamp)."""

    primary: list[str] = Field(default_factory=list)  # "docs.python.org", "github.com/o/r"
    defaults: bool = True  # keep infomark's built-in primary hosts

    @field_validator("primary")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        out = []
        for rule in value:
            norm = rule.strip().lower().rstrip("/")
            for scheme in ("https://", "http://"):
                norm = norm.removeprefix(scheme)
            if not _RULE.fullmatch(norm):
                raise ValueError(
                    f"{rule!r} is not a host rule; write a host name such as "
                    '"docs.python.org", or a host and path prefix such as "github.com/org/repo"'
                )
            out.append(norm)
        return out


class ConfigModel(_Strict):
    profile: Profile = Profile.LEDGER  # the same message as a Literal: "Input should be …"
    require_declared_oracle: bool = True
    reject_evidence_predating_claim: bool = True
    tools: dict[str, ToolClassName] = Field(default_factory=dict)
    evidence_classes: dict[str, EvidenceClassName] = Field(default_factory=dict)
    allow_destructive: list[Family] = Field(default_factory=list)
    finish_refusal_cap: int = Field(default=3, ge=0, le=20)
    scratch: ScratchModel = Field(default_factory=ScratchModel)
    require_evidence_for_completion: bool = True
    require_agent_sandbox: bool = True
    approval_phrase: str = Field(default="approve", min_length=1)
    session_prefix: str = ""
    # The ledger's store: "sqlite" (the home's file) or a postgresql:// URL (docs/deploy.md).
    store: str = "sqlite"
    unattended: bool = False
    loop_budget: dict[str, int] = Field(default_factory=dict)
    sources: SourcesModel = Field(default_factory=SourcesModel)
    oracles: OraclesModel = Field(default_factory=OraclesModel)
    grading_policy: Literal["hold", "refuse", "allow"] = "hold"
    grading_files: list[str] = Field(default_factory=list)
    grading: GradingModel = Field(default_factory=GradingModel)
    attest: AttestModel = Field(default_factory=AttestModel)
    # Adaptive policy layer (packs, working memory, triggers).
    adaptive_packs: list[str] | None = None
    pack_overrides: dict[str, PackOverride] = Field(default_factory=dict)
    max_active_packs: int = Field(default=3, ge=MAX_ACTIVE_PACKS[0], le=MAX_ACTIVE_PACKS[1])
    pack_budget_chars: int = Field(default=600, ge=PACK_BUDGET_CHARS[0], le=PACK_BUDGET_CHARS[1])
    triggers: list[TriggerModel] = Field(default_factory=list)
    policies: list[str] = Field(default_factory=list)

    @field_validator("store")
    @classmethod
    def _store(cls, value: str) -> str:
        text = value.strip()
        if text != "sqlite" and not text.startswith(("postgresql://", "postgres://")):
            raise ValueError('use "sqlite" or a postgresql:// URL')
        return text

    @field_validator("loop_budget")
    @classmethod
    def _gates_only(cls, value: dict[str, int]) -> dict[str, int]:
        for gate, budget in value.items():
            if gate not in _GATES:
                raise ValueError(f"{gate!r} is not a gate; use G0 … G9")
            if budget < 0:
                raise ValueError(f"the loop budget of {gate} must be 0 or more, not {budget}")
        return value


_POLICY_KEYS = POLICY_KEYS


def validate_config(doc: dict[str, Any], *, source: str) -> dict[str, Any]:
    """Validate a parsed TOML document; raise ConfigError naming each bad field."""
    try:
        model = ConfigModel.model_validate(doc)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            problems.append(f"  {where}: {err['msg']}")
        raise ConfigError(
            f"{source}: invalid infomark configuration:\n" + "\n".join(problems)
        ) from exc
    data = model.model_dump()
    data["policies"] = {k: data.pop(k) for k in _POLICY_KEYS}
    return data
