"""The ``StrEnum`` / ``IntEnum`` stand-ins behave as :mod:`enum`'s, side by side.

The same class bodies are run twice, once on ``enum.StrEnum`` / ``enum.IntEnum`` and once on
the stand-ins of :mod:`infomark.kernel.standins.enums`, each in a module of its own (so
qualified names, reprs, messages and pickling read the same); every operation the code and
its tests use must give the same answer, or raise the same exception with the same message.
"""

from __future__ import annotations

import copy
import enum
import json
import pickle
import sys
import types
import warnings
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.standins import enums as ours

_BODIES = '''
class Color(StrBase):
    """A colour, with its own doc."""

    RED = "red"
    GREEN = "green"
    BLUE = "blue"
    CRIMSON = "red"  # an alias
    _single = "single"  # one underscore: a member, as in enum
    _Color__hidden = "hidden"  # private: not a member
    __dunder__ = "dunder"

    @property
    def warm(self) -> bool:
        return self is Color.RED

    def shout(self) -> str:
        return self.value.upper()

    @classmethod
    def parse(cls, word: str) -> Color:
        return cls(word.strip().lower())

    @staticmethod
    def count() -> int:
        return 3


class Code(StrBase):
    ALLOWED = "allowed"
    NO_LEDGER = "no_ledger"
    RED = "red"  # equal to Color.RED as a string


class Rank(IntBase):
    LOW = 0
    MID = 1
    HIGH = 2
    TOP = 2  # an alias

    @property
    def big(self) -> bool:
        return self >= Rank.HIGH

    def at_least(self, other: Rank) -> bool:
        return self >= other


class Field(StrBase):
    """Members named as a member's own fields."""

    name = "n"
    value = "v"
    OTHER = "o"


class Mark(IntBase):
    """Its own str(), as InfoMark."""

    UNKNOWN = 0
    EXACT = 4

    def __str__(self) -> str:
        return self.name.capitalize()


def which(member):
    match member:
        case Color.RED:
            return "red"
        case Rank.HIGH:
            return "high"
        case Code.ALLOWED | Mark.EXACT:
            return "either"
        case _:
            return "other"
'''


def _module(name: str, str_base: type, int_base: type) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(StrBase=str_base, IntBase=int_base)
    sys.modules[name] = module  # pickle finds the classes by module and name
    exec(compile(_BODIES, f"<{name}>", "exec"), module.__dict__)  # our own text, above
    return module


REAL = _module("_enums_real", enum.StrEnum, enum.IntEnum)
OURS = _module("_enums_ours", ours.StrEnum, ours.IntEnum)
CLASSES = ("Color", "Code", "Rank", "Field", "Mark")


