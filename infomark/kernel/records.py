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
``dataclasses.FrozenInstanceError`` work as before), and to type checkers this module
*is* :mod:`dataclasses`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import asdict, dataclass, field, fields, replace
else:
    from operator import attrgetter

    class _Missing:
        __slots__ = ()

        def __repr__(self) -> str:
            return "MISSING"

    MISSING = _Missing()
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

        def __init__(self, default, default_factory, init, repr, hash, compare, metadata, kw_only):
            if default is not MISSING and default_factory is not MISSING:
                raise ValueError("cannot specify both default and default_factory")
            self.name = ""
            self.type = None
            self.default = default
            self.default_factory = default_factory
            self.init = init
            self.repr = repr
            self.hash = hash
            self.compare = compare
            self.metadata = metadata or {}
            self.kw_only = kw_only

        def __repr__(self) -> str:
            return f"Field(name={self.name!r}, default={self.default!r})"

    def field(
        *,
        default=MISSING,
        default_factory=MISSING,
        init=True,
        repr=True,
        hash=None,
        compare=True,
        metadata=None,
        kw_only=MISSING,
    ):
        return Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)

    def _is_classvar(annotation: object) -> bool:
        text = annotation if isinstance(annotation, str) else repr(annotation)
        return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))

    def _collect(cls, kw_only_default):
        fields_: dict[str, Field] = {}
        for base in cls.__mro__[-1:0:-1]:
            for f in base.__dict__.get("__record_fields__", ()):
                fields_[f.name] = f
        own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (no inspect here)
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

    def _init_source(fields_, frozen, post_init):
        args, kw_args, body, env = [], [], [], {"__factory__": _FACTORY}
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

    def _make_init(holder, fields_, frozen, post_init):
        by_name = {f.name: f for f in fields_ if f.init}
        positional = tuple(f.name for f in fields_ if f.init and not f.kw_only)
        calls = [0]

        def generic(self, args, kwargs):
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

        def __init__(self, *args, **kwargs):
            # Few instances (most classes, in a hook process): generic, nothing compiled.
            # Many: compile the specialised __init__ dataclasses would have made.
            calls[0] += 1
            if calls[0] <= _COMPILE_AFTER:
                return generic(self, args, kwargs)
            cls = holder[0]
            source, env = _init_source(fields_, frozen, post_init)
            exec(compile(source, f"<record {cls.__qualname__}.__init__>", "exec"), env)  # noqa: S102
            real = env["__init__"]
            real.__qualname__ = f"{cls.__qualname__}.__init__"
            type.__setattr__(cls, "__init__", real)
            real(self, *args, **kwargs)

        return __init__

    def _getter(names):
        if len(names) >= 2:
            return attrgetter(*names)
        if len(names) == 1:
            one = attrgetter(names[0])
            return lambda obj: (one(obj),)
        return lambda obj: ()

    class _LazyDataclassFields:
        """``__dataclass_fields__`` as real :class:`dataclasses.Field` objects, on demand."""

        def __get__(self, obj, owner):
            import dataclasses

            out = {}
            for f in owner.__record_fields__:
                df = dataclasses.field(
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
                df._field_type = dataclasses._FIELD
                out[f.name] = df
            if "__dataclass_fields__" in owner.__dict__:
                type.__setattr__(owner, "__dataclass_fields__", out)  # built once
            return out

    _LAZY_FIELDS = _LazyDataclassFields()

    def _frozen_error(name):
        import dataclasses

        return dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def _process(cls, init, repr_, eq, order, unsafe_hash, frozen, match_args, kw_only, slots):
        fields_ = _collect(cls, kw_only)
        seen_default = False
        for f in fields_:
            if not f.init or f.kw_only:
                continue
            if f.default is not MISSING or f.default_factory is not MISSING:
                seen_default = True
            elif seen_default and init:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        names = tuple(f.name for f in fields_)
        own = cls.__dict__
        holder = [cls]
        body = dict(own)
        for f in fields_:
            if f.name in own:
                del body[f.name]
        if slots:
            inherited = set()
            for base in cls.__mro__[1:]:
                inherited.update(base.__dict__.get("__slots__", ()))
            body["__slots__"] = tuple(n for n in names if n not in inherited)
            body.pop("__dict__", None)
            body.pop("__weakref__", None)
            new = type(cls)(cls.__name__, cls.__bases__, body)
            new.__qualname__ = cls.__qualname__
            cls = new
        else:
            for f in fields_:
                if f.name in own:
                    if f.default is not MISSING:
                        type.__setattr__(cls, f.name, f.default)
                    else:
                        type.__delattr__(cls, f.name)
        holder[0] = cls

        def put(name, value):
            if name not in own:
                type.__setattr__(cls, name, value)

        cls.__record_fields__ = fields_
        cls.__dataclass_fields__ = _LAZY_FIELDS
        if init:
            post_init = hasattr(cls, "__post_init__")
            put("__init__", _make_init(holder, fields_, frozen, post_init))
        if repr_:
            shown = tuple(f.name for f in fields_ if f.repr)

            def __repr__(self):
                inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
                return f"{type(self).__qualname__}({inner})"

            put("__repr__", __repr__)
        key = _getter(tuple(f.name for f in fields_ if f.compare))
        if eq:

            def __eq__(self, other):
                if other.__class__ is self.__class__:
                    return key(self) == key(other)
                return NotImplemented

            put("__eq__", __eq__)
        if order:
            for op_name, op in (
                ("__lt__", lambda a, b: a < b),
                ("__le__", lambda a, b: a <= b),
                ("__gt__", lambda a, b: a > b),
                ("__ge__", lambda a, b: a >= b),
            ):

                def compare(self, other, op=op):
                    if other.__class__ is self.__class__:
                        return op(key(self), key(other))
                    return NotImplemented

                put(op_name, compare)
        class_hash = own.get("__hash__", MISSING)
        explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
        hashed = _getter(
            tuple(f.name for f in fields_ if (f.compare if f.hash is None else f.hash))
        )

        def __hash__(self):
            return hash(hashed(self))

        if unsafe_hash:
            if explicit_hash:
                raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
            type.__setattr__(cls, "__hash__", __hash__)
        elif eq and frozen and not explicit_hash:
            type.__setattr__(cls, "__hash__", __hash__)
        elif eq and not frozen and not explicit_hash:
            type.__setattr__(cls, "__hash__", None)
        if frozen:
            field_names = frozenset(names)

            def __setattr__(self, name, value):
                if type(self) is cls or name in field_names:
                    raise _frozen_error(name)
                super(cls, self).__setattr__(name, value)

            def __delattr__(self, name):
                if type(self) is cls or name in field_names:
                    raise _frozen_error(name)
                super(cls, self).__delattr__(name)

            put("__setattr__", __setattr__)
            put("__delattr__", __delattr__)
            if slots:

                def __getstate__(self):
                    return [getattr(self, n) for n in names]

                def __setstate__(self, state):
                    for n, v in zip(names, state, strict=True):
                        object.__setattr__(self, n, v)

                put("__getstate__", __getstate__)
                put("__setstate__", __setstate__)
        if match_args:
            put("__match_args__", tuple(f.name for f in fields_ if f.init and not f.kw_only))
        return cls

    def dataclass(
        cls=None,
        /,
        *,
        init=True,
        repr=True,
        eq=True,
        order=False,
        unsafe_hash=False,
        frozen=False,
        match_args=True,
        kw_only=False,
        slots=False,
    ):
        def wrap(c):
            return _process(
                c, init, repr, eq, order, unsafe_hash, frozen, match_args, kw_only, slots
            )

        return wrap if cls is None else wrap(cls)

    def fields(obj):
        cls = obj if isinstance(obj, type) else type(obj)
        found = getattr(cls, "__record_fields__", None)
        if found is None:
            import dataclasses

            return dataclasses.fields(obj)
        return found

    _ATOMS = (str, int, float, bool, bytes, type(None))

    def _asdict(obj, factory):
        if type(obj) in _ATOMS:
            return obj
        found = getattr(type(obj), "__record_fields__", None)
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

    def asdict(obj, *, dict_factory=dict):
        if getattr(type(obj), "__record_fields__", None) is None:
            import dataclasses

            return dataclasses.asdict(obj, dict_factory=dict_factory)
        return _asdict(obj, dict_factory)

    def replace(obj, /, **changes):
        found = getattr(type(obj), "__record_fields__", None)
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


__all__ = ["asdict", "dataclass", "field", "fields", "replace"]
