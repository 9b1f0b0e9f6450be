"""The layering rule, enforced: kernel ← ledger ← gates ← facade ← tools ← cli.

An ``ast`` scan of every module of the package, counting every import: top-level, lazy
(inside a function) and type-only (under ``TYPE_CHECKING``), and for the layering every
string that names an infomark module (``importlib.import_module(TABLE[name])``, ``python
-m infomark.x``, ``"module:Class"``). A module may import its own layer and the layers
below it, never above; and no two modules may import each other, directly or through
others (no cycles, whatever the layer), a submodule importing its own package's
``__init__`` included; and no submodule takes a name from its own package's ``__init__`` (or
an ancestor's) at all, cycle or not yet. The rule is written once, in
docs/architecture.md; this test is its enforcement.
"""

from __future__ import annotations

import ast
import functools
import re
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


def imports_in(
    source: str | ast.AST, module: str, is_package: bool, known: set[str]
) -> Iterator[tuple[str, int]]:
    """The infomark imports of ``source`` read as module ``module``: top, lazy and type-only."""
    for node in ast.walk(ast.parse(source) if isinstance(source, str) else source):
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


_MODULE_STRING = re.compile(r"(infomark(?:\.\w+)+)(?::[\w.]+)?")


def strings_in(source: str | ast.AST, known: set[str]) -> Iterator[tuple[str, int]]:
    """``(module, line)`` for every string constant that names an infomark module (docstrings
    aside): the table a dynamic import reads, a ``-m`` argument, a ``module:Class``."""
    tree = ast.parse(source) if isinstance(source, str) else source
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = _MODULE_STRING.fullmatch(node.value)
            if found and found.group(1) in known and id(node) not in docstrings:
                yield found.group(1), node.lineno


def _is_dynamic_import(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__") and bool(node.args)


def _known_prefix(target: str, known: set[str]) -> str:
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


@functools.cache
def _scan() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Each module's imports, and the modules its strings name: one parse per file."""
    files = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(f) for f in files}
    imports: dict[str, dict[str, int]] = {}
    strings: dict[str, dict[str, int]] = {}
    for f in files:
        src = module_name(f)
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for out, found in (
            (imports, imports_in(tree, src, f.name == "__init__.py", known)),
            (strings, strings_in(tree, known)),
        ):
            edges = out.setdefault(src, {})
            for dst, line in found:
                if dst != src:
                    edges.setdefault(dst, line)
    return imports, strings


def graph(strings: bool = False) -> dict[str, dict[str, int]]:
    """The import edges ``{module: {imported: line}}``; with ``strings``, also the modules
    named by string constants (dependencies for the layering, not imports for the cycles:
    ``python -m infomark.x`` is another process)."""
    imports, named = _scan()
    if not strings:
        return imports
    return {src: {**named[src], **targets} for src, targets in imports.items()}


def _package_of(module: str) -> str:
    return module.rsplit(".", 1)[0] if "." in module else module


def upward(edges: dict[str, dict[str, int]]) -> list[str]:
    return sorted(
        f"{src}:{line} imports {dst} ({LAYERS[layer_of(src)][0]} → {LAYERS[layer_of(dst)][0]})"
        for src, targets in edges.items()
        for dst, line in targets.items()
        if layer_of(dst) > layer_of(src)
    )


def test_no_upward_import() -> None:
    bad = upward(graph(strings=True))
    assert not bad, "upward imports:\n" + "\n".join(bad)


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


def _reaches(edges: dict[str, dict[str, int]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), {}):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def without_reexports(
    edges: dict[str, dict[str, int]], packages: set[str]
) -> dict[str, dict[str, int]]:
    """``edges`` less a package ``__init__``'s imports of its own submodules (re-exports,
    not a cycle of logic), unless the submodule reaches the ``__init__`` back: a module
    importing its own package's ``__init__`` that re-exports it is a real cycle."""

    def keep(src: str, dst: str) -> bool:
        reexport = src in packages and _package_of(dst) == src
        return not reexport or src in _reaches(edges, dst)

    return {
        src: {dst: line for dst, line in targets.items() if keep(src, dst)}
        for src, targets in edges.items()
    }


def test_no_import_cycle() -> None:
    edges = graph()
    packages = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    cycles = _cycles(without_reexports(edges, packages))
    assert not cycles, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in cycles)


