"""``dataclass``, ``field``, ``fields``, ``asdict``, ``replace``: the hook path's ``dataclasses``.

To type checkers this module *is* :mod:`dataclasses`, so every call site is checked
against the standard API; at run time the names are the checked stand-ins of
:mod:`infomark.kernel.standins.records` (why: ``standins/README.md``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import asdict, dataclass, field, fields, replace
else:  # one import, no implementation: tests/kernel/test_standins.py holds it to this
    from infomark.kernel.standins.records import asdict, dataclass, field, fields, replace

__all__ = ["asdict", "dataclass", "field", "fields", "replace"]
