"""What pytest, unittest, tox and nox read: their configuration, rootdir, conftests, tests.

pytest (≥ 9, ``_pytest/config/findpaths.py``): from the common ancestor of the arguments (the
invocation directory when there are none) upwards, the first directory holding a file with
pytest configuration wins, trying in each directory ``pytest.toml``, ``.pytest.toml``,
``pytest.ini``, ``.pytest.ini`` (these four even when empty), ``pyproject.toml`` (with
``[tool.pytest]`` / ``[tool.pytest.ini_options]``), ``tox.ini`` (``[pytest]``), ``setup.cfg``
(``[tool:pytest]``); ``-c FILE`` replaces the search, ``--rootdir`` the rootdir. With no
configuration, a ``setup.py`` above the ancestor names the rootdir. So every one of those
names in every directory from the collection paths up to the configuration found (to the
filesystem's root when none is found) is on the surface: a new one closer in wins. Conftests:
pytest imports ``conftest.py`` from the confcutdir (the configuration's directory, else the
rootdir) down to each collection path, and from every directory it collects; a test's
``__init__.py`` chain decides its package and imports every ``__init__.py`` on it.
"""

from __future__ import annotations

import configparser
import os
import shlex
import tomllib
from collections.abc import Callable, Iterator, Sequence

from infomark.gates.surface.model import GradingSurface, RunnerCall
from infomark.kernel.regular import read_regular
from infomark.kernel.runners import PYTEST_CONFIG_NAMES, PYTHON_STARTUP_NAMES, RunnerKind

__all__ = [
    "nox_surface",
    "pytest_setup",
    "pytest_surface",
    "tox_surface",
    "unittest_surface",
]

# pytest options that take a value as the next word (the rest are flags or --opt=value).
_PYTEST_VALUE = frozenset(
    {
        "-c",
        "--config-file",
        "--rootdir",
        "--confcutdir",
        "-p",
        "-k",
        "-m",
        "-o",
        "--override-ini",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--import-mode",
        "--basetemp",
        "-W",
        "--pythonwarnings",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--log-file",
        "--log-level",
        "--log-format",
        "--tb",
        "-r",
        "--maxfail",
        "--durations",
        "--durations-min",
        "--capture",
        "--color",
        "--code-highlight",
        "--debug",
        "-n",
        "--numprocesses",
        "--dist",
        "--maxprocesses",
        "--timeout",
        "--timeout-method",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--cov-fail-under",
        "--hypothesis-profile",
        "--hypothesis-seed",
        "--report-log",
        "--doctest-glob",
        "--strict-config",
    }
)
_CACHE_OPTS = frozenset(
    {"--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first"}
    | {"--sw", "--stepwise", "--sw-skip", "--stepwise-skip"}
)
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
_TEST_DIR_NAMES = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_MAX_WALK = 20_000


class _Opts:
    """The pytest options discovery needs, from the command line then ``addopts``."""

    def __init__(self) -> None:
        self.inifile: str | None = None
        self.rootdir: str | None = None
        self.confcutdir: str | None = None
        self.plugins: list[str] = []
        self.paths: list[str] = []
        self.pyargs = False
        self.noconftest = False
        self.cache = False  # --lf / --ff / --nf / --sw read .pytest_cache

    def read(self, args: Sequence[str], *, positional: bool = True) -> None:
        i = 0
        while i < len(args):
            a = args[i]
            i += 1
            if a == "--":
                if positional:
                    self.paths.extend(args[i:])
                break
            if not a.startswith("-") or a == "-":
                if positional:
                    self.paths.append(a)
                continue
            opt, eq, inline = a.partition("=")
            value: str | None = inline if eq else None
            if value is None and opt in _PYTEST_VALUE:
                value = args[i] if i < len(args) else None
                i += 1
            if value is None and opt.startswith("-p") and len(opt) > 2 and opt[1] == "p":
                opt, value = "-p", opt[2:]
            if value is None and opt.startswith("-c") and len(opt) > 2 and not opt.startswith("--"):
                opt, value = "-c", opt[2:]
            self._one(opt, value)

    def _one(self, opt: str, value: str | None) -> None:
        if opt in ("-c", "--config-file") and value:
            self.inifile = value
        elif opt == "--rootdir" and value:
            self.rootdir = value
        elif opt == "--confcutdir" and value:
            self.confcutdir = value
        elif opt == "-p" and value and not value.startswith("no:"):
            self.plugins.append(value)
        elif opt == "--pyargs":
            self.pyargs = True
        elif opt == "--noconftest":
            self.noconftest = True
        elif opt in _CACHE_OPTS:
            self.cache = True


