"""``StrEnum`` and ``IntEnum`` that cost almost nothing to import and to define.

Every hook call is a fresh process, so class creation is start-up time: the standard
:mod:`enum` costs ~6 M instructions to import and ~1 M per class (``EnumType.__new__``
walks descriptors, builds properties per member and checks mixins). The classes here keep
the behaviour the code and its tests use, as Python 3.11's ``enum`` gives it: members are
singletons, instances of their class and of ``str`` / ``int``; ``.name``, ``.value``;
``Cls(value)`` (``ValueError`` with enum's message on a miss), ``Cls["NAME"]``, iteration in
definition order, ``len``, ``in``, ``__members__``; ``str()``, ``format()`` and ``repr()``
as enum's; hash, equality and ordering of the base type; pickle and copy return the member;
aliases (a second name for a value); and pydantic validates and describes them as it does
enums (``__get_pydantic_core_schema__``, imported only when pydantic asks). Code imports
them from :mod:`infomark.kernel.enums`, which to type checkers *is* :mod:`enum`;
``tests/kernel/test_enums.py`` drives both side by side.
"""

from __future__ import annotations

from types import MappingProxyType

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the hook path never imports typing
    from collections.abc import Callable, Iterator
    from typing import Any


def _is_member(cls_name: str, name: str, value: object) -> bool:
    """enum's rule: any name but a ``__dunder__``, a ``_sunder_``, a private ``_Cls__x`` or
    one bound to a descriptor (a method, a property)."""
    if len(name) > 4 and name[:2] == name[-2:] == "__" and name[2] != "_" != name[-3]:
        return False  # dunder
    if len(name) > 2 and name[0] == name[-1] == "_" and name[1] != "_" != name[-2]:
        return False  # sunder
    private = f"_{cls_name}__"
    if len(name) > len(private) and name.startswith(private) and name[-2:] != "__":
        return False  # private
    return not (
        hasattr(value, "__get__") or hasattr(value, "__set__") or hasattr(value, "__delete__")
    )


