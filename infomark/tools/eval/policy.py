"""Policies under evaluation: an infomark configuration plus an optional ``[eval]`` table.

A policy is named by a built-in name (``observe``, ``default``, ``noise``: the files in
``infomark/tools/eval/policies/``) or by the path of a TOML file with the same keys as
``infomark.toml``. ``[eval]`` holds what only the harness reads: ``description`` and
``finish`` (``"gate"``, the default: the finish gate decides; ``"record"``: every finish is
journaled and allowed, the baseline without a finish gate) and ``protocol`` (``false``: the
agent's system message holds no claim-ledger protocol; by default the runner's rule, which
shows it in every profile but verify).
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infomark.gates.config import Config
from infomark.kernel.errors import ConfigError, UserError

__all__ = ["BUILTIN_POLICIES", "Policy", "load_policy"]

_DIR = Path(__file__).with_name("policies")
BUILTIN_POLICIES = tuple(sorted(p.stem for p in _DIR.glob("*.toml")))
_EVAL_KEYS = {"description", "finish", "protocol"}


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    config: Config
    finish_gate: bool
    description: str
    source: str
    text: str  # the TOML as written (what activation installs)
    protocol: bool | None = None  # [eval] protocol; None: the runner's rule for the profile

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "finish": "gate" if self.finish_gate else "record",
            "protocol": self.protocol,
            "source": self.source,
            "digest": self.digest,
        }


def load_policy(spec: str) -> Policy:
    """A built-in policy by name, or a policy file by path."""
    if spec in BUILTIN_POLICIES:
        path = _DIR / f"{spec}.toml"
        name = spec
    else:
        path = Path(spec)
        name = path.stem
        if not path.is_file():
            raise UserError(
                f"--policy {spec}: not a built-in policy ({', '.join(BUILTIN_POLICIES)}) "
                "and not a file"
            )
    try:
        text = path.read_text("utf-8")
        doc = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"policy {path}: cannot be read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"policy {path}: not valid TOML: {exc}") from exc
    ev = doc.pop("eval", {})
    if not isinstance(ev, dict) or set(ev) - _EVAL_KEYS:
        extra = sorted(set(ev) - _EVAL_KEYS) if isinstance(ev, dict) else ["(not a table)"]
        raise ConfigError(
            f"policy {path}: [eval] knows only description, finish and protocol, not "
            f"{', '.join(extra)}"
        )
    finish = ev.get("finish", "gate")
    if finish not in ("gate", "record"):
        raise ConfigError(f'policy {path}: [eval] finish must be "gate" or "record"')
    protocol = ev.get("protocol")
    if protocol is not None and not isinstance(protocol, bool):
        raise ConfigError(f"policy {path}: [eval] protocol must be true or false")
    from infomark.gates.config_model import validate_config

    # The eval's tasks are graded by their own checks, and its agents' runs are the evidence
    # compared across policies: a policy that says nothing of [attest] evaluates on them (the
    # explicit opt-out); `[attest] required = true` in a policy file evaluates attested grading.
    doc.setdefault("attest", {"required": False})
    validated = validate_config(doc, source=str(path))
    return Policy(
        name=name,
        config=Config.from_dict(validated, source=str(path)),
        finish_gate=finish == "gate",
        description=str(ev.get("description", "")),
        source=str(path),
        text=text,
        protocol=protocol,
    )
