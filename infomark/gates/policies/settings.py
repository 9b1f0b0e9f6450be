"""The policy section of the configuration, checked with the standard library.

``Config.policies`` holds ``adaptive_packs`` (None = the default packs),
``pack_overrides.<name>.{threshold, severity, expires_after, enabled}``,
``max_active_packs`` (1–3), ``pack_budget_chars``, ``triggers`` and
``policies`` (extra policy classes as ``"pkg.module:Class"``). The pydantic
model validates the file once; this module re-checks the values cheaply
because a :class:`~infomark.gates.config.Config` may also be built in code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infomark.gates.bounds import (
    EXPIRES_AFTER,
    MAX_ACTIVE_PACKS,
    PACK_BUDGET_CHARS,
    PACK_OVERRIDE_KEYS,
    POLICY_KEYS,
    SEVERITY,
    THRESHOLD_MAX,
)
from infomark.gates.config import Config
from infomark.gates.policies.context import PackSettings
from infomark.gates.policies.triggers import TriggerSpec, parse_triggers
from infomark.kernel.errors import ConfigError

__all__ = ["PolicySettings", "validate_policy_config"]

_KEYS = POLICY_KEYS
_OVERRIDE_KEYS = PACK_OVERRIDE_KEYS


def _int(value: Any, where: str, bounds: tuple[int, int]) -> int:
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"{where}: expected a whole number from {lo} to {hi}, got {value!r}")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ConfigError(f'{where}: expected a list of names, e.g. ["repeated_failures"]')
    out = []
    for v in value:
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{where}: {v!r} is not a name")
        out.append(v.strip())
    return tuple(dict.fromkeys(out))


def _overrides(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, Mapping):
        raise ConfigError("policies.pack_overrides: expected a table of pack name -> settings")
    out: dict[str, dict[str, Any]] = {}
    for name, raw in value.items():
        where = f"pack_overrides.{name}"
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: expected a table with {', '.join(_OVERRIDE_KEYS)}")
        bad = set(raw) - set(_OVERRIDE_KEYS)
        if bad:
            raise ConfigError(
                f"{where}: unknown key(s) {sorted(bad)}; use {', '.join(_OVERRIDE_KEYS)}"
            )
        o: dict[str, Any] = {}
        if raw.get("threshold") is not None:
            t = raw["threshold"]
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= THRESHOLD_MAX:
                raise ConfigError(f"{where}.threshold: expected a number above 0, got {t!r}")
            o["threshold"] = t
        if raw.get("severity") is not None:
            o["severity"] = _int(raw["severity"], f"{where}.severity", SEVERITY)
        if raw.get("expires_after") is not None:
            o["expires_after"] = _int(raw["expires_after"], f"{where}.expires_after", EXPIRES_AFTER)
        if raw.get("enabled") is not None:
            if not isinstance(raw["enabled"], bool):
                raise ConfigError(f"{where}.enabled: expected true or false")
            o["enabled"] = raw["enabled"]
        out[str(name)] = o
    return out


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """The checked policy section."""

    adaptive_packs: tuple[str, ...] | None = None
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_active_packs: int = 3
    pack_budget_chars: int = 600
    triggers: tuple[TriggerSpec, ...] = ()
    custom: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> PolicySettings:
        d = dict(data or {})
        unknown = set(d) - set(_KEYS)
        if unknown:
            raise ConfigError(f"policies: unknown key(s) {sorted(unknown)}; use {', '.join(_KEYS)}")
        packs = d.get("adaptive_packs")
        return cls(
            adaptive_packs=None if packs is None else _names(packs, "adaptive_packs"),
            overrides=_overrides(d.get("pack_overrides") or {}),
            max_active_packs=_int(
                d.get("max_active_packs", 3), "max_active_packs", MAX_ACTIVE_PACKS
            ),
            pack_budget_chars=_int(
                d.get("pack_budget_chars", 600), "pack_budget_chars", PACK_BUDGET_CHARS
            ),
            triggers=parse_triggers(d.get("triggers") or []),
            custom=_names(d.get("policies") or [], "policies"),
        )

    @classmethod
    def from_config(cls, config: Config) -> PolicySettings:
        return cls.from_mapping(config.policies)

    def pack_settings(self, name: str, defaults: PackSettings) -> PackSettings:
        """A policy's defaults with its ``pack_overrides`` entry applied."""
        o = self.overrides.get(name)
        if not o:
            return defaults
        return PackSettings(
            threshold=o.get("threshold", defaults.threshold),
            severity=o.get("severity", defaults.severity),
            expires_after=o.get("expires_after", defaults.expires_after),
            enabled=o.get("enabled", defaults.enabled),
        )


def validate_policy_config(policies: Mapping[str, Any]) -> None:
    """Raise ConfigError for a bad policy section (for ``validate_config`` to call)."""
    PolicySettings.from_mapping(policies)
