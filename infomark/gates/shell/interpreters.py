"""Shells and interpreters: ``bash -c`` strings are parsed, inline code of other languages is
opaque (modify) unless it can be read, in-place edit flags modify, a script runs (execute)."""

from __future__ import annotations

from collections.abc import Callable

from infomark.gates.shell.core import Env, ws
from infomark.gates.shell.walks import note_python_module, note_python_walks
from infomark.gates.shell.words import Arg
from infomark.gates.shell.wrappers import _code_on_stdin, special_file
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass

__all__ = ["INTERPRETERS", "_SHELLS", "Interpreter", "_h_interpreter", "_h_pwsh", "_h_shell"]


_SHELLS = ws("bash sh zsh dash ksh ash mksh fish rbash yash")


def _h_shell(name: str, args: list[Arg], env: Env) -> None:
    i, n = 0, len(args)
    c_mode = False
    while i < n:
        v = args[i].value
        if v is None:
            break
        if v in ("--", "-"):
            i += 1
            break
        if v.startswith("--"):
            i += 2 if v in ("--rcfile", "--init-file") else 1
            continue
        if v[:1] in "-+" and len(v) > 1:
            letters = v[1:]
            if v[0] == "-" and "c" in letters:
                c_mode = True
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    rest = args[i:]
    for k in range(i):  # `--rcfile FILE` / `--init-file FILE`: code read before the shell's
        if args[k].value in ("--rcfile", "--init-file") and k + 1 < n:
            rc = args[k + 1].value
            if rc is None or special_file(rc, env) is not None:
                env.opaque(f"reads its start-up code from {args[k + 1].approx} (opaque)")
    if rest and not c_mode and rest[0].value is None:
        env.opaque(f"runs a script from a computed path or process substitution {rest[0].approx}")
        return
    if rest and not c_mode and (kind := special_file(rest[0].value or "", env)) is not None:
        if kind != "stdin":
            env.opaque(f"runs code read from {rest[0].value}, not a script file (opaque)")
            return
        rest = []
    if c_mode:
        if not rest:
            env.execute("has no code after -c")
            return
        code = rest[0]
        if code.value is None:
            env.opaque("runs a computed -c string (opaque)")
        env.nested(code.approx, "-c string")
        return
    if rest:
        env.execute("runs a script")
        return
    _code_on_stdin(env, "shell")


def _h_pwsh(name: str, args: list[Arg], env: Env) -> None:
    for k, arg in enumerate(args):
        v = (arg.value or "").lower()
        if v in ("-command", "-c", "/c", "-com", "-comm", "-comma", "-comman"):
            env.nested(" ".join(a.approx for a in args[k + 1 :]), "command")
            return
        if v in ("-encodedcommand", "-e", "-ec", "-enc"):
            env.modify("runs an encoded command (opaque)")
            return
        if v in ("-file", "-f"):
            env.execute("runs a script")
            return
    if name == "cmd":
        env.execute("starts a command prompt")
    else:
        env.execute("starts PowerShell")


Analyse = Callable[[str, Env, str], None]


@dataclass(frozen=True, slots=True)
class Interpreter:
    """How one interpreter's command line says where its code comes from."""

    code: str = ""  # short flags whose value is inline code (`-e`, `-c`)
    code_long: frozenset[str] = frozenset()  # long ones (`--eval`)
    module: str = ""  # short flag naming a module to run (`python -m`)
    inplace: str = ""  # short flags that edit files in place (`perl -i`)
    attached: str = ""  # short flags whose value is glued on (`perl -Ilib`)
    separate: str = ""  # short flags whose value may be the next word
    long_val: frozenset[str] = frozenset()  # long options that take the next word
    info: str = "vVh"  # short flags that only print information
    info_long: frozenset[str] = frozenset({"--version", "--help"})
    analyse: Analyse | None = None  # reads inline code when it can (Python's AST)


def _inline(spec: Interpreter, code: Arg | None, env: Env, where: str) -> None:
    if code is None or code.value is None or spec.analyse is None:
        if code is not None and "infomark" in code.approx:
            env.state.mark("infomark")
        env.modify(f"runs opaque inline code{where}")
        return
    spec.analyse(code.value, env, where)


def _on_stdin(spec: Interpreter, env: Env) -> None:
    stdin = env.stdin()
    if spec.analyse is not None and stdin.kind in ("text", "pipe") and stdin.text is not None:
        spec.analyse(stdin.text, env, f" {stdin.label}")
        return
    if stdin.text is not None and "infomark" in stdin.text:
        env.state.mark("infomark")
    _code_on_stdin(env, "interpreter")


