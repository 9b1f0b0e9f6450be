"""Policies by name: the defaults, ones registered in code, entry points, ``module:Class``.

A policy is any object with a ``name`` and methods named after the phases it
handles (``before_model_call``, ``after_model_response``, ``after_tool_batch``,
``before_finalize``, and infomark's ``after_decision`` and ``host_report``),
each ``(ctx: TurnContext) -> HookResult | None``. Optional class attributes
``severity`` (0–10), ``threshold`` and ``expires_after`` are its pack defaults.

Third-party packages publish policies under the entry point group
``infomark.policies`` (``name = "pkg.module:Class"``) and are enabled by naming
them in ``adaptive_packs``; ``policies = ["pkg.module:Class"]`` in the
configuration loads a class directly. Entry points are only looked up when a
name is not known otherwise, so the hook's start-up stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable

from infomark.gates.policies.context import ALL_PHASES, PackSettings
from infomark.gates.policies.defaults import DEFAULT_POLICIES
from infomark.gates.policies.settings import PolicySettings
from infomark.kernel.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, TypeAlias, runtime_checkable

    @runtime_checkable
    class Policy(Protocol):
        """The one required attribute; phase methods are looked up by name."""

        name: str


__all__ = [
    "DEFAULT_PACKS",
    "ENTRY_POINT_GROUP",
    "Policy",
    "available_policies",
    "default_settings",
    "load_policy",
    "register_policy",
    "resolve_policies",
]

ENTRY_POINT_GROUP = "infomark.policies"
DEFAULT_PACKS: tuple[str, ...] = tuple(p.name for p in DEFAULT_POLICIES)

Factory: TypeAlias = "Callable[[], Any]"


def _module_attribute(name: str) -> object:
    """PEP 562: ``typing`` loads only when ``Policy`` is used (hook start-up)."""
    if name != "Policy":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from typing import Protocol, runtime_checkable

    @runtime_checkable
    class Policy(Protocol):
        """The one required attribute; phase methods are looked up by name."""

        name: str

    Policy.__module__, Policy.__qualname__ = __name__, "Policy"
    globals()["Policy"] = Policy
    return Policy


if not TYPE_CHECKING:  # a binding only; the function above is checked
    __getattr__ = _module_attribute


_REGISTERED: dict[str, Factory] = {p.name: p for p in DEFAULT_POLICIES}


def register_policy(name: str, factory: Factory) -> None:
    """Make a policy available by name (a class, or any zero-argument factory)."""
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"policy name {name!r}: use letters, digits, '_' or '-'")
    _REGISTERED[name] = factory


def available_policies() -> list[str]:
    """Names known without importing third-party code (defaults and registered ones)."""
    return sorted(_REGISTERED)


def _check(policy: Any, origin: str) -> Any:
    name = getattr(policy, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{origin}: a policy needs a non-empty string attribute `name`")
    if not any(callable(getattr(policy, p, None)) for p in ALL_PHASES):
        raise ConfigError(
            f"{origin}: policy {name!r} has no phase method; define one of {', '.join(ALL_PHASES)}"
        )
    return policy


def _load_object(spec: str) -> Any:
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"policies: {spec!r} is not of the form 'package.module:Class'")
    try:
        import importlib  # a `module:Class` named in the configuration: only then

        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"policies: cannot load {spec!r}: {exc}") from exc
    instance = obj() if isinstance(obj, type) else obj
    return _check(instance, spec)


def _entry_point(name: str) -> Any | None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must name itself, not crash the hook
                raise ConfigError(
                    f"entry point {ENTRY_POINT_GROUP}:{name} failed to load: {exc}"
                ) from exc
            return _check(obj() if isinstance(obj, type) else obj, f"entry point {name}")
    return None


def load_policy(name: str) -> Any:
    """An instance of the policy called ``name`` (registered, else an entry point)."""
    factory = _REGISTERED.get(name)
    if factory is not None:
        return _check(factory(), name)
    found = _entry_point(name)
    if found is None:
        raise ConfigError(
            f"adaptive_packs: unknown policy {name!r}; known: {', '.join(available_policies())} "
            f"(or publish it under the entry point group {ENTRY_POINT_GROUP!r})"
        )
    return found


def default_settings(policy: Any) -> PackSettings:
    """A policy's own pack defaults (class attributes), before overrides."""
    return PackSettings(
        threshold=getattr(policy, "threshold", None),
        severity=int(getattr(policy, "severity", 5)),
        expires_after=int(getattr(policy, "expires_after", 2)),
    )


def resolve_policies(settings: PolicySettings, extra: list[Any] | None = None) -> list[Any]:
    """The enabled policies, in order: named packs, then ``policies = [...]``, then ``extra``."""
    names = settings.adaptive_packs if settings.adaptive_packs is not None else DEFAULT_PACKS
    out: list[Any] = [load_policy(n) for n in names]
    out += [_load_object(spec) for spec in settings.custom]
    out += [_check(p, "PolicyRuntime(policies=…)") for p in extra or []]
    seen: set[str] = set()
    enabled = []
    for p in out:
        if p.name in seen:
            raise ConfigError(f"policy {p.name!r} is enabled twice; names must be unique")
        seen.add(p.name)
        if settings.pack_settings(p.name, default_settings(p)).enabled:
            enabled.append(p)
    return enabled
