"""The agent file (TOML): who the agent is, which model it talks to, its tools and idle loop.

Every key is optional; ``infomark run --model URL --model-name NAME`` alone is enough.
Unknown keys and wrong types are a :class:`ConfigError` naming the file, the key and the
fix, never a traceback. docs/runner.md documents the format; this module is its parser.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from infomark.gates.policies.settings import PolicySettings
from infomark.kernel.errors import ConfigError

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_TOOLS",
    "AgentSpec",
    "BashSpec",
    "IdleSpec",
    "ModelSpec",
    "load_agent",
    "parse_agent",
]

BUILTIN_TOOLS = (
    "read", "write", "edit", "bash", "grep", "glob", "fetch", "wait", "check", "spawn_agent",
    "send",
)  # fmt: skip
DEFAULT_TOOLS = ("read", "write", "edit", "bash", "grep", "glob", "fetch", "wait", "check")
_ENV_NAME_MAX = 128


@dataclass(frozen=True, slots=True)
class ModelSpec:
    url: str = ""
    name: str = ""
    api_key_env: str | None = None
    timeout_seconds: float = 120.0
    retries: int = 2
    temperature: float | None = 0.0
    max_tokens: int | None = None
    context_window: int | None = None

    def api_key(self) -> str | None:
        """The key from the named environment variable (None if unnamed); never logged."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(
                f"the agent file names api_key_env = {self.api_key_env!r} but that environment "
                "variable is empty or unset; export it, or remove api_key_env for a local model"
            )
        return value


@dataclass(frozen=True, slots=True)
class BashSpec:
    timeout_seconds: float = 120.0
    output_cap_chars: int = 30_000


@dataclass(frozen=True, slots=True)
class IdleSpec:
    persistent: bool = False
    base_seconds: float = 5.0
    cap_seconds: float = 300.0
    hold: int = 1
    watch: tuple[str, ...] = ()
    max_wakes: int = 0  # 0: idle until stopped
    poll_seconds: float = 0.2
    lease_ttl_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str = "agent"
    instructions: str = ""
    tools: tuple[str, ...] = DEFAULT_TOOLS
    max_steps: int = 40
    context_budget: int = 1200
    # the claim-ledger protocol in the system message: None = where the profile reads a
    # ledger (ledger, strict, observe), not in verify, which asks no protocol of the agent
    protocol: bool | None = None
    model: ModelSpec = field(default_factory=ModelSpec)
    bash: BashSpec = field(default_factory=BashSpec)
    idle: IdleSpec = field(default_factory=IdleSpec)
    agents: Mapping[str, Path] = field(default_factory=dict)  # spawn_agent(agent=NAME)
    # [policies]: this agent's packs and triggers, over the project's (a director and its
    # workers may differ); the keys of the project's policy section
    policies: Mapping[str, Any] = field(default_factory=dict)
    source: Path | None = None

    def with_model(self, url: str | None, name: str | None) -> AgentSpec:
        model = self.model
        if url:
            model = replace(model, url=url)
        if name:
            model = replace(model, name=name)
        return replace(self, model=model)


_SECTIONS: dict[str, dict[str, tuple[type | tuple[type, ...], str]]] = {
    "": {
        "name": (str, "a short name"),
        "instructions": (str, "the system prompt text"),
        "tools": (list, f"a list of tool names from {', '.join(BUILTIN_TOOLS)}"),
        "max_steps": (int, "a positive integer (model calls per user turn)"),
        "context_budget": (int, "a positive integer (characters of context view)"),
        "protocol": (bool, "true or false (the claim-ledger protocol in the system message)"),
    },
    "model": {
        "url": (str, "the base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1"),
        "name": (str, "the model name the server expects"),
        "api_key_env": (str, "the NAME of an environment variable holding the key"),
        "timeout_seconds": ((int, float), "a positive number of seconds"),
        "retries": (int, "a number of retries (0 or more)"),
        "temperature": ((int, float), "a number"),
        "max_tokens": (int, "a positive integer"),
        "context_window": (int, "a positive integer (tokens)"),
    },
    "bash": {
        "timeout_seconds": ((int, float), "a positive number of seconds"),
        "output_cap_chars": (int, "a positive integer"),
    },
    "idle": {
        "persistent": (bool, "true or false"),
        "base_seconds": ((int, float), "a positive number of seconds"),
        "cap_seconds": ((int, float), "a positive number of seconds"),
        "hold": (int, "a positive integer (empty wakes per level)"),
        "watch": (list, "a list of glob patterns under the project"),
        "max_wakes": (int, "0 (unbounded) or a positive integer"),
        "poll_seconds": ((int, float), "a positive number of seconds"),
        "lease_ttl_seconds": ((int, float), "a positive number of seconds"),
    },
}


