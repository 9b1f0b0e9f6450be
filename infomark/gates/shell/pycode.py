"""Is a piece of inline Python read-only? Decided from its AST (``ast.parse``, never run).

Read-only means: nothing in the program *states* a write. Every value is traced (flow-
insensitively, to a fixpoint) to where it may come from:

- ``STRICT``: the standard library, builtins used as values, parameters, anything unknown.
  Only names known to be read-only may be used on it (:data:`_READ_ATTRS`), calls only of
  pure builtins (:data:`_PURE_BUILTINS`) or of read-only names imported from it;
- ``DATA``: literals and what pure builtins return (``str(x)``, ``len(x)``): also the methods
  of the builtin types (``"a".replace``, ``[].append``), which change nothing outside memory;
- ``LENIENT``: a third-party or project module, the functions and classes the code defines,
  and what they return. Calling into them runs code the classifier cannot see, exactly like
  importing them or running a script (the fingerprint and change feed watch what it does), so
  it is accepted, unless the name says it writes, deletes or runs code (every callable name of
  the standard library's writing modules, :mod:`.pywriters`, and the usual verbs of other
  libraries: ``save``, ``to_csv``, ``update`` …). An attribute that names a standard-library
  module (``numpy.os``) or a dunder (``x.__dict__``) leads back to ``STRICT``.

Whatever the origin, these are never read-only: ``exec``/``eval``/``compile``/``setattr``/
``vars``/``globals``/``__import__`` of a computed name, ``getattr`` with a computed name, a
write mode (``open(p, "w")``, ``h5py.File(p, "a")``, ``mode="w+"``, ``"w:gz"``) or a write
switch (``inplace=True``) handed to any call, assigning or deleting an attribute, importing a
module that runs code hidden in data (``pickle``, ``marshal``, ``shelve`` …).

Code that mentions ``infomark`` is reported, so self-invocation through Python is caught.
"""

from __future__ import annotations

import ast
import builtins as _builtins
import re
import sys

from infomark.gates.shell.core import ws
from infomark.gates.shell.pywriters import STD_WRITERS
from infomark.kernel.records import dataclass, field

__all__ = ["PyVerdict", "analyse_python"]

_MAX_CODE = 200_000


