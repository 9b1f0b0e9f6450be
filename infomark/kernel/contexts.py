"""``contextmanager`` and ``suppress``: the hook path's :mod:`contextlib`.

To type checkers this module *is* :mod:`contextlib`, so every call site is checked against
the standard API; at run time the names are the checked stand-ins of
:mod:`infomark.kernel.standins.contexts` (why: ``standins/README.md``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import contextmanager, suppress
else:  # one import, no implementation: tests/kernel/test_standins.py holds it to this
    from infomark.kernel.standins.contexts import contextmanager, suppress

__all__ = ["contextmanager", "suppress"]