def _check(where: str, table: Mapping[str, Any], section: str) -> dict[str, Any]:
    spec = _SECTIONS[section]
    out: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{section}.{key}" if section else key
        if key not in spec:
            known = ", ".join(sorted(spec))
            raise ConfigError(f"{where}: unknown key {dotted!r}; known keys here: {known}")
        types, want = spec[key]
        if isinstance(value, bool) and bool not in (
            types if isinstance(types, tuple) else (types,)
        ):
            raise ConfigError(f"{where}: {dotted} must be {want}, not a boolean")
        if not isinstance(value, types):
            raise ConfigError(f"{where}: {dotted} must be {want}, got {type(value).__name__}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            low = 0 if key in ("retries", "max_wakes", "temperature") else 1e-9
            if value < low:
                raise ConfigError(f"{where}: {dotted} must be {want}, got {value}")
        out[key] = value
    return out


def parse_agent(
    data: Mapping[str, Any], *, where: str = "agent file", base: Path | None = None
) -> AgentSpec:
    """An :class:`AgentSpec` from parsed TOML; ``base`` resolves ``[agents]`` file paths."""
    top = {k: v for k, v in data.items() if not isinstance(v, dict)}
    sections = {k: v for k, v in data.items() if isinstance(v, dict)}
    for name in sections:
        if name not in ("model", "bash", "idle", "agents", "policies"):
            raise ConfigError(
                f"{where}: unknown table [{name}]; the tables are [model], [bash], [idle], "
                "[agents], [policies]"
            )
    policies = dict(sections.get("policies", {}))
    try:
        PolicySettings.from_mapping(policies)
    except ConfigError as exc:
        raise ConfigError(f"{where}: [policies]: {exc}") from exc
    plain = _check(where, top, "")
    tools = tuple(plain.pop("tools", DEFAULT_TOOLS))
    for t in tools:
        if t not in BUILTIN_TOOLS:
            raise ConfigError(
                f"{where}: tools: unknown tool {t!r}; the built-in tools are "
                + ", ".join(BUILTIN_TOOLS)
            )
    model = _check(where, sections.get("model", {}), "model")
    env = model.get("api_key_env")
    if env is not None and (
        not env or len(env) > _ENV_NAME_MAX or not env.replace("_", "a").isalnum()
    ):
        raise ConfigError(
            f"{where}: model.api_key_env must be the NAME of an environment variable "
            "(letters, digits, _), not the key itself"
        )
    idle = _check(where, sections.get("idle", {}), "idle")
    if "watch" in idle:
        if not all(isinstance(w, str) and w for w in idle["watch"]):
            raise ConfigError(f"{where}: idle.watch must be a list of non-empty glob strings")
        idle["watch"] = tuple(idle["watch"])
    agents: dict[str, Path] = {}
    for name, value in sections.get("agents", {}).items():
        if not isinstance(value, str) or not value:
            raise ConfigError(
                f"{where}: agents.{name} must be the path of an agent file (relative to this one)"
            )
        p = Path(value)
        agents[name] = p if p.is_absolute() or base is None else base / p
    return AgentSpec(
        **plain,
        tools=tools,
        model=ModelSpec(**model),
        bash=BashSpec(**_check(where, sections.get("bash", {}), "bash")),
        idle=IdleSpec(**idle),
        agents=agents,
        policies=policies,
    )


def load_agent(path: Path | str) -> AgentSpec:
    """Read and check an agent file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the agent file {p}: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: the agent file is not UTF-8 text") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc
    return replace(parse_agent(data, where=str(p), base=p.parent), source=p)
