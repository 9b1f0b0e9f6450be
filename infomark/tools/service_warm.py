"""Import, once at the service's start, what a hook call would otherwise import on first use.

The hook path imports most of its modules lazily (inside the function that needs them), so
that a command hook, a fresh process for every tool call, pays only for what its call uses.
A long-running service pays that import once, on the first call that needs it: that call is
one of the short ones the pool runs on the event loop (:mod:`~infomark.tools.service_pool`),
so it holds every other session for the import's length, and it overruns the lease, which
sends its session's calls to the threads for ``THREADED_FOR`` seconds. Measured with
``python -m bench.http_concurrent --forward``: the first PostToolUse on the loop took 38 ms
(eighteen modules of the policy runtime imported), and one of the three clients' sessions
then ran in the threads for the whole measurement.

So the service imports, before it accepts a connection, every module of the packages a hook
call runs in: the kernel, the ledger, the gates, the facade, the hook handlers and the two
modules of the tools they call (0.1 s,
about 15 MiB, once). Whole packages, not a list of names: a lazy import added to the hook
path later is covered without anyone remembering this module. The PostgreSQL store is left
out when the ledger is SQLite (it would load ``psycopg``, which such a service never uses,
and with PostgreSQL nothing runs on the loop). ``tests/tools/test_service_warm.py`` starts a
service in a fresh interpreter, drives short hook calls of every kind through it, and checks
that none imports a module of ours.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["HOOK_PACKAGES", "warm"]

HOOK_PACKAGES = (
    "infomark.kernel",
    "infomark.ledger",
    "infomark.gates",
    "infomark.gatekeeper",
    "infomark.tools.hooks",
    "infomark.tools.attest_lazy",  # the service's opener gives each session its attester
    "infomark.tools.sandbox",  # the hook asks whether bubblewrap runs here (hooks.sandboxed)
)
"""The packages (and modules) whose code a hook call runs, imported whole by :func:`warm`;
``tests/tools/test_service_warm.py`` finds any that is missing."""

_POSTGRES = ("infomark.ledger.store.pg",)  # pg, pg_blobs, pg_schema: psycopg


def warm(store: str = "sqlite") -> list[str]:
    """Import every module of :data:`HOOK_PACKAGES` (``store``: ``"sqlite"`` leaves the
    PostgreSQL store out); returns the names imported, in order."""
    names: list[str] = []
    for name in HOOK_PACKAGES:
        module = importlib.import_module(name)
        names.append(name)
        for sub in _submodules(module):
            if store == "sqlite" and sub.startswith(_POSTGRES):
                continue
            importlib.import_module(sub)
            names.append(sub)
    return names


def _submodules(module: ModuleType) -> list[str]:
    path = getattr(module, "__path__", None)
    if path is None:  # a plain module, not a package
        return []
    return [info.name for info in pkgutil.walk_packages(path, module.__name__ + ".")]
