"""Policy state as deltas: what a ``policy_updated`` event's ``patch`` says, and how to write it.

Upper layers keep their state under ``SessionState.policy`` (:mod:`infomark.ledger.state`);
``policy_updated`` carries ``set`` (whole top-level values; None removes) and ``patch``, a
list of operations on nested values, so a call journals what changed, not a copy:

- ``["s", path, value]``: set the value at path (a list of dict keys);
- ``["d", path]``: delete the key at path;
- ``["a", path, drop, items]``: the list at path becomes ``list[drop:] + items`` (a capped log).

:func:`policy_patch` computes the operations (the policy runtime), :func:`apply_patch` applies
one (the reducer, live and in a replay).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["apply_patch", "policy_patch"]


def apply_patch(policy: dict[str, Any], op: list[Any]) -> None:
    """Apply one operation to ``policy`` in place (copying the dicts on its path)."""
    kind, path = op[0], [str(k) for k in op[1]]
    if not path:
        raise ValueError("policy patch with an empty path")
    node = policy
    for k in path[:-1]:  # copy on the way down: live payloads are never mutated in place
        child = node.get(k)
        node[k] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    last = path[-1]
    if kind == "s":
        node[last] = op[2]
    elif kind == "d":
        node.pop(last, None)
    elif kind == "a":
        old = node.get(last)
        node[last] = (list(old) if isinstance(old, list) else [])[int(op[2]) :] + list(op[3])
    else:
        raise ValueError(f"unknown policy patch operation {kind!r}")


def policy_patch(old: Any, new: Any, path: list[str] | None = None) -> list[list[Any]]:
    """The operations that turn ``old`` into ``new`` (JSON values), smallest first."""
    path = path or []
    ops: list[list[Any]] = []
    if isinstance(old, dict) and isinstance(new, dict) and path:
        for k, v in new.items():
            if k not in old:
                ops.append(["s", [*path, k], v])
            elif old[k] != v or type(old[k]) is not type(v):
                ops.extend(policy_patch(old[k], v, [*path, k]))
        ops.extend(["d", [*path, k]] for k in old if k not in new)
        return ops
    if isinstance(old, list) and isinstance(new, list) and path:
        for drop in range(len(old) + 1):
            kept = len(old) - drop
            if kept <= len(new) and old[drop:] == new[:kept] and len(new) - kept < len(new):
                return [["a", path, drop, new[kept:]]]
    return [["s", path, new]]
