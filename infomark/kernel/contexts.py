"""``contextmanager`` and ``suppress``: the hook path's :mod:`contextlib`; and :class:`Closing`.

To type checkers ``contextmanager`` and ``suppress`` *are* :mod:`contextlib`'s, so every
call site is checked against the standard API; at run time the names are the checked
stand-ins of :mod:`infomark.kernel.standins.contexts` (why: ``standins/README.md``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import contextmanager, suppress
    from typing import Self
else:  # one import, no implementation: tests/kernel/test_standins.py holds it to this
    from infomark.kernel.standins.contexts import contextmanager, suppress

__all__ = ["Closing", "contextmanager", "suppress"]


class Closing:
    """``with thing:`` closes ``thing`` on the way out, whatever happened: the
    ``__enter__``/``__exit__`` pair, written once, of what owns a ``close()`` (the ledger,
    the gatekeeper, the runner, the HTTP client)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError  # pragma: no cover - every subclass closes its own

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