def into_own_package(edges: dict[str, dict[str, int]], packages: set[str]) -> list[str]:
    """Every edge from a submodule to its own package's ``__init__`` (or an ancestor's): a
    name taken from the ``__init__`` runs it first, and whatever it re-exports, mid-import
    of the submodule: a cycle waiting for the ``__init__`` to re-export one more name (the
    cycle test sees it only once it does). Take the name from the submodule defining it."""
    return sorted(
        f"{src}:{line} imports its own package {dst} (take the name from its submodule)"
        for src, targets in edges.items()
        for dst, line in targets.items()
        if dst in packages and src.startswith(dst + ".")
    )


def test_no_submodule_imports_its_own_package_init() -> None:
    packages = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    bad = into_own_package(graph(), packages)
    assert not bad, "imports of a package's own __init__:\n" + "\n".join(bad)


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


def test_a_submodule_importing_its_own_package_init_is_a_cycle() -> None:
    # pkg/__init__ re-exports pkg.mod (pruned: not a cycle of logic) until pkg.mod imports a
    # name from pkg's __init__; then it is one, and the test above must see it.
    known = {"infomark.gates", "infomark.gates.mod", "infomark.gates.other"}
    packages = {"infomark.gates"}

    def edges_of(mod_source: str) -> dict[str, dict[str, int]]:
        sources = {
            "infomark.gates": "from infomark.gates.mod import thing\n",
            "infomark.gates.mod": mod_source,
            "infomark.gates.other": "",
        }
        return {
            name: dict(imports_in(text, name, name in packages, known))
            for name, text in sources.items()
        }

    clean = edges_of("from infomark.gates import other\n")  # the sibling module: fine
    assert _cycles(without_reexports(clean, packages)) == []
    assert into_own_package(clean, packages) == []
    for planted in ("from infomark.gates import thing\n", "from . import thing\n"):
        cycles = _cycles(without_reexports(edges_of(planted), packages))
        assert cycles == [["infomark.gates", "infomark.gates.mod"]], planted
        assert into_own_package(edges_of(planted), packages) == [
            "infomark.gates.mod:1 imports its own package infomark.gates "
            "(take the name from its submodule)"
        ], planted


def test_a_submodule_taking_a_name_from_its_package_init_is_refused_before_any_cycle() -> None:
    # The blind spot of the cycle test: the __init__ re-exports nothing the submodule needs
    # (no cycle yet), but the submodule takes a name from the __init__ (lazy or top-level,
    # from its own package or an ancestor): refused, as it is one re-export from a cycle.
    known = {"infomark.tools", "infomark.tools.hosts", "infomark.tools.hosts.core"}
    packages = {"infomark.tools", "infomark.tools.hosts"}
    sources = {
        "infomark.tools.hosts": "TABLE = {}\n",
        "infomark.tools": "",
        "infomark.tools.hosts.core": (
            "def load():\n    from infomark.tools.hosts import TABLE\n"
            "    from infomark.tools import something\n"
        ),
    }
    edges = {
        name: dict(imports_in(text, name, name in packages, known))
        for name, text in sources.items()
    }
    assert _cycles(without_reexports(edges, packages)) == []  # what the cycle test sees
    assert into_own_package(edges, packages) == [
        "infomark.tools.hosts.core:2 imports its own package infomark.tools.hosts "
        "(take the name from its submodule)",
        "infomark.tools.hosts.core:3 imports its own package infomark.tools "
        "(take the name from its submodule)",
    ]


def test_a_module_named_in_a_string_is_a_dependency() -> None:
    known = {module_name(p) for p in PACKAGE.rglob("*.py")}
    source = (
        '"""Docstrings may name infomark.cli.entry freely."""\n'
        "import importlib\n"
        "TABLE = {'x': 'infomark.cli.entry'}\n"
        "def load(name):\n    return importlib.import_module(TABLE[name])\n"
        "RUN = ['python', '-m', 'infomark.tools.serve']\n"
        "CLASS = 'infomark.gates.policies.defaults:SomePolicy'\n"
    )
    assert list(imports_in(source, "infomark.kernel.errors", False, known)) == []  # unseen
    found = dict(strings_in(source, known))
    assert found == {
        "infomark.cli.entry": 3,
        "infomark.tools.serve": 6,
        "infomark.gates.policies.defaults": 7,
    }
    edges = {"infomark.kernel.errors": found}
    assert len(upward(edges)) == 3
