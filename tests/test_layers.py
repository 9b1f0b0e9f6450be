"""The layering rule, enforced: kernel ← ledger ← gates ← facade ← tools ← cli.

An ``ast`` scan of every module of the package, counting every import: top-level, lazy
(inside a function) and type-only (under ``TYPE_CHECKING``). A module may import its own
layer and the layers below it, never above; and no two modules may import each other,
directly or through others (no cycles, whatever the layer). The rule is written once, in
docs/architecture.md; this test is its enforcement.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "infomark"

#: The layers, lowest first. A module belongs to the first prefix it matches.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kernel", ("infomark.kernel", "infomark._version")),
    ("ledger", ("infomark.ledger",)),
    ("gates", ("infomark.gates",)),
    ("facade", ("infomark.gatekeeper", "infomark.wrapping", "infomark.async_gatekeeper")),
    ("tools", ("infomark.tools", "infomark.client")),
    ("cli", ("infomark.cli", "infomark.__main__")),
    ("api", ("infomark",)),  # the package root: lazy re-exports of everything
)


def layer_of(module: str) -> int:
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                return index
    raise AssertionError(f"{module} belongs to no layer; add it to LAYERS")


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for every infomark import in ``path``, at any depth."""
    source = path.read_text(encoding="utf-8")
    return imports_in(source, module_name(path), path.name == "__init__.py", known)


def imports_in(
    source: str, module: str, is_package: bool, known: set[str]
) -> Iterator[tuple[str, int]]:
    """The infomark imports of ``source`` read as module ``module``: top, lazy and type-only."""
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node)
            # `from pkg import mod` imports the submodule when there is one
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                targets = [arg.value]
        for target in targets:
            if target == "infomark" or target.startswith("infomark."):
                yield _known_prefix(target, known), node.lineno


def _is_dynamic_import(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__") and bool(node.args)


def _known_prefix(target: str, known: set[str]) -> str:
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def graph() -> dict[str, dict[str, int]]:
    files = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(f) for f in files}
    edges: dict[str, dict[str, int]] = {}
    for f in files:
        src = module_name(f)
        out = edges.setdefault(src, {})
        for dst, line in imports_of(f, known):
            if dst != src:
                out.setdefault(dst, line)
    return edges


def _package_of(module: str) -> str:
    return module.rsplit(".", 1)[0] if "." in module else module


def test_no_upward_import() -> None:
    bad = []
    for src, targets in graph().items():
        for dst, line in targets.items():
            if layer_of(dst) > layer_of(src):
                bad.append(
                    f"{src}:{line} imports {dst} "
                    f"({LAYERS[layer_of(src)][0]} → {LAYERS[layer_of(dst)][0]})"
                )
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, {})))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle() -> None:
    edges = graph()
    # a package's __init__ re-exporting its own submodules is not a cycle of logic
    pruned = {
        src: {
            dst: line
            for dst, line in targets.items()
            if not (
                PACKAGE.joinpath(*src.split(".")[1:], "__init__.py").exists()
                and _package_of(dst) == src
            )
        }
        for src, targets in edges.items()
    }
    cycles = _cycles(pruned)
    assert not cycles, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in cycles)


def test_every_module_has_a_layer() -> None:
    for module in graph():
        layer_of(module)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from infomark.cli.app import main\n", ["infomark.cli.app"]),
        ("def f():\n    from infomark.tools import executor\n", ["infomark.tools.executor"]),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import infomark.cli\n",
            ["infomark.cli"],
        ),
        ("import importlib\nimportlib.import_module('infomark.cli.app')\n", ["infomark.cli.app"]),
    ],
)
def test_the_scan_sees_every_kind_of_import(source: str, expected: list[str]) -> None:
    known = {module_name(p) for p in PACKAGE.rglob("*.py")}
    # read as a kernel module, so each import found would be an upward edge
    found = [dst for dst, _ in imports_in(source, "infomark.kernel.errors", False, known)]
    assert found == expected
    assert all(layer_of(d) > layer_of("infomark.kernel.errors") for d in found)