def _has_config(path: str) -> bool:
    """pytest would take its configuration from ``path`` (its loader returns a dict)."""
    name = os.path.basename(path)
    if not os.path.isfile(path):
        return False
    if name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        return True
    try:
        if name == "pyproject.toml":
            doc = tomllib.loads(read_regular(path).decode("utf-8"))
            tool = doc.get("tool")
            return isinstance(tool, dict) and isinstance(tool.get("pytest"), dict)
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        parser.read_string(read_regular(path).decode("utf-8"), source=path)
    except (OSError, ValueError, tomllib.TOMLDecodeError, configparser.Error):
        return True  # pytest would fail on it: it is configuration all the same
    return parser.has_section("pytest" if name == "tox.ini" else "tool:pytest")


def _ini_values(path: str) -> dict[str, list[str]]:
    """``addopts``, ``testpaths``, ``python_files``, ``pythonpath``, ``norecursedirs`` …"""
    name = os.path.basename(path)
    raw: dict[str, object] = {}
    try:
        if name.endswith(".toml"):
            doc = tomllib.loads(read_regular(path).decode("utf-8"))
            if name == "pyproject.toml" or "pytest" not in doc:
                tool = doc.get("tool", {})
                table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
                if isinstance(table, dict):
                    raw = table.get("ini_options", table)
            else:
                raw = doc["pytest"]
        else:
            parser = configparser.RawConfigParser(strict=False, interpolation=None)
            parser.read(path, encoding="utf-8")
            section = "tool:pytest" if name == "setup.cfg" else "pytest"
            if parser.has_section(section):
                raw = dict(parser.items(section))
    except (OSError, ValueError, tomllib.TOMLDecodeError, configparser.Error):
        return {}
    out: dict[str, list[str]] = {}
    if not isinstance(raw, dict):
        return out
    for key in ("addopts", "testpaths", "python_files", "pythonpath", "norecursedirs"):
        v = raw.get(key)
        if isinstance(v, list):
            out[key] = [str(x) for x in v]
        elif isinstance(v, str):
            try:
                out[key] = shlex.split(v) if key == "addopts" else v.split()
            except ValueError:
                out[key] = v.split()
    req = raw.get("required_plugins")
    if isinstance(req, str | list):
        out["required_plugins"] = req.split() if isinstance(req, str) else [str(x) for x in req]
    return out


def _rel(root: str, path: str) -> str | None:
    """``path`` relative to ``root`` (``/``-separated), None when it is not under it."""
    if path == root:
        return ""
    prefix = root.rstrip(os.sep) + os.sep
    if path.startswith(prefix) and f"{os.sep}." not in path[len(prefix) - 1 :]:
        return path[len(prefix) :]  # the common case, without relpath's normalising
    rel = os.path.relpath(path, root)
    if rel == ".":
        return ""
    if rel.startswith(".."):
        return None
    return rel.replace(os.sep, "/")


class _Collector:
    """Files inside the root, absolute paths above it, globs, notes."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.files: dict[str, None] = {}
        self.above: dict[str, None] = {}
        self.globs: dict[str, None] = {}
        self.notes: list[str] = []

    def surface(
        self,
        kind: RunnerKind,
        call: RunnerCall,
        tests: dict[str, None] | None = None,
        test_globs: dict[str, None] | None = None,
    ) -> GradingSurface:
        return GradingSurface(
            root=self.root,
            kind=kind,
            files=tuple(self.files),
            above=tuple(self.above),
            globs=tuple(self.globs),
            test_globs=tuple(test_globs or ()),
            tests=tuple(tests or ()),
            notes=tuple(self.notes),
            kinds=(kind,),
            calls=(call,),
        )

    def add(self, path: str) -> None:
        path = os.path.normpath(path)
        rel = _rel(self.root, path)
        if rel is None:
            self.above[path] = None
        elif rel:
            self.files[rel] = None


def _ancestors(path: str) -> Iterator[str]:
    yield path
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent
        yield path


def _locate(base: str, col: _Collector) -> str | None:
    """pytest's ``locate_config`` from ``base`` up; every candidate on the way is surface."""
    pyproject: str | None = None
    for d in _ancestors(base):
        for name in PYTEST_CONFIG_NAMES:
            p = os.path.join(d, name)
            col.add(p)
            if name == "pyproject.toml" and pyproject is None and os.path.isfile(p):
                pyproject = p
            if _has_config(p):
                return p
    return pyproject