_EXCEPTIONS = frozenset(
    n for n, v in vars(_builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
)
_PURE_BUILTINS = _EXCEPTIONS | ws(
    "print len str repr sorted list dict set frozenset tuple int float bool complex bytes range "
    "enumerate zip map filter min max sum any all type isinstance issubclass hasattr format hex "
    "oct bin ord chr abs round divmod pow id hash iter next reversed slice callable ascii open "
    "exit quit input dir memoryview bytearray property staticmethod classmethod super object "
    "getattr locals NotImplemented Ellipsis"
)
# Builtins whose result is plain data whatever they are given (`type()` is not: it returns a
# class, whose methods may write).
_DATA_BUILTINS = ws(
    "str repr len int float bool complex bytes bytearray memoryview hex oct bin ord chr abs "
    "round format ascii hash id isinstance issubclass callable hasattr divmod dir"
)
_FORBIDDEN_NAMES = ws(
    "exec eval compile __import__ __builtins__ globals setattr delattr vars breakpoint help"
)
_READ_DUNDERS = ws(
    "__version__ __file__ __name__ __path__ __doc__ __spec__ __loader__ __package__ __all__ "
    "__qualname__ __module__ __annotations__ __wrapped__ __mro__ __version_info__ __author__ "
    "__cached__ __bases__"
)
# Standard-library modules that write, run or load code: an attribute of a third-party object
# with one of these names (`numpy.os`, `pkg.builtins`) leads back to STRICT.
_DANGEROUS_STDLIB = ws(
    "os posix nt sys builtins shutil subprocess io _io pathlib importlib ctypes pickle _pickle "
    "marshal code codeop runpy pty socket tempfile multiprocessing threading _thread asyncio "
    "signal sqlite3 shelve dbm zipfile tarfile gzip bz2 lzma webbrowser urllib http ftplib "
    "smtplib logging fileinput compileall py_compile venv ensurepip distutils pdb mmap fcntl "
    "resource gc types operator functools inspect codecs zipapp filecmp site sysconfig"
)
# Callables that look an attribute up by a name given as data (only constant, read-only names),
# and `open`: never passed around as values (`map(open, ["f"], ["w"])` opens for writing).
_LOOKUPS = ws("getattr attrgetter methodcaller open")
# Modules that run code hidden in the data they load.
_CODE_LOADERS = ws("pickle _pickle cPickle marshal shelve dill cloudpickle joblib copyreg")
_READ_ATTRS = ws(
    "__version__ __file__ __name__ __path__ __doc__ VERSION version version_info get_version "
    "python_version python_implementation platform machine node release architecture uname "
    "executable prefix base_prefix exec_prefix path argv modules maxsize byteorder implementation "
    "hexversion api_version flags float_info getrecursionlimit getdefaultencoding "
    "getfilesystemencoding stdout stderr stdin environ getenv get cwd getcwd listdir scandir walk "
    "exists isfile isdir islink isabs abspath realpath relpath normpath dirname basename join "
    "splitext split getsize getmtime stat lstat expanduser glob iglob iterdir is_file is_dir "
    "is_symlink read_text read_bytes read readline readlines resolve absolute parent parents name "
    "stem suffix suffixes parts Path PurePath open items keys values count index find rfind "
    "startswith endswith strip lstrip rstrip lower upper title splitlines encode decode format "
    "dumps loads load JSONDecodeError dedent indent pformat pprint sqrt floor ceil pi e inf nan "
    "isnan isinf log exp sin cos tan now today date time datetime timedelta isoformat strftime "
    "strptime timestamp utcnow version_tuple metadata distribution distributions requires "
    "entry_points files import_module find_spec util machinery resources origin loader spec "
    "submodule_search_locations __spec__ __loader__ __package__ __all__ exit dtype shape ndim "
    "size array arange zeros ones mean std tolist head tail describe columns info tobytes "
    "hexdigest digest md5 sha1 sha256 sha512 blake2b new compile match search fullmatch findall "
    "finditer sub group groups groupdict span start end escape IGNORECASE MULTILINE DOTALL i m s "
    "I M S X VERBOSE Counter OrderedDict defaultdict namedtuple deque most_common append extend "
    "add pop popleft insert setdefault sort reverse union intersection difference issubset "
    "isdigit isalpha isalnum isspace zfill center ljust rjust partition rpartition casefold "
    "expandtabs translate maketrans hex fromhex bit_length real imag conjugate numerator "
    "denominator signature getsource getmembers getmodule getfile isclass isfunction ismodule "
    "__qualname__ __module__ __annotations__ __wrapped__ mro system_info getlocale nlargest "
    "nsmallest reduce partial lru_cache cache chain product permutations combinations groupby "
    "islice tee accumulate cycle repeat starmap zip_longest which get_terminal_size cpu_count "
    "getpid getppid getuid getgid getlogin sep linesep pathsep curdir pardir devnull "
    # more pure reads of the standard library (decimal, datetime, typing, inspect, unicodedata,
    # urllib.parse, zipfile listings …), seen in real agents' one-liners
    "_xoptions get_int_max_str_digits float_repr_style int_info hash_info thread_info getsizeof "
    "builtin_module_names stdlib_module_names orig_argv platlibdir abiflags warnoptions "
    "Decimal Fraction as_tuple is_signed is_zero is_nan is_infinite is_finite copy_sign "
    "quantize normalize adjusted to_integral_value localcontext getcontext limit_denominator "
    "year month day hour minute second microsecond tzinfo utc timezone fromisoformat "
    "fromtimestamp fromordinal weekday isoweekday isocalendar total_seconds days seconds "
    "microseconds utcoffset tzname astimezone combine monotonic perf_counter sleep gmtime "
    "localtime mktime ctime asctime calendar monthrange isleap "
    "TypeVar Tuple List Dict Set Optional Union Any Callable Literal Generic Protocol "
    "get_type_hints get_origin get_args cast overload final "
    "ismethod isbuiltin isroutine getdoc getmro isabstract iscoroutinefunction "
    "isgeneratorfunction getfullargspec getsourcelines getsourcefile getmodulename cleandoc "
    "Parameter Signature parameters return_annotation kind default empty annotation bind "
    "bind_partial POSITIONAL_OR_KEYWORD KEYWORD_ONLY VAR_POSITIONAL VAR_KEYWORD "
    "fields asdict astuple is_dataclass dataclass total_ordering wraps cached_property "
    "singledispatch itemgetter deepcopy literal_eval parse dump walk "
    "NodeVisitor iter_child_nodes unparse Expression Module body "
    "isidentifier iskeyword kwlist printable ascii_letters ascii_lowercase ascii_uppercase "
    "digits hexdigits punctuation whitespace capwords Template substitute safe_substitute "
    "shorten wrap fill getpreferredencoding calcsize pack unpack unpack_from b64encode "
    "b64decode urlsafe_b64encode urlsafe_b64decode hexlify unhexlify crc32 adler32 uuid4 uuid1 "
    "UUID ip_address ip_network ip_interface unescape SequenceMatcher unified_diff ndiff "
    "context_diff get_close_matches ratio get_opcodes urlparse urlsplit urlunsplit urlunparse "
    "urljoin urlencode quote quote_plus unquote unquote_plus parse_qs parse_qsl netloc scheme "
    "query fragment hostname port username password "
    "category combining normalize east_asian_width decimal numeric lookup unidata_version "
    "guess_type guess_extension getsitepackages getusersitepackages get_paths get_path "
    "get_config_var get_config_vars get_platform get_python_version iter_modules "
    "namelist infolist getnames getmembers filename file_size compress_size "
    "reader DictReader Sniffer sniff has_header "
    "warn simplefilter filterwarnings catch_warnings "
    "LooseVersion StrictVersion Version parse_version vstring "
    "getLogger getEffectiveLevel isEnabledFor level levelname "
    "nan isfinite isclose gcd lcm factorial comb perm log2 log10 fabs fmod trunc hypot "
    "atan atan2 radians degrees fsum prod median mean_ median_low median_high stdev variance "
    "mode quantiles TestCase setUpClass ZipFile TarFile fix_missing_locations keywords "
    "get_source_segment NameConstant Constant Name Load Context "
) - {"system"}
_WRITE_MODES = frozenset("wax+")
STRICT, LENIENT, DATA = 0, 1, 2  # where a value comes from (see _Checker)
_FIXPOINT = 8
_DATA_METHODS = frozenset(
    n
    for t in (str, bytes, bytearray, list, dict, set, frozenset, tuple, int, float, complex, range)
    for n in dir(t)
    if not n.startswith("_")
)
# Names that write, delete, run or load code when reached through a third-party or project
# object: the standard library's own (generated) and the usual verbs of other libraries.
_LENIENT_DENY = (STD_WRITERS - _READ_ATTRS - _PURE_BUILTINS) | ws("load loads")
# A name that *contains* one of these writes or runs (`do_remove`, `cmdexec`, `auto_save`);
# one that *starts* with one of the others does (`mkpath`, `create_all`, `update`).
_WRITE_ANYWHERE = re.compile(
    r"write|save|dump(?!s$)|remove|delete|unlink|rmtree|exec|system|popen|spawn|install|"
    r"migrate|rename|truncate|touch|chmod|chown|symlink|hardlink|upload|commit|call_command|"
    r"tofile|imsave|imwrite|overwrite|erase|purge|wipe",
    re.IGNORECASE,
)
_WRITE_PREFIX = re.compile(
    r"mk|rm|del_|copy|move|flush|download|rollback|sync|persist|store|creat|drop|insert|"
    r"checkout|stash|push|pull|merge|rebase|restore|revert|cherry_pick|git$|"
    r"update|replace|clean|destroy|kill|terminate|send|emit|to_(?:csv|excel|feather|hdf|json|"
    r"latex|netcdf|parquet|pickle|sql|stata|zarr|html|markdown|file|clipboard|xml|orc|gbq)",
    re.IGNORECASE,
)
_MODE = re.compile(r"[rwabxtU+]{1,4}(?:[:|][a-z0-9]*)?")  # open modes, tarfile's `w:gz`


def _is_write_mode(value: object) -> bool:
    """``"w"``, ``"a+"``, ``"rb+"``, tarfile's ``"w:gz"`` / ``"w|xz"``: a mode that writes."""
    if isinstance(value, bytes):  # `libc.fopen(b"f", b"w")`
        value = value.decode("latin-1")
    return (
        isinstance(value, str)
        and _MODE.fullmatch(value) is not None
        and bool(set(re.split(r"[:|]", value)[0]) & _WRITE_MODES)
    )


_WRITE_KEYWORDS = ws("inplace in_place overwrite allow_pickle write delete")


def _module(name: str) -> int:
    """Where an imported module's names come from."""
    root = name.split(".")[0]
    return STRICT if root in sys.stdlib_module_names or root in ("", "infomark") else LENIENT


def _writes_by_name(name: str) -> bool:
    return bool(_WRITE_ANYWHERE.search(name) or _WRITE_PREFIX.match(name.lstrip("_")))


def _write_arguments(node: ast.Call) -> str:
    """A call handed a write mode (``h5py.File(p, "w")``, ``mode="a"``) or a write switch
    (``inplace=True``), whatever it calls."""
    for k, arg in enumerate(node.args):
        if k and isinstance(arg, ast.Constant) and _is_write_mode(arg.value):
            return f"passes the write mode {arg.value!r}"
    for kw in node.keywords:
        value = kw.value
        if kw.arg in ("mode", "filemode") and not (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and not set(value.value) & _WRITE_MODES
        ):
            return f"passes a write mode ({kw.arg}=)"
        if kw.arg in _WRITE_KEYWORDS and not (
            isinstance(value, ast.Constant) and value.value in (False, None)
        ):
            return f"passes {kw.arg}="
    return ""


@dataclass(slots=True)
class PyVerdict:
    """``read_only`` when the code provably only reads; ``why`` names the first thing that is
    not known to be read-only; ``infomark`` when the code names infomark; ``reads`` are the
    constant paths it opens for reading."""

    read_only: bool
    why: str = ""
    infomark: bool = False
    reads: list[str] = field(default_factory=list)
    opaque_reads: bool = False  # it opens a path computed at run time
    walks: list[str | None] = field(default_factory=list)  # trees it copies or deletes
    shell: list[str | None] = field(default_factory=list)  # command lines it runs


def analyse_python(code: str) -> PyVerdict:
    """Decide from the AST of ``code`` whether it only reads. Never runs it, never raises."""
    names_infomark = "infomark" in code
    if len(code) > _MAX_CODE:
        return PyVerdict(False, "is too long to analyse", names_infomark)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return PyVerdict(False, "does not parse as Python", names_infomark)
    try:
        verdict = _Checker().check(tree)
    except RecursionError:
        verdict = PyVerdict(False, "is nested too deeply to analyse")
    verdict.infomark = verdict.infomark or names_infomark
    _reach(tree, verdict)
    return verdict


_OPENERS = ws("open read_text read_bytes")
_TREE_COPIES = ws("copytree make_archive rmtree copy_tree remove_tree")
_FILE_COPIES = ws("copy copyfile copy2 copyfileobj move")
_RUNNERS = ws(
    "system popen run call check_call check_output Popen getoutput getstatusoutput spawnl "
    "spawnlp spawnv spawnvp execl execlp execv execvp startfile"
)


def _const(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _path_of(node: ast.expr) -> tuple[bool, str | None]:
    """``(known, path)`` for ``Path("x")`` / ``"x"``; ``(False, None)`` when computed."""
    if (v := _const(node)) is not None:
        return True, v
    if isinstance(node, ast.Call) and node.args:
        fn = node.func
        name = (
            fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        )
        if name in ("Path", "PurePath", "PosixPath") and len(node.args) == 1:
            return _path_of(node.args[0])
    return False, None


def _reach(tree: ast.Module, verdict: PyVerdict) -> None:
    """What the code reads, copies, deletes and runs, whatever the read-only verdict: a
    computed path it opens makes it opaque; trees it copies are walks; command lines it runs
    are classified as shell."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = (
            fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        )
        first = node.args[0] if node.args else None
        if name in _OPENERS:
            target = first
            if (isinstance(fn, ast.Attribute) and name != "open") or (
                isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Call)
            ):
                target = fn.value  # Path("x").read_text(), Path("x").open()
            known, path = _path_of(target) if target is not None else (False, None)
            if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and name == "open":
                known, path = _path_of(first) if first is not None else (False, None)
            if not known:
                verdict.opaque_reads = True
            elif path is not None:
                verdict.reads.append(path)
        elif name in _TREE_COPIES:
            src = first
            if name == "make_archive":
                src = next((k.value for k in node.keywords if k.arg == "root_dir"), None)
                src = src if src is not None else (node.args[2] if len(node.args) > 2 else None)
                if src is None:
                    verdict.walks.append(".")
                    continue
            verdict.walks.append(_path_of(src)[1] if src is not None else None)
        elif name in _FILE_COPIES and isinstance(fn, ast.Attribute) and first is not None:
            known, path = _path_of(first)
            if not known:
                verdict.opaque_reads = True
            elif path is not None:
                verdict.reads.append(path)
        elif name in _RUNNERS and isinstance(fn, ast.Attribute | ast.Name) and first is not None:
            if (code := _const(first)) is not None:
                verdict.shell.append(code)
            elif isinstance(first, ast.List | ast.Tuple) and all(
                _const(e) is not None for e in first.elts
            ):
                import shlex

                verdict.shell.append(shlex.join(_const(e) or "" for e in first.elts))
            else:
                verdict.shell.append(None)


class _Checker:
    """Two passes: where every name's value may come from (:data:`STRICT`, :data:`LENIENT`,
    :data:`DATA`, to a fixpoint, flow-insensitive), then every node against the rules."""

    def __init__(self) -> None:
        self.defined: set[str] = set()
        self.imported_ok: set[str] = set()  # `from <stdlib> import n` with n read-only
        self.origins: dict[str, set[int]] = {}
        self.reads: list[str] = []
        self.dynamic_import = False
        self.callees: set[int] = set()

    def check(self, tree: ast.Module) -> PyVerdict:
        self._bind_all(tree)
        for node in ast.walk(tree):
            why = self._node(node)
            if why:
                return PyVerdict(False, why, self.dynamic_import, self.reads)
        return PyVerdict(True, reads=self.reads)

    # -- where values come from ------------------------------------------------------------

    def _bind_all(self, tree: ast.Module) -> None:
        nodes = list(ast.walk(tree))
        self.callees = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)
                self._bind(node.name, {LENIENT})
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self._bind((alias.asname or alias.name).split(".")[0], {_module(alias.name)})
            elif isinstance(node, ast.ImportFrom):
                source = _module(node.module or "") if not node.level else LENIENT
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if source == STRICT and alias.name in _READ_ATTRS:
                        self.imported_ok.add(bound)
                    stdmod = alias.name in _DANGEROUS_STDLIB
                    self._bind(bound, {STRICT if stdmod else source})
            elif isinstance(node, ast.arg):
                self._bind(node.arg, {STRICT})
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(node.name, {STRICT})
        for _ in range(_FIXPOINT):
            before = {k: len(v) for k, v in self.origins.items()}
            for node in nodes:
                self._bind_value(node)
            if before == {k: len(v) for k, v in self.origins.items()}:
                return
        for names in self.origins.values():  # not settled: every name may be anything
            names.add(STRICT)

    def _bind_value(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, self._origin(node.value))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value:
            self._bind_target(node.target, self._origin(node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._bind_target(node.target, self._origin(node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind_target(node.optional_vars, self._origin(node.context_expr))

    def _bind_target(self, target: ast.expr, origin: set[int]) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, origin)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._bind_target(elt, origin)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, origin)

    def _bind(self, name: str, origin: set[int]) -> None:
        self.origins.setdefault(name, set()).update(origin)

    def _origin(self, node: ast.expr) -> set[int]:
        """Where the value of ``node`` may come from (every possibility)."""
        if isinstance(node, ast.Constant | ast.JoinedStr | ast.FormattedValue):
            return {DATA}
        if isinstance(node, ast.Name):
            if node.id in _DATA_BUILTINS:
                return {STRICT}  # the function itself, not a value it returns
            return set(self.origins.get(node.id, {STRICT}))
        if isinstance(node, ast.Attribute):
            if node.attr in _DANGEROUS_STDLIB or node.attr.startswith("__"):
                return {STRICT}  # `numpy.os`, `x.__class__`: the standard library again
            return self._origin(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _DATA_BUILTINS:
                return {DATA}
            if isinstance(func, ast.Name) and func.id in _PURE_BUILTINS:
                parts = [*node.args, *(k.value for k in node.keywords)]
                return set().union(*(self._origin(a) for a in parts)) if parts else {DATA}
            return self._origin(func)
        if isinstance(node, ast.Subscript | ast.Starred | ast.Await):
            return self._origin(node.value)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return set().union({DATA}, *(self._origin(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            parts = [*(k for k in node.keys if k is not None), *node.values]
            return set().union({DATA}, *(self._origin(p) for p in parts))
        if isinstance(node, ast.BinOp):
            return self._origin(node.left) | self._origin(node.right)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self._origin(v) for v in node.values))
        if isinstance(node, ast.UnaryOp | ast.Compare):
            return {DATA}
        if isinstance(node, ast.IfExp):
            return self._origin(node.body) | self._origin(node.orelse)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return {DATA} | self._origin(node.elt)
        if isinstance(node, ast.DictComp):
            return {DATA} | self._origin(node.key) | self._origin(node.value)
        if isinstance(node, ast.Lambda):
            return {LENIENT}
        return {STRICT}

    # -- the rules --------------------------------------------------------------------------

    def _binds(self, name: str) -> str:
        if name in _PURE_BUILTINS or name in self.imported_ok:
            return f"rebinds `{name}`"
        return ""

    def _node(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store | ast.Del):
                return self._binds(node.id)
            if node.id in _FORBIDDEN_NAMES:
                return f"uses `{node.id}`"
            if node.id in _LOOKUPS and id(node) not in self.callees:
                return f"passes `{node.id}` around (a lookup by a computed name)"
            return ""
        if isinstance(node, ast.Attribute):
            if not isinstance(node.ctx, ast.Load):
                return f"assigns attribute `{node.attr}`"
            return self._attribute(node.value, node.attr, node)
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Attribute):
                return "assigns into an attribute (e.g. os.environ)"
            return ""
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for module in [*modules, getattr(node, "module", None) or ""]:
                if module.split(".")[0] in _CODE_LOADERS:
                    return f"imports `{module}`, which runs code hidden in the data it loads"
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".")[0]
                if isinstance(node, ast.ImportFrom) and alias.name in _READ_ATTRS:
                    continue  # the binding that made the name callable
                why = self._binds(bound)
                if why:
                    return why
            return ""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return self._binds(node.name)
        if isinstance(node, ast.Call):
            return self._call(node)
        return ""

    def _attribute(self, value: ast.expr, attr: str, node: ast.Attribute | None) -> str:
        if attr.startswith("__") and attr not in _READ_DUNDERS:
            return f"uses `.{attr}`, which reaches the interpreter's internals"
        if node is not None and _std_stream_write(node):
            return ""
        if attr == "open" and node is not None and id(node) not in self.callees:
            return "passes `.open` around (it may be called with a write mode)"
        for origin in self._origin(value):
            if origin == LENIENT and (attr in _LENIENT_DENY or _writes_by_name(attr)):
                return f"calls `.{attr}`, a name that writes, deletes or runs code"
            if origin == DATA and attr not in _READ_ATTRS and attr not in _DATA_METHODS:
                return f"uses `.{attr}`, which is not known to be read-only"
            if origin == STRICT and attr not in _READ_ATTRS:
                return f"uses `.{attr}`, which is not known to be read-only"
        return ""

    def _call(self, node: ast.Call) -> str:
        if why := _write_arguments(node):
            return why
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
            if name == "__import__" and not (
                node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                self.dynamic_import = True
                return "imports a computed module (it may be infomark)"
            if name == "open":
                return self._open(node)
            if name in ("attrgetter", "methodcaller"):
                return _constant_lookups(node)
            if name == "getattr":
                attr = node.args[1] if len(node.args) > 1 else None
                if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                    return "calls `getattr()` with a computed name"
                return self._attribute(node.args[0], attr.value, None)
            if name in _PURE_BUILTINS or name in self.defined or name in self.imported_ok:
                return ""
            origin = self.origins.get(name, {STRICT})
            if STRICT not in origin and DATA not in origin:  # from a third-party module
                if name in _LENIENT_DENY or _writes_by_name(name):
                    return f"calls `{name}()`, a name that writes, deletes or runs code"
                return ""
            return f"calls `{name}()`, which is not known to be read-only"
        if isinstance(func, ast.Attribute):
            if func.attr in ("import_module", "find_spec", "__import__") and not (
                node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                self.dynamic_import = True
                return "imports a computed module (it may be infomark)"
            if func.attr in ("attrgetter", "methodcaller"):
                return _constant_lookups(node)
            if func.attr == "open" and not _attr_open_reads(node):
                return "opens a file for writing"
            return ""  # the attribute itself is checked as an Attribute node
        if isinstance(func, ast.Call | ast.Subscript | ast.Lambda):
            return ""  # its parts are checked on their own; the result is one of them
        return "calls a computed function"

    def _open(self, node: ast.Call) -> str:
        if not self._read_mode(node, 1):
            return "opens a file for writing"
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            self.reads.append(first.value)
        return ""

    @staticmethod
    def _read_mode(node: ast.Call, position: int) -> bool:
        mode: ast.expr | None = node.args[position] if len(node.args) > position else None
        for kw in node.keywords:
            if kw.arg == "mode":
                mode = kw.value
            elif kw.arg is None:
                return False  # **kwargs could carry a mode
        if mode is None:
            return True
        return (
            isinstance(mode, ast.Constant)
            and isinstance(mode.value, str)
            and not set(mode.value) & _WRITE_MODES
        )


def _constant_lookups(node: ast.Call) -> str:
    """``operator.attrgetter("a.b")`` / ``methodcaller("m")``: a getattr by name; every name
    must be a constant known to be read-only (the object it is applied to is not known)."""
    names = node.args if node.func and _callee(node) == "attrgetter" else node.args[:1]
    for arg in names:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return f"calls `{_callee(node)}()` with a computed name"
        for part in arg.value.split("."):
            if part not in _READ_ATTRS:
                return f"looks up `{part}` by name, which is not known to be read-only"
    return ""


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _std_stream_write(node: ast.Attribute) -> bool:
    """``sys.stdout.write`` / ``sys.stderr.write`` print; they do not write files."""
    inner = node.value
    return (
        node.attr in ("write", "flush")
        and isinstance(inner, ast.Attribute)
        and inner.attr in ("stdout", "stderr")
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "sys"
    )


def _attr_open_reads(node: ast.Call) -> bool:
    """``Path(p).open()``, ``gzip.open(p)``, ``io.open(p, "rb")``: read-only when every mode-like
    argument is a constant read mode (``os.open(p, flags)`` is not decidable: not read-only)."""
    for kw in node.keywords:
        if kw.arg is None or kw.arg in ("mode", "flags"):
            value = kw.value
            if not (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and not set(value.value) & _WRITE_MODES
            ):
                return False
    for k, arg in enumerate(node.args):
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if _is_write_mode(arg.value):
                return False
        elif k > 0:
            return False
    return True