class EnumType(type):
    """The metaclass: collects the members of a class body and answers the class's protocol.

    Named as enum's, so a ``TypeError`` from ``in`` reads the same."""

    _member_map_: dict[str, Any]
    _member_names_: list[str]
    _value2member_map_: dict[object, Any]
    _base_: type

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> EnumType:
        members = {k: v for k, v in namespace.items() if _is_member(name, k, v)}
        body = {k: v for k, v in namespace.items() if k not in members}
        cls = super().__new__(mcs, name, bases, body)
        for base in bases:
            if getattr(base, "_member_names_", None):
                raise TypeError(f"<enum {name!r}> cannot extend <enum {base.__name__!r}>")
        type.__setattr__(cls, "_member_map_", {})
        type.__setattr__(cls, "_member_names_", [])
        type.__setattr__(cls, "_value2member_map_", {})
        for key, value in members.items():
            cls._add_member(key, value)
        return cls

    def _add_member(cls, name: str, value: object) -> None:
        base: Callable[[type, object], Any] = cls._base_.__new__
        if not isinstance(value, cls._base_) and cls._base_ is str:
            raise TypeError(f"{value!r} is not a string")
        member = cls._value2member_map_.get(value)
        if member is None:  # not an alias: a new member
            member = base(cls, value)
            member._name_ = name
            member._value_ = value
            cls._member_names_.append(name)
            cls._value2member_map_[value] = member
        cls._member_map_[name] = member
        if name not in _MEMBER_FIELDS:  # the class's own attribute would hide the member's
            type.__setattr__(cls, name, member)

    # On the class, ``.name`` and ``.value`` are a member of that name or missing, as enum's
    # (whose properties answer so when read from the class). Defined here, on the metaclass, as
    # data descriptors they take precedence over ``_Member``'s, which members still read at C
    # speed.
    @property
    def name(cls) -> Any:
        return cls._field_of_class("name")

    @property
    def value(cls) -> Any:
        return cls._field_of_class("value")

    def _field_of_class(cls, field: str) -> Any:
        try:
            return cls._member_map_[field]
        except KeyError:
            raise AttributeError(field) from None

    def __call__(cls, value: object) -> Any:
        try:
            return cls._value2member_map_[value]
        except KeyError:
            pass
        except TypeError:  # unhashable: compare with each value, as enum does
            for member in cls._member_map_.values():
                if member._value_ == value:
                    return member
        raise ValueError(f"{value!r} is not a valid {cls.__qualname__}")

    def __getattr__(cls, name: str) -> Any:  # as 3.11's: only for what the class lacks
        if len(name) > 4 and name[:2] == name[-2:] == "__" and name[2] != "_" != name[-3]:
            raise AttributeError(name)
        try:
            return cls._member_map_[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(cls, name: str) -> Any:
        return cls._member_map_[name]

    def __iter__(cls) -> Iterator[Any]:
        return (cls._member_map_[name] for name in cls._member_names_)

    def __reversed__(cls) -> Iterator[Any]:
        return (cls._member_map_[name] for name in reversed(cls._member_names_))

    def __len__(cls) -> int:
        return len(cls._member_names_)

    def __bool__(cls) -> bool:
        return True

    def __contains__(cls, member: object) -> bool:
        if not isinstance(member, StrEnum | IntEnum):
            import warnings  # only on a misuse, as in enum

            warnings.warn(
                "in 3.12 __contains__ will no longer raise TypeError, but will return True or\n"
                "False depending on whether the value is a member or the value of a member",
                DeprecationWarning,
                stacklevel=2,
            )
            raise TypeError(
                "unsupported operand type(s) for 'in': "
                f"'{type(member).__qualname__}' and '{type(cls).__qualname__}'"
            )
        return isinstance(member, cls) and member._name_ in cls._member_map_

    @property
    def __members__(cls) -> MappingProxyType[str, Any]:
        return MappingProxyType(cls._member_map_)

    def __repr__(cls) -> str:
        return f"<enum {cls.__name__!r}>"

    def __setattr__(cls, name: str, value: object) -> None:
        if name in cls.__dict__.get("_member_map_", {}):
            raise AttributeError(f"cannot reassign member {name!r}")
        super().__setattr__(name, value)

    def __delattr__(cls, name: str) -> None:
        if name in cls._member_map_:
            raise AttributeError(f"{cls.__name__!r} cannot delete member {name!r}.")
        super().__delattr__(name)


_MEMBER_FIELDS = frozenset(("name", "value"))


def _pydantic_schema(cls: EnumType) -> Any:
    """The core schema pydantic builds for an enum (``GenerateSchema._enum_schema``)."""
    import inspect  # pydantic asks: never on the hook path

    from pydantic_core import core_schema

    description = None if not cls.__doc__ else inspect.cleandoc(cls.__doc__)
    updates = {"title": cls.__name__, "description": description}
    updates = {k: v for k, v in updates.items() if v is not None}

    def json_schema(schema: Any, handler: Any) -> Any:
        found = handler(schema)
        handler.resolve_ref_schema(found).update(updates)
        return found

    return core_schema.enum_schema(
        cls,
        list(cls.__members__.values()),
        sub_type="int" if cls._base_ is int else "str",
        ref=f"{cls.__module__}.{cls.__qualname__}:{id(cls)}",
        metadata={"pydantic_js_functions": [json_schema]},
    )


class _Member:
    """What enum's ``Enum`` gives every member: name, value, repr, pickling, copying."""

    __slots__ = ()
    _name_: str
    _value_: Any

    @property
    def name(self) -> str:
        return self._name_

    @property
    def value(self) -> Any:
        return self._value_

    def __repr__(self) -> str:
        value_repr: Callable[[object], str] = type(self)._base_.__repr__  # type: ignore[attr-defined]
        return f"<{type(self).__name__}.{self._name_}: {value_repr(self._value_)}>"

    def __reduce_ex__(self, proto: object) -> tuple[type, tuple[Any]]:
        return type(self), (self._value_,)

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: object) -> Any:
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: object) -> Any:
        return _pydantic_schema(cls)  # type: ignore[arg-type]


class StrEnum(_Member, str, metaclass=EnumType):
    """Members are strings: ``str()`` and ``format()`` give the value."""

    _base_ = str
    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__


class IntEnum(_Member, int, metaclass=EnumType):
    """Members are ints: ``str()`` and ``format()`` give the number, ordering is int's."""

    _base_ = int
    __str__ = int.__repr__
    __format__ = int.__format__
    __hash__ = int.__hash__