def _walk_tests(
    root: str, start: str, patterns: Sequence[str], norecurse: Sequence[str]
) -> Iterator[str]:
    import fnmatch

    if os.path.isfile(start):
        yield start
        return
    count = 0
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(
            d for d in dirnames if not any(fnmatch.fnmatchcase(d, p) for p in norecurse)
        )
        for name in sorted(filenames):
            if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                yield os.path.join(dirpath, name)
        count += len(filenames)
        if count > _MAX_WALK:
            return


def pytest_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    """The pytest surface of one pytest call, run from ``root``/``call.cwd``: the steps of
    :data:`PYTEST_STEPS`, in order."""
    p = _Pytest(os.path.abspath(root), call, environ)
    for step in PYTEST_STEPS:
        step(p)
    return p.col.surface(RunnerKind.PYTEST, call, p.tests, p.test_globs)


class _Pytest:
    """One pytest call under discovery: what the steps of :data:`PYTEST_STEPS` read and set,
    and the collector the surface is gathered in."""

    __slots__ = (
        "arg_paths",
        "call",
        "col",
        "confcut",
        "env",
        "ini",
        "inifile",
        "invocation",
        "opts",
        "root",
        "rootdir",
        "starts",
        "test_globs",
        "tests",
    )
    arg_paths: list[str]
    rootdir: str
    inifile: str | None
    ini: dict[str, list[str]]
    confcut: str
    starts: list[str]

    def __init__(self, root: str, call: RunnerCall, environ: dict[str, str]) -> None:
        self.root, self.call = root, call
        self.col = _Collector(root)
        self.invocation = os.path.normpath(os.path.join(root, call.cwd))
        self.opts = _Opts()
        self.env = dict(environ)
        self.env.update(call.env)
        self.tests: dict[str, None] = {}
        self.test_globs: dict[str, None] = {}


def _command_line(p: _Pytest) -> None:
    """The options: ``PYTEST_ADDOPTS`` first, then the call's arguments (their paths)."""
    opts, col = p.opts, p.col
    try:
        opts.read(shlex.split(p.env.get("PYTEST_ADDOPTS", "")))
    except ValueError:
        col.notes.append("PYTEST_ADDOPTS cannot be split: discovery ignored it")
    opts.read(p.call.args)
    args = [a.split("::", 1)[0] for a in opts.paths]
    p.arg_paths = [os.path.normpath(os.path.join(p.invocation, a)) for a in args]
    if opts.pyargs:
        col.notes.append("--pyargs: test arguments may name installed modules")


def _configuration(p: _Pytest) -> None:
    """The rootdir and configuration file as pytest finds them (``--rootdir`` wins), and the
    configuration's ``addopts``."""
    opts, invocation = p.opts, p.invocation
    existing = [a for a in p.arg_paths if os.path.exists(a)]
    p.rootdir, inifile = _setup(invocation, existing, opts.inifile, p.col)
    if opts.rootdir:
        p.rootdir = os.path.normpath(os.path.join(invocation, os.path.expandvars(opts.rootdir)))
    p.inifile = inifile
    p.ini = ini = _ini_values(inifile) if inifile and _has_config(inifile) else {}
    if ini.get("addopts"):
        opts.read(ini["addopts"])


def _plugins(p: _Pytest) -> None:
    """The plugins the options and ``PYTEST_PLUGINS`` load (their files), and those the
    configuration requires (installed distributions)."""
    opts, ini, col = p.opts, p.ini, p.col
    for plugin in [*opts.plugins, *p.env.get("PYTEST_PLUGINS", "").replace(",", " ").split()]:
        _plugin_files(p.root, p.rootdir, plugin, ini.get("pythonpath", []), col)
    for plugin in ini.get("required_plugins", []):
        col.notes.append(f"required plugin {plugin}: an installed distribution (entry point)")