def _h_interpreter(name: str, args: list[Arg], env: Env) -> None:
    """Classify an interpreter by its row in :data:`INTERPRETERS` (``python*`` by pattern)."""
    spec = INTERPRETERS.get(name) or INTERPRETERS["python"]
    i, n = 0, len(args)
    info = edits = False
    while i < n:
        v = args[i].value
        if v is None or v == "-" or not v.startswith("-"):
            break
        if v == "--":
            i += 1
            break
        if v.startswith("--"):
            key = v.split("=", 1)[0]
            if key in spec.code_long:
                given = v.split("=", 1)[1] if "=" in v else None
                code = (
                    Arg(given, given) if given is not None else (args[i + 1] if i + 1 < n else None)
                )
                _inline(spec, code, env, "")
                return
            info = info or key in spec.info_long
            i += 2 if (key in spec.long_val and "=" not in v) else 1
            continue
        letters = v[1:]
        step = 1
        for k, ch in enumerate(letters):
            if ch in spec.code or ch in spec.module:
                glued = letters[k + 1 :]
                value = Arg(glued, glued) if glued else (args[i + 1] if i + 1 < n else None)
                rest = args[i + 1 :] if glued else args[i + 2 :]
                if ch in spec.code:
                    _inline(spec, value, env, "")
                elif value is None or value.value is None:
                    env.opaque("runs a computed module (opaque)")
                else:
                    _python_module(value.value, rest, env)
                return
            if ch in spec.inplace:
                edits = True
                break
            if ch in spec.attached:
                break
            if ch in spec.separate:
                step = 1 if letters[k + 1 :] else 2
                break
            if ch in spec.info:
                info = True
        i += step
    script = args[i] if i < n else None
    if script is not None and _names_infomark(script.value):
        env.state.mark("infomark")
    if edits:
        env.modify("edits files in place")
    elif script is not None and script.value is None:
        env.opaque(f"runs a script from a computed path or process substitution {script.approx}")
    elif script is not None and special_file(script.value or "", env) == "device":
        env.opaque(f"runs code read from {script.value}, not a script file (opaque)")
    elif script is not None and script.value != "-" and not special_file(script.value or "", env):
        if not _project_script(script.value or "", args[i + 1 :], env):
            env.execute("runs a script")
    elif info and script is None:
        env.execute("prints interpreter information")
    else:
        _on_stdin(spec, env)


_WRITING_MODULES = {
    # python -m MODULE: modules that write files, and when
    "json.tool": "writes its output file",
    "zipfile": "creates or extracts an archive",
    "tarfile": "creates or extracts an archive",
    "gzip": "compresses or decompresses files",  # with arguments
    "py_compile": "writes byte-code files",
    "compileall": "writes byte-code files",
    "venv": "creates or changes an environment",
    "virtualenv": "creates or changes an environment",
    "ensurepip": "creates or changes an environment",
    "http.server": "serves files (execute)",
}


_SETUP_WRITES = ws(
    "install develop build build_ext build_py build_clib build_scripts bdist bdist_wheel "
    "bdist_egg sdist egg_info clean upload register"
)
_DJANGO_WRITES = ws(
    "migrate makemigrations collectstatic createsuperuser loaddata startapp startproject "
    "squashmigrations compilemessages makemessages createcachetable changepassword clearsessions "
    "remove_stale_contenttypes"
)
_DJANGO_DESTROYS = ws("flush reset_db sqlflush")


def _project_script(path: str, rest: list[Arg], env: Env) -> bool:
    """``setup.py install`` and ``manage.py migrate`` say what they do; True when classified."""
    base = path.rstrip("/").rsplit("/", 1)[-1]
    sub = next((a.value for a in rest if not (a.value or "-").startswith("-")), None)
    if base == "setup.py" and sub in _SETUP_WRITES:
        env.modify(f"builds or installs the project (setup.py {sub})")
        return True
    if base in ("manage.py", "django-admin", "django-admin.py") and sub is not None:
        if sub in _DJANGO_DESTROYS:
            env.destroy(f"empties the database (manage.py {sub})", "db")
            return True
        if sub in _DJANGO_WRITES:
            env.modify(f"changes the database or project files (manage.py {sub})")
            return True
    return False


def _h_project_script(name: str, args: list[Arg], env: Env) -> None:
    """``./manage.py migrate``, ``django-admin startproject``: run directly."""
    if not _project_script(name, args, env):
        env.execute()


def _names_infomark(path: str | None) -> bool:
    """A script that is infomark's own entry point (``.venv/bin/infomark``, its package)."""
    if not path:
        return False
    base = path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".py")
    return base == "infomark" or "/infomark/" in path


