"""Policy state as deltas: what ``policy_updated`` carries, and how the reducer applies it.

``policy_updated`` carries ``set`` (whole top-level values; None removes) and ``patch``,
a list of operations on nested values, so a call journals what changed, not a copy:

* ``["s", path, value]``       set the value at path (a list of dict keys);
* ``["d", path]``              delete the key at path;
* ``["a", path, drop, items]`` the list at path becomes ``list[drop:] + items`` (a capped log);
* ``["m", path, {key: value}]`` set several keys of the dict at path (one op, not one per key);
* ``["c", path, drop, i]``     as ``"a"``, with the items of this patch's op ``i`` (an ``"a"``
  op): the same entry appended to two logs travels once.

:func:`policy_delta` computes a whole event's ``set`` and ``patch`` (the policy runtime),
:func:`policy_patch` the operations for one value, :func:`apply_patch` applies a patch (the
reducer, live and in a replay). ``"m"`` and ``"c"`` are newer than the other three;
journals written before them hold only ``"s"``, ``"d"`` and ``"a"``, which replay as they
always did. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["apply_patch", "policy_delta", "policy_patch"]

_SHARE_MIN = 40  # items shorter than this (as repr) are cheaper to repeat than to reference


def apply_patch(policy: dict[str, Any], ops: list[Any]) -> None:
    """Apply the operations of one ``policy_updated`` to ``policy`` (never in place below)."""
    for i, op in enumerate(ops):
        try:
            _apply_op(policy, ops, i, op)
        except IndexError as exc:
            raise ValueError(f"policy patch op {i} is short: {op!r}") from exc


def _apply_op(policy: dict[str, Any], ops: list[Any], i: int, op: list[Any]) -> None:
    kind, path = op[0], [str(k) for k in op[1]]
    if not path:
        raise ValueError("policy patch with an empty path")
    node = policy
    for k in path if kind == "m" else path[:-1]:
        child = node.get(k)  # copy on the way down: live payloads are never mutated in place
        node[k] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    if kind == "m":
        node.update(dict(op[2]))
    elif kind == "s":
        node[path[-1]] = op[2]
    elif kind == "d":
        node.pop(path[-1], None)
    elif kind in ("a", "c"):
        items = op[3]
        if kind == "c":
            j = int(op[3])
            src = ops[j] if 0 <= j < i else None
            if src is None or src[0] != "a":
                raise ValueError(f"policy patch op {i} ('c') names op {j}, not an earlier 'a'")
            items = src[3]
        old = node.get(path[-1])
        kept = list(old) if isinstance(old, list) else []
        node[path[-1]] = kept[int(op[2]) :] + list(items)
    else:
        raise ValueError(f"unknown policy patch operation {kind!r}")


def policy_patch(old: Any, new: Any, path: list[str] | None = None) -> list[list[Any]]:
    """The operations that turn ``old`` into ``new`` (JSON values), smallest first."""
    path = path or []
    ops: list[list[Any]] = []
    if isinstance(old, dict) and isinstance(new, dict) and path:
        sets: dict[str, Any] = {}
        for k, v in new.items():
            if k not in old:
                sets[k] = v
            elif old[k] != v or type(old[k]) is not type(v):
                sub = policy_patch(old[k], v, [*path, k])
                if len(sub) == 1 and sub[0][0] == "s" and len(sub[0][1]) == len(path) + 1:
                    sets[k] = v
                else:
                    ops.extend(sub)
        if len(sets) > 1:
            ops.insert(0, ["m", path, sets])
        elif sets:
            ((k, v),) = sets.items()
            ops.insert(0, ["s", [*path, k], v])
        ops.extend(["d", [*path, k]] for k in old if k not in new)
        return ops
    if isinstance(old, list) and isinstance(new, list) and path:
        for drop in range(len(old) + 1):
            kept = len(old) - drop
            if kept <= len(new) and old[drop:] == new[:kept] and len(new) - kept < len(new):
                return [["a", path, drop, new[kept:]]]
    return [["s", path, new]]


def policy_delta(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> tuple[dict[str, Any], list[list[Any]]]:
    """``(set, patch)`` turning the top-level values ``old`` into ``new``.

    Dicts on both sides are patched; anything else is set whole (None: a key ``new``
    lacks, which the reducer removes). An ``"a"`` op whose items
    repeat an earlier op's becomes a ``"c"`` op pointing at it.
    """
    whole: dict[str, Any] = {}
    patch: list[list[Any]] = []
    for k, v in new.items():
        was = old.get(k)
        if v == was:
            continue
        if isinstance(was, dict) and isinstance(v, dict):
            patch.extend(policy_patch(was, v, [k]))  # only what changed inside
        else:
            whole[k] = v
    whole.update((k, None) for k in old if k not in new and old[k] is not None)
    seen: list[tuple[int, list[Any]]] = []
    for i, op in enumerate(patch):
        if op[0] != "a" or not op[3] or len(repr(op[3])) < _SHARE_MIN:
            continue
        for j, items in seen:
            if items == op[3]:
                patch[i] = ["c", op[1], op[2], j]
                break
        else:
            seen.append((i, op[3]))
    return whole, patch