def _collection_starts(p: _Pytest) -> None:
    """Where collection starts (the arguments, else testpaths from the rootdir, else the
    invocation dir) and where conftest files stop (``--confcutdir``)."""
    opts, invocation, rootdir, ini = p.opts, p.invocation, p.rootdir, p.ini
    p.confcut = (
        os.path.normpath(os.path.join(invocation, opts.confcutdir))
        if opts.confcutdir
        else (os.path.dirname(p.inifile) if p.inifile else rootdir)
    )
    if p.arg_paths:
        p.starts = p.arg_paths
    elif ini.get("testpaths") and os.path.samefile(invocation, rootdir):
        import glob

        p.starts = sorted(
            {
                os.path.normpath(m)
                for t in ini["testpaths"]
                for m in glob.glob(os.path.join(rootdir, t), recursive=True)
            }
        ) or [invocation]
    else:
        p.starts = [invocation]


def _collected_tests(p: _Pytest) -> None:
    """The test files under each start, the helpers and data beside them, and the conftest
    chain of each start and each test directory."""
    root, col, confcut, rootdir = p.root, p.col, p.confcut, p.rootdir
    patterns = p.ini.get("python_files") or ["test_*.py", "*_test.py"]
    norecurse = p.ini.get("norecursedirs") or list(_NORECURSE)
    test_dirs: dict[str, None] = {}
    for start in p.starts:
        start_rel = _rel(root, start)
        if os.path.isfile(start) or start.endswith(".py"):
            col.add(start)  # a test file the oracle names is graded from the baseline
        elif start_rel is not None:
            base = f"{start_rel}/" if start_rel else ""
            for pat in patterns:
                p.test_globs[f"{base}**/{pat}" if "/" not in pat else base + pat] = None
            col.globs[f"{base}**/conftest.py"] = None
        for test in _walk_tests(root, start, patterns, norecurse):
            rel = _rel(root, test)
            if rel is not None:
                p.tests[rel] = None
                top = rel.split("/", 1)[0]
                if "/" in rel and _is_test_dir(top):
                    col.globs[f"{top}/**"] = None  # helpers and data beside the tests
            test_dirs[os.path.dirname(test)] = None
        _chain(
            root, confcut, rootdir, start if os.path.isdir(start) else os.path.dirname(start), col
        )
        if start_rel and _is_test_dir(start_rel.split("/")[0]):
            col.globs[f"{start_rel.split('/')[0]}/**"] = None  # helpers and data beside the tests
    for directory in test_dirs:
        _chain(root, confcut, rootdir, directory, col)


def _around_the_run(p: _Pytest) -> None:
    """What the run loads around the tests: conftest files above the cut, the interpreter's
    start-up files, ``.pth`` files, the virtual environments, the cache a selection reads."""
    root, col = p.root, p.col
    for d in _ancestors(os.path.dirname(p.confcut) if p.confcut else p.rootdir):
        col.add(os.path.join(d, "conftest.py"))  # a config moved up would bring these in
    for name in PYTHON_STARTUP_NAMES:
        col.add(os.path.join(root, name))
    col.globs["**/*.pth"] = None
    for venv in (".venv", "venv", ".tox", ".nox"):
        if os.path.isdir(os.path.join(root, venv)):
            col.globs[f"{venv}/**"] = None  # the runner, its plugins (entry points) live here
    if p.opts.cache:
        col.globs[".pytest_cache/**"] = None
        col.notes.append("--lf/--ff/--nf/--sw: the selection reads .pytest_cache")


def _notes(p: _Pytest) -> None:
    """What the surface cannot hold, said in its notes: no conftest, the pythonpath, the
    rootdir and configuration found."""
    root, col, inifile = p.root, p.col, p.inifile
    if p.opts.noconftest:
        col.notes.append("--noconftest: conftest.py files are not loaded")
    for pp in p.ini.get("pythonpath", []):
        col.notes.append(f"pythonpath {pp}: modules there import before the tests'")
    col.notes.append(
        f"pytest: rootdir {_rel(root, p.rootdir) or p.rootdir}, configuration "
        f"{(_rel(root, inifile) or inifile) if inifile else 'none'}"
    )


#: How a pytest call's surface is found, in order (each step reads what the earlier set).
PYTEST_STEPS: tuple[Callable[[_Pytest], None], ...] = (
    _command_line,
    _configuration,
    _plugins,
    _collection_starts,
    _collected_tests,
    _around_the_run,
    _notes,
)


