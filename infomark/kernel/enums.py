"""``StrEnum``, ``IntEnum``: the hook path's :mod:`enum`.

To type checkers this module *is* :mod:`enum`, so every class and call site is checked
against the standard API; at run time the names are the checked stand-ins of
:mod:`infomark.kernel.standins.enums` (why: ``standins/README.md``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from enum import IntEnum, StrEnum
else:  # one import, no implementation: tests/kernel/test_standins.py holds it to this
    from infomark.kernel.standins.enums import IntEnum, StrEnum

__all__ = ["IntEnum", "StrEnum"]