def _python_module(module: str, rest: list[Arg], env: Env) -> None:
    module = module.lower()
    note_python_module(module, rest, env)
    if module.split(".")[0] == "infomark":
        env.state.mark("infomark")
    if module == "json.tool":
        positional = [a for a in rest if not (a.value or "").startswith("-")]
        if len(positional) >= 2 and positional[1].value not in ("-", "/dev/stdout"):
            env.modify("writes its output file (-m json.tool IN OUT)")
        else:
            env.execute("pretty-prints JSON to stdout")
        return
    if module in ("zipfile", "tarfile"):
        flags = {a.value for a in rest}
        if flags & {"-c", "--create", "-e", "--extract"}:
            env.modify(f"creates or extracts an archive with -m {module}")
        else:
            env.execute(f"lists or tests an archive with -m {module}")
        return
    if module == "gzip" and not rest:
        env.execute("compresses stdin to stdout (-m gzip)")
        return
    if module in _WRITING_MODULES and module != "http.server":
        env.modify(f"{_WRITING_MODULES[module]} with -m {module}")
        return
    handler = env.state.walker.module(module)
    if handler is not None:
        handler(module, rest, env)
    else:
        env.execute(f"runs module {module}; not known to modify anything")


def _analyse_python(code: str, env: Env, where: str) -> None:
    from infomark.gates.shell.pycode import analyse_python  # ast: ~45 M instructions, on use

    verdict = analyse_python(code)
    if verdict.infomark:
        env.state.mark("infomark")
    for path in verdict.reads:
        env.state.path(path)
    if verdict.opaque_reads:
        env.state.opaque = True  # it reads files it names at run time: the home, perhaps
    note_python_walks(verdict.walks, env, "copies or deletes")
    for line in verdict.shell:
        if line is None:
            env.opaque(f"runs a computed command line from inline Python{where}")
        else:
            env.nested(line, "command run by inline Python")
    if verdict.read_only:
        env.execute(f"runs inline Python that only reads{where}")
    else:
        env.modify(f"runs opaque inline code{where}: it {verdict.why}")


_JS_STRING = r"""(?:'[\w@./: -]*'|"[\w@./: -]*")"""
_JS_ATOM = (
    rf"(?:require\(\s*{_JS_STRING}\s*\)(?:\.(?:version|name))?"
    rf"|require\.resolve\(\s*{_JS_STRING}\s*\)"
    r"|process\.(?:version|versions(?:\.\w+)?|platform|arch|execPath)"
    rf"|{_JS_STRING}|\d+)"
)
_JS_READ_ONLY = lazy_compile(
    rf"\s*(?:console\.log\(\s*{_JS_ATOM}(?:\s*,\s*{_JS_ATOM})*\s*\)|{_JS_ATOM})\s*;?\s*"
)


def _analyse_node(code: str, env: Env, where: str) -> None:
    """A small, exact recogniser: ``console.log(require('x').version)``, ``process.version``
    and literals are read-only (``require`` runs the module's code, as a Python import does);
    any other JavaScript stays opaque. Perl, Ruby, PHP … have none: always opaque."""
    if "infomark" in code:
        env.state.mark("infomark")
    if _JS_READ_ONLY.fullmatch(code):
        env.execute(f"runs inline JavaScript that only prints versions{where}")
    else:
        env.modify(f"runs opaque inline code{where}")


_NODE_VALUES = frozenset(
    {"--require", "--import", "--loader", "--input-type", "--conditions", "--title"}
)

INTERPRETERS: dict[str, Interpreter] = {
    "python": Interpreter(
        code="c",
        module="m",
        separate="WX",
        info="Vh?",
        info_long=ws("--version --help --help-all --help-env --help-xoptions"),
        long_val=frozenset({"--check-hash-based-pycs"}),
        analyse=_analyse_python,
    ),
    "node": Interpreter(
        "ep", ws("--eval --print"), separate="r", long_val=_NODE_VALUES, analyse=_analyse_node
    ),
    "nodejs": Interpreter("ep", ws("--eval --print"), separate="r", analyse=_analyse_node),
    "perl": Interpreter("eE", inplace="i", attached="IMmdDlCx0"),
    "ruby": Interpreter("e", inplace="i", separate="rIC"),
    "php": Interpreter("r", separate="cdzf"),
    "lua": Interpreter("e", separate="l"),
    "rscript": Interpreter("e"),
    "mongosh": Interpreter("", ws("--eval")),
    "mongo": Interpreter("", ws("--eval")),
}
