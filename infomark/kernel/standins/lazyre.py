"""``lazy_compile``: ``re.compile`` deferred to the pattern's first use.

Every hook call is a fresh process; a module-level pattern that this call never uses
should not cost its compile (~0.1 ms each) at start-up. Code imports it from
:mod:`infomark.kernel.lazyre`, which to type checkers *is* :func:`re.compile`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the hook path imports re only on a pattern's first use
    from re import Pattern
    from typing import Any


class lazy_compile:  # named as the function it stands in for
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._args: tuple[Any, int] = (pattern, flags)  # re.compile's own overloads decide
        self._compiled: Pattern[Any] | None = None

    def __getattr__(self, name: str) -> object:
        compiled = self._compiled
        if compiled is None:
            import re

            compiled = self._compiled = re.compile(*self._args)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._args[0]!r})"


__all__ = ["lazy_compile"]
