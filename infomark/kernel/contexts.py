"""``contextmanager`` and ``suppress`` without importing :mod:`contextlib`.

:mod:`contextlib` builds fourteen ABC-based classes at import, a noticeable share of a
hook process's start-up; the journal needs only these two. Same semantics as the
standard ones (the generator protocol of ``contextlib.contextmanager``, including
exceptions thrown into the generator); to type checkers this *is* :mod:`contextlib`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import contextmanager, suppress
else:
    from functools import wraps

    class _GeneratorContextManager:
        __slots__ = ("gen",)

        def __init__(self, gen):
            self.gen = gen

        def __enter__(self):
            try:
                return next(self.gen)
            except StopIteration:
                raise RuntimeError("generator didn't yield") from None

        def __exit__(self, typ, value, traceback):
            if typ is None:
                try:
                    next(self.gen)
                except StopIteration:
                    return False
                raise RuntimeError("generator didn't stop")
            if value is None:
                value = typ()
            try:
                self.gen.throw(value)
            except StopIteration as exc:
                return exc is not value
            except RuntimeError as exc:
                if exc is value or (isinstance(value, StopIteration) and exc.__cause__ is value):
                    value.__traceback__ = traceback
                    return False
                raise
            except BaseException as exc:
                if exc is not value:
                    raise
                exc.__traceback__ = traceback
                return False
            raise RuntimeError("generator didn't stop after throw()")

    def contextmanager(func):
        @wraps(func)
        def helper(*args, **kwargs):
            return _GeneratorContextManager(func(*args, **kwargs))

        return helper

    class suppress:
        __slots__ = ("_exceptions",)

        def __init__(self, *exceptions):
            self._exceptions = exceptions

        def __enter__(self):
            return None

        def __exit__(self, typ, value, traceback):
            return typ is not None and issubclass(typ, self._exceptions)


__all__ = ["contextmanager", "suppress"]
