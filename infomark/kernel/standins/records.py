"""Dataclass-compatible records that cost almost nothing to define.

Every hook call is a fresh process, so class creation is start-up time: the standard
``dataclasses`` costs a few ms to import (it imports ``inspect``, ``ast``, ``tokenize``)
and ~0.5 ms per class (one ``exec`` per generated method, and a second class for
``slots``). :func:`dataclass` here builds the same classes from the same declarations
(fields, defaults, ``field(default_factory=…)``, ``frozen``, ``slots``, ``eq``, hashing,
``__post_init__``, ``__match_args__``) with generic methods; only ``__init__`` is
compiled, and only once a class has made 64 instances (a generic one fills the fields
until then: most classes of a hook process never get there).

The classes stay dataclasses for everyone else: ``__dataclass_fields__`` is built on
first access (so ``dataclasses.replace``, ``fields``, ``asdict`` and
``dataclasses.FrozenInstanceError`` work as before). Code imports these names from
:mod:`infomark.kernel.records`, which to type checkers *is* :mod:`dataclasses`; this
module's own lines are checked as written.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the hook path never imports typing
    from collections.abc import Callable, Mapping
    from typing import Any, TypeAlias

    Key: TypeAlias = Callable[[object], tuple[object, ...]]
    Init: TypeAlias = Callable[..., None]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_FACTORY = _Missing()  # "call the default factory" marker in generated __init__


class Field:
    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        init: bool,
        repr: bool,
        hash: bool | None,
        compare: bool,
        metadata: Mapping[Any, Any] | None,
        kw_only: Any,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: object = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata: Mapping[Any, Any] = metadata or {}
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: Any = MISSING,
) -> Any:
    return Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))


def _collect(cls: type, kw_only_default: bool) -> tuple[Field, ...]:
    fields_: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        for f in base.__dict__.get("__record_fields__", ()):
            fields_[f.name] = f
    own: dict[str, object] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (no inspect here)
    for name, annotation in own.items():
        if _is_classvar(annotation):
            continue
        if isinstance(annotation, str) and annotation.startswith(("InitVar", "KW_ONLY")):
            raise TypeError(f"{cls.__name__}.{name}: InitVar/KW_ONLY are not supported here")
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            f = value
        else:
            if value is not MISSING and type(value).__hash__ is None:
                raise ValueError(
                    f"mutable default {type(value)} for field {name} is not allowed: "
                    "use default_factory"
                )
            f = Field(value, MISSING, True, True, None, True, None, MISSING)
        f.name = name
        f.type = annotation
        if f.kw_only is MISSING:
            f.kw_only = kw_only_default
        fields_[name] = f
    return tuple(fields_.values())


def _init_source(
    fields_: tuple[Field, ...], frozen: bool, post_init: bool
) -> tuple[str, dict[str, Any]]:
    args: list[str] = []
    kw_args: list[str] = []
    body: list[str] = []
    env: dict[str, Any] = {"__factory__": _FACTORY}
    seen_default = False
    for f in fields_:
        dflt = f"__d_{f.name}"
        if f.init:
            if f.default is not MISSING:
                env[dflt] = f.default
                param = f"{f.name}={dflt}"
            elif f.default_factory is not MISSING:
                param = f"{f.name}=__factory__"
            else:
                param = f.name
            if f.kw_only:
                kw_args.append(param)
            else:
                if "=" in param:
                    seen_default = True
                elif seen_default:
                    raise TypeError(f"non-default argument {f.name!r} follows default argument")
                args.append(param)
        if f.default_factory is not MISSING:
            env[f"__f_{f.name}"] = f.default_factory
            value = (
                f"__f_{f.name}() if {f.name} is __factory__ else {f.name}"
                if f.init
                else f"__f_{f.name}()"
            )
        elif f.init:
            value = f.name
        elif f.default is not MISSING:
            env[dflt] = f.default
            value = dflt
        else:
            continue
        if frozen:
            body.append(f"    __set__(self, {f.name!r}, {value})")
        else:
            body.append(f"    self.{f.name} = {value}")
    if post_init:
        body.append("    self.__post_init__()")
    params = ", ".join(["self", *args, *(["*", *kw_args] if kw_args else [])])
    env["__set__"] = object.__setattr__
    source = f"def __init__({params}):\n" + ("\n".join(body) or "    pass") + "\n"
    return source, env


_COMPILE_AFTER = 64  # instances made by the generic __init__ before one is compiled


def _make_init(
    holder: list[type], fields_: tuple[Field, ...], frozen: bool, post_init: bool
) -> Init:
    by_name = {f.name: f for f in fields_ if f.init}
    positional = tuple(f.name for f in fields_ if f.init and not f.kw_only)
    calls = [0]

    def generic(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if len(args) > len(positional):
            raise TypeError(
                f"__init__() takes {len(positional) + 1} positional arguments "
                f"but {len(args) + 1} were given"
            )
        values = dict(zip(positional, args, strict=False))
        for name in kwargs:
            if name not in by_name:
                raise TypeError(f"__init__() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"__init__() got multiple values for argument {name!r}")
        values.update(kwargs)
        put = object.__setattr__ if frozen else setattr
        for f in fields_:
            if f.init and f.name in values:
                value = values[f.name]
            elif f.default_factory is not MISSING:
                value = f.default_factory()
            elif f.default is not MISSING:
                value = f.default
            elif f.init:
                raise TypeError(f"__init__() missing 1 required argument: {f.name!r}")
            else:
                continue
            put(self, f.name, value)
        if post_init:
            self.__post_init__()

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        # Few instances (most classes, in a hook process): generic, nothing compiled.
        # Many: compile the specialised __init__ dataclasses would have made.
        calls[0] += 1
        if calls[0] <= _COMPILE_AFTER:
            return generic(self, args, kwargs)
        cls = holder[0]
        source, env = _init_source(fields_, frozen, post_init)
        exec(compile(source, f"<record {cls.__qualname__}.__init__>", "exec"), env)  # noqa: S102
        real: Init = env["__init__"]
        real.__qualname__ = f"{cls.__qualname__}.__init__"
        type.__setattr__(cls, "__init__", real)
        real(self, *args, **kwargs)

    return __init__


def _getter(names: tuple[str, ...]) -> Key:
    if len(names) >= 2:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


class _LazyDataclassFields:
    """``__dataclass_fields__`` as real :class:`dataclasses.Field` objects, on demand."""

    def __get__(self, obj: object, owner: type) -> dict[str, Any]:
        import dataclasses

        out: dict[str, Any] = {}
        for f in _record_fields(owner) or ():
            df: Any = dataclasses.field(
                default=dataclasses.MISSING if f.default is MISSING else f.default,
                default_factory=dataclasses.MISSING
                if f.default_factory is MISSING
                else f.default_factory,
                init=f.init,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
                metadata=f.metadata,
                kw_only=f.kw_only,
            )
            df.name = f.name
            df.type = f.type
            df._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # private, as stdlib sets it
            out[f.name] = df
        if "__dataclass_fields__" in owner.__dict__:
            type.__setattr__(owner, "__dataclass_fields__", out)  # built once
        return out


_LAZY_FIELDS = _LazyDataclassFields()


def _record_fields(cls: type) -> tuple[Field, ...] | None:
    """The fields of a class made here (inherited included), None for any other class."""
    found: tuple[Field, ...] | None = getattr(cls, "__record_fields__", None)
    return found


def _frozen_error(name: str) -> Exception:
    import dataclasses

    return dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _check_order(fields_: tuple[Field, ...], init: bool) -> None:
    seen_default = False
    for f in fields_:
        if not f.init or f.kw_only:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default and init:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _with_fields(cls: type, fields_: tuple[Field, ...], slots: bool) -> type:
    """``cls`` without the field defaults in its body: a new class with ``__slots__`` for
    ``slots``, else ``cls`` itself, its defaults reset to the fields' defaults."""
    own = cls.__dict__
    if not slots:
        for f in fields_:
            if f.name in own:
                if f.default is not MISSING:
                    type.__setattr__(cls, f.name, f.default)
                else:
                    type.__delattr__(cls, f.name)
        return cls
    body = dict(own)
    for f in fields_:
        if f.name in own:
            del body[f.name]
    inherited: set[str] = set()
    for base in cls.__mro__[1:]:
        inherited.update(base.__dict__.get("__slots__", ()))
    body["__slots__"] = tuple(f.name for f in fields_ if f.name not in inherited)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    new: type = type(cls)(cls.__name__, cls.__bases__, body)
    new.__qualname__ = cls.__qualname__
    return new


