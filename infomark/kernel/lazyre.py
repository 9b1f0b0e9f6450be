"""``lazy_compile``: ``re.compile`` deferred to the pattern's first use.

To type checkers this module's name *is* :func:`re.compile`; at run time it is the
checked stand-in of :mod:`infomark.kernel.standins.lazyre` (why: ``standins/README.md``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from re import compile as lazy_compile
else:  # one import, no implementation: tests/kernel/test_standins.py holds it to this
    from infomark.kernel.standins.lazyre import lazy_compile

__all__ = ["lazy_compile"]
