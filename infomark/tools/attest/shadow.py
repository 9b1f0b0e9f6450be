"""Modules a new file of the agent's would replace in the attested run's interpreter.

``python -m pytest`` puts the copy's root first on ``sys.path``, and pytest's default import
mode puts each test's directory there (the first one above it without an ``__init__.py``).
A new ``pytest.py``, ``infomark_attest_plugin.py`` (the report plugin is loaded by name, with
``-p``), ``dataclasses.py`` or ``_pytest/__init__.py`` in such a directory is imported in place
of the real module before anything of the run can check it, and then writes the report
itself. :func:`shadowed` names the module a new file would stand in for: one of the standard
library, a module built into the interpreter, the test runner's own (:data:`RUNNER_MODULES`),
or a top-level module of an installed package (listed from this interpreter's
``site-packages``). A file inside a package (its directory holds an ``__init__.py``) is not
top-level and shadows nothing.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Collection

from infomark.tools.attest_report import PLUGIN_MODULE

__all__ = ["RUNNER_MODULES", "shadowed"]

#: the modules an attested pytest run imports before the code under test, whatever this
#: interpreter has installed (the oracle may run another one)
RUNNER_MODULES = frozenset(
    {PLUGIN_MODULE, "pytest", "_pytest", "pluggy", "py", "iniconfig", "xdist", "execnet"}
)

_PY = (".py", ".pyw")
_METADATA = (".dist-info", ".egg-info", ".pth", ".egg-link")


@functools.cache
def _installed() -> frozenset[str]:
    """Top-level module names in this interpreter's ``site-packages`` directories."""
    names: set[str] = set()
    for entry in sys.path:
        if not entry.endswith(("site-packages", "dist-packages")):
            continue
        try:
            listed = os.listdir(entry)
        except OSError:
            continue
        for name in listed:
            if name == "__pycache__" or name.startswith(".") or name.endswith(_METADATA):
                continue
            names.add(name.split(".", 1)[0])
    names.discard("")
    return frozenset(names)


@functools.cache
def _names() -> frozenset[str]:
    stdlib = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
    return stdlib | RUNNER_MODULES | _installed()


def _module(rel: str) -> tuple[str, str]:
    """``(module name, directory it is top-level in)`` of the file ``rel``."""
    parts = rel.split("/")
    name = parts[-1]
    if name in ("__init__.py", "__main__.py") and len(parts) > 1:
        return parts[-2], "/".join(parts[:-2])
    for suffix in _PY:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name, "/".join(parts[:-1])


def shadowed(rel: str, packages: Collection[str]) -> str | None:
    """The module the new file ``rel`` would replace where its directory is on ``sys.path``
    (None: none). ``packages``: directories that hold an ``__init__.py`` in the copy (the
    project's root never counts: ``python -m`` puts it on ``sys.path`` regardless)."""
    module, where = _module(rel)
    if where and where in packages:
        return None
    return module if module in _names() else None
