"""``contextmanager`` and ``suppress`` without importing :mod:`contextlib`.

:mod:`contextlib` builds fourteen ABC-based classes at import, a noticeable share of a
hook process's start-up; the journal needs only these two. Same semantics as the
standard ones (the generator protocol of ``contextlib.contextmanager``, including
exceptions thrown into the generator). Code imports them from
:mod:`infomark.kernel.contexts`, which to type checkers *is* :mod:`contextlib`.
"""

from __future__ import annotations

from functools import wraps

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the hook path never imports typing
    from collections.abc import Callable, Generator
    from types import TracebackType
    from typing import Any


class _GeneratorContextManager:
    __slots__ = ("gen",)

    def __init__(self, gen: Generator[Any, None, None]) -> None:
        self.gen = gen

    def __enter__(self) -> Any:
        try:
            return next(self.gen)
        except StopIteration:
            raise RuntimeError("generator didn't yield") from None  # as contextlib's

    def __exit__(
        self,
        typ: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
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


def contextmanager(
    func: Callable[..., Generator[Any, None, None]],
) -> Callable[..., _GeneratorContextManager]:
    @wraps(func)
    def helper(*args: Any, **kwargs: Any) -> _GeneratorContextManager:
        return _GeneratorContextManager(func(*args, **kwargs))

    return helper


class suppress:  # named as contextlib's
    __slots__ = ("_exceptions",)

    def __init__(self, *exceptions: type[BaseException]) -> None:
        self._exceptions = exceptions

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: type[BaseException] | None, *_value_traceback: object) -> bool:
        return typ is not None and issubclass(typ, self._exceptions)  # by the type alone


__all__ = ["contextmanager", "suppress"]
