"""``infomark.kernel.contexts`` behaves like ``contextlib`` (the two are driven side by side)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from infomark.kernel import contexts


def _managers(cm: Callable[..., Any]) -> dict[str, Any]:
    log: list[str] = []

    @cm
    def plain() -> Iterator[int]:
        log.append("enter")
        try:
            yield 1
        finally:
            log.append("exit")

    @cm
    def swallow() -> Iterator[None]:
        try:
            yield
        except KeyError:
            log.append("swallowed")

    @cm
    def converts() -> Iterator[None]:
        try:
            yield
        except KeyError as exc:
            raise ValueError("converted") from exc

    @cm
    def no_yield() -> Iterator[None]:
        if False:  # pragma: no cover
            yield

    @cm
    def two_yields() -> Iterator[None]:
        yield
        yield

    return {"log": log, "plain": plain, "swallow": swallow, "converts": converts,
            "no_yield": no_yield, "two_yields": two_yields}  # fmt: skip


def _run(managers: dict[str, Any], name: str, raise_: type[BaseException] | None) -> list[Any]:
    out: list[Any] = []
    try:
        with managers[name]() as value:
            out.append(value)
            if raise_ is not None:
                raise raise_("boom")
        out.append("after")
    except BaseException as exc:  # the outcome, exception type included, is compared
        out.append((type(exc).__name__, str(exc)))
    return [*out, list(managers["log"])]


@pytest.mark.parametrize("name", ["plain", "swallow", "converts", "no_yield", "two_yields"])
@pytest.mark.parametrize("raise_", [None, KeyError, ValueError, StopIteration, RuntimeError])
def test_contextmanager_matches_contextlib(name: str, raise_: type[BaseException] | None) -> None:
    ours = _run(_managers(contexts.contextmanager), name, raise_)
    theirs = _run(_managers(contextlib.contextmanager), name, raise_)
    assert ours == theirs


@pytest.mark.parametrize("raise_", [OSError, FileNotFoundError, ValueError, None])
def test_suppress_matches_contextlib(raise_: type[BaseException] | None) -> None:
    def run(suppress: Any) -> str:
        try:
            with suppress(OSError, KeyError):
                if raise_ is not None:
                    raise raise_("x")
            return "done"
        except BaseException as exc:
            return type(exc).__name__

    assert run(contexts.suppress) == run(contextlib.suppress)
