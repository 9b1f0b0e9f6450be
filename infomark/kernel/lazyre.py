"""``lazy_compile``: ``re.compile`` deferred to the pattern's first use.

Every hook call is a fresh process; a module-level pattern that this call never uses
should not cost its compile (~0.1 ms each) at start-up. To type checkers this *is*
:func:`re.compile`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from re import compile as lazy_compile
else:

    class lazy_compile:
        __slots__ = ("_args", "_compiled")

        def __init__(self, pattern, flags=0):
            self._args = (pattern, flags)
            self._compiled = None

        def __getattr__(self, name):
            compiled = self._compiled
            if compiled is None:
                import re

                compiled = self._compiled = re.compile(*self._args)
            return getattr(compiled, name)

        def __repr__(self):
            return f"lazy_compile({self._args[0]!r})"


__all__ = ["lazy_compile"]
