"""Configuration: ``infomark.toml`` or ``[tool.infomark]`` in ``pyproject.toml``.

The file is validated with pydantic (:mod:`infomark.gates.config_model`) the first
time it is seen; the validated form is cached in ``<home>/config.cache.json`` keyed
by the file's sha256, so the hook path reads it with ``tomllib``/``json`` only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from infomark.gates.oracles import OracleJudge, ran_nothing
from infomark.kernel import jsonc
from infomark.kernel.contexts import suppress
from infomark.kernel.digest import sha256
from infomark.kernel.errors import ConfigError
from infomark.kernel.profiles import PROFILES, Profile
from infomark.kernel.records import dataclass, field
from infomark.kernel.regular import read_regular
from infomark.ledger.semantics import LedgerRules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = ["PROFILES", "Config", "find_config_file", "ledger_rules", "load_config"]

#: the validated form's shape in ``config.cache.json``: a cache written under another one (an
#: older infomark, other defaults) is validated again, never read as it is
CACHE_FORMAT = 2


@dataclass(frozen=True, slots=True)
class Config:
    """Validated settings, as plain data (hot path)."""

    profile: Profile = Profile.LEDGER
    require_declared_oracle: bool = True
    reject_evidence_predating_claim: bool = True
    tools: Mapping[str, str] = field(default_factory=dict)
    evidence_classes: Mapping[str, str] = field(default_factory=dict)
    allow_destructive: tuple[str, ...] = ()
    scratch: bool = True  # [scratch] enabled
    scratch_in_project: bool = True  # [scratch] in_project
    scratch_protected: tuple[str, ...] = ()  # [scratch] protected
    finish_refusal_cap: int = 3
    require_evidence_for_completion: bool = True
    require_agent_sandbox: bool = True  # the agent's unsandboxed runs ground nothing
    approval_phrase: str = "approve"
    session_prefix: str = ""
    store: str = "sqlite"  # or a postgresql:// URL (the ledger's store; docs/deploy.md)
    unattended: bool = False  # nobody answers an "ask": it becomes a deny
    loop_budget: Mapping[str, int] = field(default_factory=dict)
    policies: Mapping[str, Any] = field(default_factory=dict)  # packs, triggers, memory
    sources_primary: tuple[str, ...] = ()  # [sources] primary: hosts (or host/path) added
    sources_defaults: bool = True  # [sources] defaults: keep the built-in primary hosts
    oracle_allow: tuple[str, ...] = ()  # [oracles] allow: only these may ground claims
    oracle_require: tuple[str, ...] = ()  # [oracles] require: a finish needs a fresh PASS
    grading_policy: str = "hold"  # a file-tool edit of a grading file: hold | refuse | allow
    grading_files: tuple[str, ...] = ()  # test-file globs (empty: the defaults)
    grading_source: tuple[str, ...] = ()  # [grading] source: globs (empty: the default rule)
    attest: Mapping[str, Any] = field(default_factory=dict)  # [attest], as validated

    @property
    def attest_required(self) -> bool:
        """Exact for a claim with a declared oracle needs an attested run: the default in the
        enforcing profiles (ledger, strict, verify), never in observe; ``[attest] required =
        false`` is the operator's explicit opt-out (docs/security.md#attested-runs)."""
        required = self.attest.get("required")
        return (required is None or bool(required)) and self.profile.enforcing

    source: str | None = None

    def __post_init__(self) -> None:
        # the profile's name as written (a caller's str) becomes the member; an unknown name
        # raises ValueError (a cached form that no longer validates is read as stale)
        object.__setattr__(self, "profile", Profile(self.profile))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> Config:
        d = dict(data)
        return cls(
            profile=Profile(d.get("profile", Profile.LEDGER)),
            require_declared_oracle=bool(d.get("require_declared_oracle", True)),
            reject_evidence_predating_claim=bool(d.get("reject_evidence_predating_claim", True)),
            tools=dict(d.get("tools", {})),
            evidence_classes=dict(d.get("evidence_classes", {})),
            allow_destructive=tuple(d.get("allow_destructive", ())),
            scratch=bool(dict(d.get("scratch") or {}).get("enabled", True)),
            scratch_in_project=bool(dict(d.get("scratch") or {}).get("in_project", True)),
            scratch_protected=tuple(dict(d.get("scratch") or {}).get("protected", ())),
            finish_refusal_cap=int(d.get("finish_refusal_cap", 3)),
            require_evidence_for_completion=bool(d.get("require_evidence_for_completion", True)),
            require_agent_sandbox=bool(d.get("require_agent_sandbox", True)),
            approval_phrase=str(d.get("approval_phrase", "approve")),
            session_prefix=str(d.get("session_prefix", "")),
            store=str(d.get("store", "sqlite")),
            unattended=bool(d.get("unattended", False)),
            loop_budget=dict(d.get("loop_budget", {})),
            policies=dict(d.get("policies", {})),
            sources_primary=tuple(dict(d.get("sources") or {}).get("primary") or ()),
            sources_defaults=bool(dict(d.get("sources") or {}).get("defaults", True)),
            oracle_allow=tuple(dict(d.get("oracles") or {}).get("allow") or ()),
            oracle_require=tuple(dict(d.get("oracles") or {}).get("require") or ()),
            grading_policy=str(d.get("grading_policy", "hold")),
            grading_files=tuple(d.get("grading_files") or ()),
            grading_source=tuple(dict(d.get("grading") or {}).get("source") or ()),
            attest=dict(d.get("attest") or {}),
            source=source,
        )