def _outcome(call: Any) -> tuple[str, object]:
    """What a call gives, members as ``(class name, member name)``, or the error it raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as exc:  # the exception is the outcome compared
            return ("raised", (type(exc).__name__, str(exc), [str(w.message) for w in caught]))
    return ("ok", _plain(result))


def _plain(value: object) -> object:
    if isinstance(value, enum.Enum | ours.StrEnum | ours.IntEnum):
        return ("member", type(value).__name__, value.name, value.value, type(value.value))
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict | types.MappingProxyType):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bool | int | str | float | bytes | None):
        return (type(value).__name__, value)
    return type(value).__name__


def _same(op: Any) -> None:
    """``op(module)`` gives the same outcome on enum's classes and on the stand-ins'."""
    assert _outcome(lambda: op(OURS)) == _outcome(lambda: op(REAL))


def _member(module: types.ModuleType, cls: str, name: str) -> Any:
    return getattr(module, cls)[name]


_NAMES = {cls: list(getattr(REAL, cls).__members__) for cls in CLASSES}
_ANY_VALUE = st.one_of(
    st.text(max_size=8),
    st.integers(-3, 6),
    st.sampled_from(["red", "RED", "green", "allowed", "single", "hidden", "dunder", "2"]),
    st.sampled_from([2.0, True, False, None, b"red", ("red",)]),
    st.lists(st.integers(0, 2), max_size=2),  # unhashable
)
_SPECS = st.sampled_from(["", "s", ">8", "^7", "d", "x", "03d", "+", ".2", "<3"])


@given(cls=st.sampled_from(CLASSES), value=_ANY_VALUE)
def test_lookup_by_value(cls: str, value: object) -> None:
    _same(lambda m: getattr(m, cls)(value))
    _same(lambda m: getattr(m, cls)(getattr(m, cls)[_NAMES[cls][0]]))  # a member: itself


@given(cls=st.sampled_from(CLASSES), name=st.one_of(st.text(max_size=6), st.sampled_from(
    ["RED", "CRIMSON", "_single", "_Color__hidden", "__dunder__", "TOP", "red", "warm", "parse",
     "name", "value", "_name_", "_value_", "OTHER"]
)))  # fmt: skip
def test_lookup_by_name_and_attribute(cls: str, name: str) -> None:
    _same(lambda m: getattr(m, cls)[name])
    _same(lambda m: getattr(getattr(m, cls), name) if name.isidentifier() else None)


@pytest.mark.parametrize("cls", CLASSES)
def test_the_class_protocol(cls: str) -> None:
    _same(lambda m: list(getattr(m, cls)))
    _same(lambda m: list(reversed(getattr(m, cls))))
    _same(lambda m: len(getattr(m, cls)))
    _same(lambda m: dict(getattr(m, cls).__members__))
    _same(lambda m: type(getattr(m, cls).__members__).__name__)
    _same(lambda m: repr(getattr(m, cls)))
    _same(lambda m: (getattr(m, cls).__name__, getattr(m, cls).__qualname__))
    _same(lambda m: bool(getattr(m, cls)))
    _same(lambda m: getattr(m, cls).__doc__)
    _same(lambda m: [issubclass(getattr(m, cls), t) for t in (str, int, object)])


@given(
    cls=st.sampled_from(CLASSES),
    other=st.sampled_from(CLASSES),
    data=st.data(),
    plain=st.sampled_from(["red", 2, None, "RED"]),
)
def test_membership(cls: str, other: str, data: st.DataObject, plain: object) -> None:
    name = data.draw(st.sampled_from(_NAMES[other]))
    _same(lambda m: _member(m, other, name) in getattr(m, cls))
    _same(lambda m: plain in getattr(m, cls))  # TypeError and a DeprecationWarning in 3.11


@given(cls=st.sampled_from(CLASSES), data=st.data(), spec=_SPECS, value=_ANY_VALUE)
def test_each_member(cls: str, data: st.DataObject, spec: str, value: object) -> None:
    name = data.draw(st.sampled_from(_NAMES[cls]))

    def each(op: Any) -> None:
        _same(lambda m: op(_member(m, cls, name)))

    each(lambda x: (x.name, x.value, type(x.value)))
    each(lambda x: (str(x), repr(x), f"{x}", f"{x!s}", f"{x!r}", "%s" % x))  # noqa: UP031
    each(lambda x: format(x, spec))
    each(lambda x: (hash(x) == hash(x.value), x == x.value, x != x.value, x is type(x)(x.value)))
    each(lambda x: [isinstance(x, t) for t in (str, int, object)])
    each(lambda x: (type(x).__name__, type(x.value).__name__, bool(x)))
    each(lambda x: x == value)
    each(lambda x: x < value)  # int's ordering, or str's, or the TypeError of either
    each(lambda x: x + value)
    each(lambda x: {x: 1}.get(value))  # a member is its value as a dict key
    each(lambda x: json.dumps(x))
    each(lambda x: json.dumps({x: x}))
    each(lambda x: copy.copy(x) is x and copy.deepcopy(x) is x)
    each(
        lambda x: [
            pickle.loads(pickle.dumps(x, p)) is x for p in range(pickle.HIGHEST_PROTOCOL + 1)
        ]
    )
    each(lambda x: sys.modules[type(x).__module__].which(x))
    each(lambda x: setattr(type(x), x.name, 1))  # AttributeError: cannot reassign member


@pytest.mark.parametrize(
    "op",
    [
        lambda m: [(c.warm, c.shout()) for c in m.Color],
        lambda m: (m.Color.parse(" Green "), m.Color.count(), m.Color.RED.count()),
        lambda m: m.Color.parse("purple"),
        lambda m: [(r.big, r.at_least(m.Rank.MID)) for r in m.Rank],
        lambda m: (max(m.Rank), min(m.Rank), sorted(m.Rank, reverse=True), m.Rank.TOP),
        lambda m: (m.Rank.MID + 1, m.Rank.HIGH * 2, -m.Rank.MID, m.Rank.HIGH // 2),
        lambda m: (m.Rank.LOW < m.Rank.MID < 2, m.Rank.HIGH >= 2, m.Rank.MID == 1.0),
        lambda m: (m.Color.RED == m.Code.RED, m.Color.RED is m.Color.CRIMSON, m.Color._single),
        lambda m: (m.Color.RED.upper(), m.Color.RED + "!", m.Color.RED.split("e")),
        lambda m: m.Color._Color__hidden,
        lambda m: m.Color.__dunder__,
        lambda m: sorted(m.Color),
        lambda m: {m.Color.RED: 1, "red": 2},
        lambda m: m.Color.RED.__reduce_ex__(4)[1],
        lambda m: [str(x) + f"{x:>5}" for x in m.Mark],
        lambda m: m.which("red"),
        lambda m: m.which(2),
        lambda m: m.which(m.Code.ALLOWED),
        lambda m: m.which(m.Rank.MID),
    ],
)
def test_class_bodies_and_mixins(op: Any) -> None:
    _same(op)


def test_members_are_built_once_and_defined_in_order() -> None:
    assert [c.name for c in OURS.Color] == ["RED", "GREEN", "BLUE", "_single"]
    assert list(OURS.Color.__members__) == list(REAL.Color.__members__)
    assert OURS.Color.CRIMSON is OURS.Color.RED is OURS.Color("red") is OURS.Color["CRIMSON"]
    assert type(OURS.Color.RED) is OURS.Color and type(OURS.Rank.TOP) is OURS.Rank


def test_an_enum_with_members_cannot_be_extended() -> None:
    def extend(base: type) -> None:
        types.new_class("More", (base,), exec_body=lambda ns: ns.__setitem__("PURPLE", "purple"))

    with pytest.raises(TypeError) as real:
        extend(REAL.Color)
    with pytest.raises(TypeError) as stand_in:
        extend(OURS.Color)
    assert str(stand_in.value) == str(real.value)


def test_a_string_enum_takes_only_strings() -> None:
    for base in (ours.StrEnum, enum.StrEnum):
        with pytest.raises(TypeError, match=r"^1 is not a string$"):
            types.new_class("Bad", (base,), exec_body=lambda ns: ns.__setitem__("A", 1))


# pydantic sees the stand-ins as it sees enum's: the same validation, errors and schema


def _model(module: types.ModuleType) -> type[pydantic.BaseModel]:
    return pydantic.create_model(
        "Config",
        color=(module.Color, module.Color.RED),
        rank=(module.Rank, ...),
        mark=(module.Mark | None, None),
        codes=(list[module.Code], []),
    )


_INPUTS = st.fixed_dictionaries(
    {"rank": st.one_of(st.integers(-1, 5), st.sampled_from(["1", "x", 2.0, 1.5, None]))},
    optional={
        "color": st.sampled_from(["red", "blue", "RED", "purple", 1, None, "CRIMSON"]),
        "mark": st.sampled_from([0, 4, "4", 3, None, "EXACT"]),
        "codes": st.lists(st.sampled_from(["allowed", "no_ledger", "nope", 3]), max_size=3),
    },
)


def _validated(module: types.ModuleType, data: dict[str, object], mode: str) -> object:
    model = _model(module)
    try:
        if mode == "json":
            done = model.model_validate_json(json.dumps(data))
        else:
            done = model.model_validate(data, strict=mode == "strict")
    except pydantic.ValidationError as exc:
        return [(e["type"], e["loc"], e["msg"], e.get("ctx")) for e in exc.errors()]
    return (
        _plain(dict(done)),
        done.model_dump(mode="json"),
        done.model_dump_json(),
        repr(done),
    )


@given(data=_INPUTS, mode=st.sampled_from(["python", "json", "strict"]))
def test_pydantic_validates_the_same(data: dict[str, object], mode: str) -> None:
    assert _validated(OURS, data, mode) == _validated(REAL, data, mode)


def test_pydantic_validates_members_of_the_stand_in() -> None:
    model = _model(OURS)
    done = model(color=OURS.Color.BLUE, rank=OURS.Rank.HIGH)
    assert done.color is OURS.Color.BLUE and done.rank is OURS.Rank.HIGH
    assert model.model_validate({"rank": 2}).rank is OURS.Rank.HIGH


@pytest.mark.parametrize("mode", ["validation", "serialization"])
def test_pydantic_json_schema_is_the_same(mode: str) -> None:
    def schema(module: types.ModuleType) -> str:
        return json.dumps(_model(module).model_json_schema(mode=mode), sort_keys=True)

    assert schema(OURS) == schema(REAL)


def test_the_stand_in_module_imports_neither_enum_nor_pydantic() -> None:
    import subprocess

    code = (
        "import sys; import infomark.kernel.enums, infomark.kernel.profiles, "
        "infomark.kernel.infomark, infomark.kernel.tools; "
        "print(sorted({'enum', 'pydantic', 'pydantic_core', 're', 'typing'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