def _setup(
    invocation: str, existing: Sequence[str], inifile_arg: str | None, col: _Collector
) -> tuple[str, str | None]:
    """pytest's ``determine_setup`` without ``--rootdir``: ``(rootdir, inifile)``."""
    dirs = [p if os.path.isdir(p) else os.path.dirname(p) for p in existing]
    ancestor = _common(dirs, invocation)
    if inifile_arg:
        inifile = os.path.normpath(os.path.join(invocation, inifile_arg))
        col.add(inifile)
        return (os.path.dirname(inifile) if os.path.isfile(inifile) else ancestor), inifile
    found = _locate(ancestor, col)
    if found:
        return os.path.dirname(found), found
    for d in _ancestors(ancestor):
        col.add(os.path.join(d, "setup.py"))
        if os.path.isfile(os.path.join(d, "setup.py")):
            return d, None
    if dirs and any(d != ancestor for d in dirs):
        for d in dirs:
            found = _locate(d, col)
            if found:
                return os.path.dirname(found), found
    rootdir = os.path.commonpath([invocation, ancestor])
    return (ancestor if rootdir == os.path.dirname(rootdir) else rootdir), None


def pytest_setup(root: str, call: RunnerCall, environ: dict[str, str]) -> tuple[str, str | None]:
    """``(rootdir, inifile or None)`` as pytest determines them for ``call`` (absolute)."""
    surface_root = os.path.abspath(root)
    invocation = os.path.normpath(os.path.join(surface_root, call.cwd))
    opts = _Opts()
    opts.read(call.args)
    existing = [
        p
        for a in opts.paths
        if os.path.exists(p := os.path.normpath(os.path.join(invocation, a.split("::", 1)[0])))
    ]
    rootdir, inifile = _setup(invocation, existing, opts.inifile, _Collector(surface_root))
    if opts.rootdir:
        rootdir = os.path.normpath(os.path.join(invocation, os.path.expandvars(opts.rootdir)))
    return rootdir, inifile


def _is_test_dir(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] in _TEST_DIR_NAMES


def _common(paths: Sequence[str], invocation: str) -> str:
    """pytest's ``get_common_ancestor`` (a file's directory; the invocation dir for none)."""
    if not paths:
        return invocation
    common = os.path.commonpath(paths)
    return os.path.dirname(common) if os.path.isfile(common) else common


def _chain(root: str, confcut: str, rootdir: str, directory: str, col: _Collector) -> None:
    """``conftest.py`` from the confcutdir down to ``directory``; the ``__init__.py`` chain
    from ``directory`` up to the rootdir (and on above it while the package goes on)."""
    top = confcut if _under(directory, confcut) else rootdir
    d = directory
    while True:
        col.add(os.path.join(d, "conftest.py"))
        if _graded_init(d):
            col.add(os.path.join(d, "__init__.py"))
        if d == top or not _under(d, top) or os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    # pytest's package path goes up while __init__.py exists: past the rootdir too
    d = top
    while os.path.isfile(os.path.join(d, "__init__.py")) and os.path.dirname(d) != d:
        d = os.path.dirname(d)
        if _graded_init(d):
            col.add(os.path.join(d, "__init__.py"))


def _graded_init(directory: str) -> bool:
    """Whether ``directory``'s ``__init__.py`` grades: absent (a new one changes how pytest
    imports every test below it: the root ``__init__.py`` attack), or the package of tests
    only. An existing ``__init__.py`` of a package that holds source is source: the agent's
    change to it is carried, and the runner's integrity check watches what it does."""
    init = os.path.join(directory, "__init__.py")
    if not os.path.isfile(init):
        return True
    if os.path.basename(directory) in _TEST_DIR_NAMES:
        return True
    try:
        names = os.listdir(directory)
    except OSError:
        return True
    modules = [n for n in names if n.endswith(".py") and n not in ("__init__.py", "conftest.py")]
    return all(n.startswith("test_") or n.endswith("_test.py") for n in modules)


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def _plugin_files(
    root: str, rootdir: str, plugin: str, pythonpath: Sequence[str], col: _Collector
) -> None:
    """A ``-p`` / ``PYTEST_PLUGINS`` module: a file in the project when one matches."""
    parts = plugin.split(".")
    for base in (root, rootdir, *(os.path.join(rootdir, p) for p in pythonpath)):
        mod = os.path.join(base, *parts)
        col.add(mod + ".py")
        col.add(os.path.join(mod, "__init__.py"))
    col.notes.append(f"plugin {plugin}: a module of the project or an installed one")