def _ordering(key: Key) -> dict[str, Callable[[Any, Any], Any]]:
    def compare(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
        def method(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return op(key(self), key(other))
            return NotImplemented

        return method

    return {
        "__lt__": compare(lambda a, b: a < b),
        "__le__": compare(lambda a, b: a <= b),
        "__gt__": compare(lambda a, b: a > b),
        "__ge__": compare(lambda a, b: a >= b),
    }


def _hashing(
    cls: type, own: Mapping[str, object], fields_: tuple[Field, ...], flags: tuple[bool, bool, bool]
) -> None:
    """``__hash__`` by the rules of :func:`dataclasses.dataclass` (``own``: the class body as
    declared; ``flags``: eq, frozen, unsafe_hash)."""
    eq, frozen, unsafe = flags
    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    hashed = _getter(tuple(f.name for f in fields_ if (f.compare if f.hash is None else f.hash)))

    def __hash__(self: object) -> int:
        return hash(hashed(self))

    if unsafe:
        if explicit_hash:
            raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
        type.__setattr__(cls, "__hash__", __hash__)
    elif eq and frozen and not explicit_hash:
        type.__setattr__(cls, "__hash__", __hash__)
    elif eq and not frozen and not explicit_hash:
        type.__setattr__(cls, "__hash__", None)


def _freezing(cls: type, names: tuple[str, ...], slots: bool) -> dict[str, Callable[..., Any]]:
    field_names = frozenset(names)
    owner: type[object] = cls  # super() wants a class type, not the bare ``type``

    def __setattr__(self: Any, name: str, value: object) -> None:
        if type(self) is cls or name in field_names:
            raise _frozen_error(name)
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in field_names:
            raise _frozen_error(name)
        super(owner, self).__delattr__(name)

    methods: dict[str, Callable[..., Any]] = {
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
    }
    if slots:

        def __getstate__(self: object) -> list[object]:
            return [getattr(self, n) for n in names]

        def __setstate__(self: object, state: list[object]) -> None:
            for n, v in zip(names, state, strict=True):
                object.__setattr__(self, n, v)

        methods["__getstate__"] = __getstate__
        methods["__setstate__"] = __setstate__
    return methods


def _process(
    cls: type,
    init: bool,
    repr_: bool,
    eq: bool,
    order: bool,
    unsafe_hash: bool,
    frozen: bool,
    match_args: bool,
    kw_only: bool,
    slots: bool,
) -> type:
    fields_ = _collect(cls, kw_only)
    _check_order(fields_, init)
    names = tuple(f.name for f in fields_)
    own = cls.__dict__  # what the class defines itself is never replaced
    cls = _with_fields(cls, fields_, slots)
    holder = [cls]

    def put(name: str, value: object) -> None:
        if name not in own:
            type.__setattr__(cls, name, value)

    type.__setattr__(cls, "__record_fields__", fields_)
    type.__setattr__(cls, "__dataclass_fields__", _LAZY_FIELDS)
    if init:
        put("__init__", _make_init(holder, fields_, frozen, hasattr(cls, "__post_init__")))
    if repr_:
        shown = tuple(f.name for f in fields_ if f.repr)

        def __repr__(self: object) -> str:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
            return f"{type(self).__qualname__}({inner})"

        put("__repr__", __repr__)
    key = _getter(tuple(f.name for f in fields_ if f.compare))
    if eq:

        def __eq__(self: object, other: object) -> Any:
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented

        put("__eq__", __eq__)
    for name, method in (_ordering(key) if order else {}).items():
        put(name, method)
    _hashing(cls, own, fields_, (eq, frozen, unsafe_hash))
    for name, method in (_freezing(cls, names, slots) if frozen else {}).items():
        put(name, method)
    if match_args:
        put("__match_args__", tuple(f.name for f in fields_ if f.init and not f.kw_only))
    return cls


def dataclass(
    cls: type | None = None,
    /,
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
) -> Any:
    def wrap(c: type) -> type:
        return _process(c, init, repr, eq, order, unsafe_hash, frozen, match_args, kw_only, slots)

    return wrap if cls is None else wrap(cls)


def fields(obj: object) -> tuple[Any, ...]:
    found = _record_fields(obj if isinstance(obj, type) else type(obj))
    if found is None:
        import dataclasses

        return dataclasses.fields(obj)  # type: ignore[arg-type]  # not a record: stdlib's check
    return found


_ATOMS = (str, int, float, bool, bytes, type(None))


def _asdict(obj: Any, factory: Callable[[list[tuple[str, Any]]], Any]) -> Any:
    if type(obj) in _ATOMS:
        return obj
    found = _record_fields(type(obj))
    if found is not None:
        return factory([(f.name, _asdict(getattr(obj, f.name), factory)) for f in found])
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_asdict(v, factory) for v in obj])
    if isinstance(obj, list | tuple):
        return type(obj)(_asdict(v, factory) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((_asdict(k, factory), _asdict(v, factory)) for k, v in obj.items())
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj, dict_factory=factory)
    import copy

    return copy.deepcopy(obj)


def asdict(obj: Any, *, dict_factory: Callable[[list[tuple[str, Any]]], Any] = dict) -> Any:
    if _record_fields(type(obj)) is None:
        import dataclasses

        return dataclasses.asdict(obj, dict_factory=dict_factory)
    return _asdict(obj, dict_factory)


def replace(obj: Any, /, **changes: Any) -> Any:
    found = _record_fields(type(obj))
    if found is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for f in found:
        if not f.init:
            if f.name in changes:
                raise ValueError(
                    f"field {f.name} is declared with init=False, it cannot be specified "
                    "with replace()"
                )
            continue
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


__all__ = ["MISSING", "Field", "asdict", "dataclass", "field", "fields", "replace"]
