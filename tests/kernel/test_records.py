"""``infomark.kernel.records`` behaves like ``dataclasses`` for every feature the code uses.

Each class is declared twice, once with the standard decorator and once with ours, and
the two are driven through the same operations; the results must be equal (including
the exceptions), on the generic ``__init__`` and after it has been compiled.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel import records


def _declare(dc: Any, field: Any) -> dict[str, type]:
    @dc(frozen=True, slots=True)
    class Frozen:
        a: int
        b: str = "b"
        c: tuple[int, ...] = ()
        d: list[int] = field(default_factory=list, compare=False)
        e: Any = field(default=None, repr=False)
        k: ClassVar[int] = 7

    @dc(slots=True)
    class Mutable:
        x: int = 0
        y: dict[str, int] = field(default_factory=dict)
        z: str = field(default="z", kw_only=True)

        def __post_init__(self) -> None:
            self.x += 1

    @dc(frozen=True)
    class Plain:
        p: int
        q: int = field(default=2, init=False)

        def total(self) -> int:
            return self.p + self.q

    @dc(order=True, frozen=True)
    class Ordered:
        u: int
        v: str = ""

    return {"Frozen": Frozen, "Mutable": Mutable, "Plain": Plain, "Ordered": Ordered}


STD = _declare(dataclasses.dataclass, dataclasses.field)
OURS = _declare(records.dataclass, records.field)


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn())
    except Exception as exc:  # the exception type is part of the behaviour
        return ("raised", type(exc).__name__)


def _observe(classes: dict[str, type], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    seen: list[Any] = []
    for name, cls in classes.items():
        made = _outcome(lambda cls=cls: cls(*args, **kwargs))
        seen.append((name, made[0]))
        if made[0] != "ok":
            seen.append(made[1])
            continue
        obj = made[1]
        seen.append(repr(obj).replace(cls.__qualname__, name))
        seen.append(dataclasses.asdict(obj) == records.asdict(obj))
        seen.append(records.asdict(obj))
        seen.append(obj == cls(*args, **kwargs))
        seen.append(_outcome(lambda obj=obj: hash(obj) == hash(copy.copy(obj))))
        seen.append(_outcome(lambda obj=obj: setattr(obj, "a", 5)))
        seen.append(getattr(cls, "__match_args__", None))
        seen.append([f.name for f in dataclasses.fields(obj)])
        seen.append(_outcome(lambda obj=obj: records.replace(obj) == obj))
        seen.append(_outcome(lambda obj=obj: dataclasses.replace(obj) == obj))
        seen.append(copy.copy(obj) == obj)
        seen.append(copy.deepcopy(obj) == obj)
    return seen


ARGS = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.tuples(st.integers(0, 3)))


@given(
    args=st.lists(ARGS, max_size=4).map(tuple),
    kwargs=st.dictionaries(st.sampled_from(["a", "b", "x", "y", "z", "p", "q", "u", "w"]), ARGS),
)
def test_records_behave_like_dataclasses(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    # many calls: the generic __init__ first, the compiled one after a few instances
    assert _observe(OURS, args, kwargs) == _observe(STD, args, kwargs)


def test_frozen_raises_the_dataclasses_error_and_slots_hold_no_dict() -> None:
    obj = OURS["Frozen"](1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.a = 2  # type: ignore[misc]
    assert not hasattr(obj, "__dict__")
    assert OURS["Frozen"].__slots__ == STD["Frozen"].__slots__
    assert OURS["Frozen"].k == 7 and "k" not in OURS["Frozen"].__slots__


def test_order_init_false_and_methods() -> None:
    ordered = OURS["Ordered"]
    assert sorted([ordered(2), ordered(1, "b"), ordered(1, "a")]) == [
        ordered(1, "a"),
        ordered(1, "b"),
        ordered(2),
    ]
    plain = OURS["Plain"](3)
    assert plain.total() == 5 and plain.q == 2
    with pytest.raises(ValueError, match="init=False"):
        records.replace(plain, q=4)


def test_mutable_default_is_refused_like_dataclasses() -> None:
    with pytest.raises(ValueError, match="mutable default"):

        @records.dataclass
        class Bad:
            items: list[int] = []  # noqa: RUF012


def test_non_default_after_default_is_refused() -> None:
    @records.dataclass
    class Late:
        a: int = 1
        b: int = 2

    with pytest.raises(TypeError, match="non-default argument"):

        @records.dataclass
        class Broken(Late):
            c: int  # type: ignore[misc]