def unittest_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    """``python -m unittest [discover -s DIR -p PATTERN -t TOP] | names``."""
    root = os.path.abspath(root)
    col = _Collector(root)
    invocation = os.path.normpath(os.path.join(root, call.cwd))
    args = list(call.args)
    start, pattern, top = ".", "test*.py", None
    names: list[str] = []
    discover = not args or args[0] == "discover" or all(a.startswith("-") for a in args)
    i = 1 if args and args[0] == "discover" else 0
    positional: list[str] = []
    while i < len(args):
        a = args[i]
        if a in ("-s", "--start-directory", "-p", "--pattern", "-t", "--top-level-directory"):
            value = args[i + 1] if i + 1 < len(args) else ""
            if a in ("-s", "--start-directory"):
                start = value
            elif a in ("-p", "--pattern"):
                pattern = value
            else:
                top = value
            i += 2
            continue
        if not a.startswith("-"):
            positional.append(a)
        i += 1
    if discover:
        for k, v in enumerate(positional[:3]):
            start, pattern, top = (
                (v, pattern, top) if k == 0 else (start, v, top) if k == 1 else (start, pattern, v)
            )
    else:
        names = positional
    tests: dict[str, None] = {}
    test_globs: dict[str, None] = {}
    if discover:
        begin = os.path.normpath(os.path.join(invocation, start))
        rel = _rel(root, begin)
        base = f"{rel}/" if rel else ""
        test_globs[f"{base}**/{pattern}"] = None
        for test in _walk_tests(root, begin, [pattern], [".*", "__pycache__"]):
            r = _rel(root, test)
            if r is not None:
                tests[r] = None
            d = os.path.dirname(test)  # discovery enters a directory only as a package
            while _under(d, begin):
                col.add(os.path.join(d, "__init__.py"))
                if d == begin:
                    break
                d = os.path.dirname(d)
        if top:
            col.add(os.path.join(invocation, top, "__init__.py"))
    for name in names:
        as_path = name if name.endswith(".py") else name.replace(".", "/")
        for cand in (as_path, as_path + ".py", os.path.join(as_path, "__init__.py")):
            col.add(os.path.join(invocation, cand))
        parts = as_path.split("/")
        for k in range(1, len(parts)):
            col.add(os.path.join(invocation, *parts[:k], "__init__.py"))
            col.add(os.path.join(invocation, *parts[:k]) + ".py")
    for name in PYTHON_STARTUP_NAMES:
        col.add(os.path.join(root, name))
    col.globs["**/*.pth"] = None
    return col.surface(RunnerKind.UNITTEST, call, tests, test_globs)


def tox_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    """tox: its configuration (``-c``, else ``tox.ini``, ``setup.cfg``, ``pyproject.toml``,
    ``tox.toml``) and the package it builds; the commands of each environment are noted."""
    from infomark.kernel.runners import TOX_FILES

    root = os.path.abspath(root)
    col = _Collector(root)
    invocation = os.path.normpath(os.path.join(root, call.cwd))
    args = list(call.args)
    for i, a in enumerate(args):
        if a in ("-c", "--conf") and i + 1 < len(args):
            col.add(os.path.join(invocation, args[i + 1]))
    for d in _ancestors(invocation):
        for name in TOX_FILES:
            col.add(os.path.join(d, name))
    col.add(os.path.join(invocation, "setup.py"))
    col.globs[".tox/**"] = None
    col.notes.append("tox: the commands of its environments run in the attested copy as written")
    return col.surface(RunnerKind.TOX, call)


def nox_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    """nox: ``noxfile.py`` (or ``-f FILE``) and its environments."""
    root = os.path.abspath(root)
    col = _Collector(root)
    invocation = os.path.normpath(os.path.join(root, call.cwd))
    args = list(call.args)
    named = False
    for i, a in enumerate(args):
        if a in ("-f", "--noxfile") and i + 1 < len(args):
            col.add(os.path.join(invocation, args[i + 1]))
            named = True
    if not named:
        col.add(os.path.join(invocation, "noxfile.py"))
    col.globs[".nox/**"] = None
    col.notes.append("nox: the sessions' commands run in the attested copy as written")
    return col.surface(RunnerKind.NOX, call)
