"""The seed's YAML ``runtime_config`` block, read without a YAML library.

Agents configured the toc way keep a block like this in their agent file::

    runtime_config:
      adaptive_packs:
        - repeated_failures
        - evidence_before_done
      pack_overrides:
        evidence_before_done:
          min_failures: 1
          severity: medium

``infomark.yaml`` (or ``.yml``) holding such a block is accepted. Only the subset a
config needs is read (block mappings, block and flow lists, plain or quoted
scalars); anything else is a :class:`ConfigError` naming the line. Nothing is ever
evaluated or turned into an object: values stay strings, integers and booleans.
"""

from __future__ import annotations

import re
from typing import Any

from infomark.kernel.errors import ConfigError

__all__ = ["read_runtime_config"]

_SEVERITY = {"low": 2, "medium": 5, "high": 8, "critical": 10}
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")


def _scalar(text: str) -> Any:
    t = text.strip()
    if t.startswith("{"):
        raise ValueError("flow mappings ({…}) are not supported; use an indented block")
    if t.startswith(("'", '"')):
        if len(t) < 2 or t[-1] != t[0]:
            raise ValueError(f"unclosed quote in {t!r}")
        return t[1:-1]
    if t.startswith("["):
        if not t.endswith("]"):
            raise ValueError(f"unclosed flow list in {t!r}")
        inner = t[1:-1].strip()
        return [_scalar(x) for x in inner.split(",")] if inner else []
    low = t.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("null", "~", ""):
        return None
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?\d+\.\d+", t):
        return float(t)
    return t


def _parse(lines: list[tuple[int, int, str]], i: int, indent: int, src: str) -> tuple[Any, int]:
    """Parse the node whose lines start at ``i`` with exactly ``indent`` spaces."""
    if i >= len(lines):
        return None, i
    text = lines[i][2]
    if text.startswith("- ") or text == "-":
        items: list[Any] = []
        while i < len(lines) and lines[i][1] == indent and lines[i][2].startswith("-"):
            lineno, _, item = lines[i]
            body = item[1:].strip()
            if not body or _KEY.match(body) or body.startswith("{"):
                raise ConfigError(f"{src}: line {lineno}: only plain list items are supported")
            try:
                items.append(_scalar(body))
            except ValueError as exc:
                raise ConfigError(f"{src}: line {lineno}: {exc}") from exc
            i += 1
        return items, i
    mapping: dict[str, Any] = {}
    while i < len(lines) and lines[i][1] == indent:
        lineno, _, text = lines[i]
        m = _KEY.match(text)
        if not m:
            raise ConfigError(f"{src}: line {lineno}: expected `key: value`, found {text!r}")
        key, rest = m.group(1), (m.group(2) or "").split(" #", 1)[0].strip()
        i += 1
        if rest:
            try:
                mapping[key] = _scalar(rest)
            except ValueError as exc:
                raise ConfigError(f"{src}: line {lineno}: {exc}") from exc
        elif i < len(lines) and lines[i][1] > indent:
            mapping[key], i = _parse(lines, i, lines[i][1], src)
        else:
            mapping[key] = None
    if i < len(lines) and lines[i][1] > indent:
        raise ConfigError(f"{src}: line {lines[i][0]}: unexpected indentation")
    return mapping, i


def _normalise(block: dict[str, Any]) -> dict[str, Any]:
    out = dict(block)
    overrides = out.get("pack_overrides")
    if isinstance(overrides, dict):
        fixed: dict[str, Any] = {}
        for name, raw in overrides.items():
            o = dict(raw) if isinstance(raw, dict) else raw
            if isinstance(o, dict):
                for key in [k for k in o if k.startswith(("min_", "max_"))]:
                    o.setdefault("threshold", o.pop(key))  # the seed's min_failures: N
                sev = o.get("severity")
                if isinstance(sev, str) and sev.lower() in _SEVERITY:
                    o["severity"] = _SEVERITY[sev.lower()]
            fixed[name] = o
        out["pack_overrides"] = fixed
    return out


def read_runtime_config(text: str, *, source: str) -> dict[str, Any]:
    """The ``runtime_config`` mapping of a YAML agent file, as infomark config keys."""
    lines: list[tuple[int, int, str]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ConfigError(f"{source}: line {n}: indent with spaces, not tabs")
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        lines.append((n, len(raw) - len(raw.lstrip(" ")), stripped))
    if not lines:
        raise ConfigError(f"{source}: empty; expected a `runtime_config:` block")
    doc, end = _parse(lines, 0, lines[0][1], source)
    if end < len(lines):
        raise ConfigError(f"{source}: line {lines[end][0]}: unexpected indentation")
    if not isinstance(doc, dict) or not isinstance(doc.get("runtime_config"), dict):
        raise ConfigError(f"{source}: expected a top-level `runtime_config:` mapping")
    return _normalise(doc["runtime_config"])