def ledger_rules(config: Config, home: StrPath) -> LedgerRules:
    """What the configuration asks of the ledger's stamp semantics in ``home``."""
    return LedgerRules(
        require_declared_oracle=config.require_declared_oracle,
        reject_evidence_predating_claim=config.reject_evidence_predating_claim,
        source_primary=config.sources_primary,
        source_defaults=config.sources_defaults,
        judge_oracle=OracleJudge(config.oracle_allow, home=home),
        ran_nothing=ran_nothing,
        require_attested=config.attest_required,
        sandbox_required=config.require_agent_sandbox and config.profile.enforcing,
    )


def _candidates(root: StrPath) -> list[str]:
    explicit = os.environ.get("INFOMARK_CONFIG")
    if explicit:
        return [explicit]
    names = ("infomark.toml", "infomark.yaml", "infomark.yml", "pyproject.toml")
    return [os.path.join(root, n) for n in names]


def _cached(root: StrPath, cache: str) -> Config | None:
    """The cached configuration when the first configuration file there still has the
    cached content (no TOML parse: the hook's start-up stays lean)."""
    try:
        cached = jsonc.loads(read_regular(cache).decode("utf-8"))
    except (OSError, ValueError):
        return None
    for path in _candidates(root):
        try:
            raw = read_regular(path)
        except FileNotFoundError:
            continue
        except OSError:
            return None  # there but unreadable: find_config_file says why
        if os.path.basename(path) == "pyproject.toml" and b"infomark" not in raw:
            return None  # no [tool.infomark]: the defaults (find_config_file decides)
        try:
            if (
                cached.get("path") == str(path)
                and cached.get("sha256") == sha256(raw).hexdigest()
                and cached.get("format") == CACHE_FORMAT
            ):
                return Config.from_dict(cached["config"], source=str(path))
        except (KeyError, TypeError, AttributeError, ValueError):
            return None
        return None
    return None


def find_config_file(root: StrPath) -> tuple[str, dict[str, Any], str] | None:
    """``infomark.toml``, then ``infomark.yaml`` (a seed-style ``runtime_config:`` block),
    then ``[tool.infomark]`` in ``pyproject.toml``; None if none exists.

    Returns ``(path, document, sha256 of the file)``.
    """
    explicit = os.environ.get("INFOMARK_CONFIG")
    for path in _candidates(root):
        try:
            raw = read_regular(path)
        except FileNotFoundError as exc:
            if explicit:
                raise ConfigError(f"INFOMARK_CONFIG names {path}, which cannot be read") from exc
            continue
        except OSError as exc:
            # There but unreadable (no permission, a directory, a FIFO): never the defaults
            # instead, or an agent that can chmod the file lifts the operator's profile.
            why = exc.strerror or type(exc).__name__
            raise ConfigError(
                f"{path}: cannot be read ({why}); make it a readable file, or remove it "
                "to use the defaults"
            ) from exc
        if os.path.splitext(path)[1] in (".yaml", ".yml"):
            from infomark.gates.config_yaml import read_runtime_config

            text = raw.decode("utf-8", "replace")
            doc = read_runtime_config(text, source=str(path))
            return path, doc, sha256(raw).hexdigest()
        import tomllib  # only when a file exists: keeps the hook's start-up lean

        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
        if os.path.basename(path) == "pyproject.toml":
            section = doc.get("tool", {}).get("infomark")
            if section is None:
                continue
            if not isinstance(section, dict):
                raise ConfigError(f"{path}: [tool.infomark] must be a table")
            doc = section
        return path, doc, sha256(raw).hexdigest()
    return None


def load_config(root: StrPath, home: StrPath | None = None) -> Config:
    """Load, validate (cached by content hash) and return the configuration."""
    if home is not None:
        hit = _cached(root, os.path.join(home, "config.cache.json"))
        if hit is not None:
            return hit
    found = find_config_file(root)
    if found is None:
        return Config()
    path, doc, sha = found
    cache = os.path.join(home, "config.cache.json") if home is not None else None
    if cache is not None:
        try:
            cached = jsonc.loads(read_regular(cache).decode("utf-8"))
            if (
                cached.get("sha256") == sha
                and cached.get("path") == str(path)
                and cached.get("format") == CACHE_FORMAT
            ):
                return Config.from_dict(cached["config"], source=str(path))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no cache or a stale one: validate below
    from infomark.gates.config_model import validate_config

    validated = validate_config(doc, source=str(path))
    if cache is not None and os.path.isdir(os.path.dirname(cache) or "."):
        tmp = os.path.splitext(cache)[0] + f".{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(
                    jsonc.dumps(
                        {
                            "format": CACHE_FORMAT,
                            "sha256": sha,
                            "path": str(path),
                            "config": validated,
                        }
                    )
                )
            os.replace(tmp, cache)
        except OSError:
            with suppress(OSError):
                os.unlink(tmp)
    return Config.from_dict(validated, source=str(path))
