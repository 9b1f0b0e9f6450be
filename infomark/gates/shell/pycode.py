"""Is a piece of inline Python read-only? Decided from its AST (``ast.parse``, never run).

Read-only means: it only imports, computes, prints and opens files for reading. Decided by an
allow-list, so anything not known to be harmless is *not* read-only:

- every call's callee is a builtin from :data:`_PURE_BUILTINS` (not rebound by the code), a
  function or class the code itself defines, a name imported with ``from m import n`` where
  ``n`` is an allowed attribute, or an attribute whose name is in :data:`_READ_ATTRS`;
- every attribute the code touches (called or not: ``sorted(x, key=os.remove)``) is in
  :data:`_READ_ATTRS`; no attribute, subscript of a module or global is assigned;
- ``open()`` gets a constant mode without ``w``, ``a``, ``x`` or ``+``.

Code that mentions ``infomark`` is reported, so self-invocation through Python is caught.
"""

from __future__ import annotations

import ast

from infomark.gates.shell.core import ws
from infomark.kernel.records import dataclass, field

__all__ = ["PyVerdict", "analyse_python"]

_MAX_CODE = 200_000

_PURE_BUILTINS = ws(
    "print len str repr sorted list dict set frozenset tuple int float bool complex bytes range "
    "enumerate zip map filter min max sum any all type isinstance issubclass hasattr format hex "
    "oct bin ord chr abs round divmod pow id hash iter next reversed slice callable ascii open "
    "Exception ValueError TypeError KeyError RuntimeError SystemExit AssertionError ImportError "
    "StopIteration exit quit input dir "
)
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
) - {"system"}
_WRITE_MODES = frozenset("wax+")


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
    def __init__(self) -> None:
        self.defined: set[str] = set()
        self.imported_ok: set[str] = set()
        self.reads: list[str] = []
        self.dynamic_import = False

    def check(self, tree: ast.Module) -> PyVerdict:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in _READ_ATTRS:
                        self.imported_ok.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            why = self._node(node)
            if why:
                return PyVerdict(False, why, self.dynamic_import, self.reads)
        return PyVerdict(True, reads=self.reads)

    def _binds(self, name: str) -> str:
        if name in _PURE_BUILTINS or name in self.imported_ok:
            return f"rebinds `{name}`"
        return ""

    def _node(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store | ast.Del):
                return self._binds(node.id)
            if node.id in ("exec", "eval", "__import__", "__builtins__", "globals", "setattr"):
                return f"uses `{node.id}`"
            return ""
        if isinstance(node, ast.Attribute):
            if not isinstance(node.ctx, ast.Load):
                return f"assigns attribute `{node.attr}`"
            if node.attr not in _READ_ATTRS and not _std_stream_write(node):
                return f"uses `.{node.attr}`, which is not known to be read-only"
            return ""
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Attribute):
                return "assigns into an attribute (e.g. os.environ)"
            return ""
        if isinstance(node, ast.Import | ast.ImportFrom):
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

    def _call(self, node: ast.Call) -> str:
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
            if name in _PURE_BUILTINS or name in self.defined or name in self.imported_ok:
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
            if (
                len(arg.value) <= 3
                and set(arg.value) <= set("rwabxt+U")
                and (set(arg.value) & _WRITE_MODES)
            ):
                return False
        elif k > 0:
            return False
    return True
