"""The handler table: command name → the function that classifies it.

A command not in the table (and not matched by a name pattern such as ``python3.12`` or
``mkfs.ext4``) runs and is not known to modify anything: execute. Package managers are rows of
:data:`infomark.gates.shell.packages.MANAGERS`; ``python -m NAME`` uses :data:`MODULE_HANDLERS`.
"""

from __future__ import annotations

from infomark.gates.shell import packages
from infomark.gates.shell.archives import (
    _h_7z,
    _h_compress,
    _h_curl,
    _h_rsync,
    _h_tar,
    _h_unzip,
    _h_wget,
)
from infomark.gates.shell.assembled import _h_parallel, _h_xargs
from infomark.gates.shell.core import Env, Handler, ws
from infomark.gates.shell.files import (
    _MODIFY_VERBS,
    _formatter,
    _h_dd,
    _h_fd,
    _h_find,
    _h_modify_verb,
    _h_remove_item,
    _h_rimraf,
    _h_rm,
    _h_rmdir,
    _h_ruff,
    _h_sort,
    _h_tee,
    _h_wipe,
)
from infomark.gates.shell.filters import (
    _h_awk,
    _h_iconv,
    _h_openssl,
    _h_sed,
    _h_sponge,
    _h_uniq,
    _h_xxd,
    _h_yq,
)
from infomark.gates.shell.git import _h_git
from infomark.gates.shell.interpreters import (
    _SHELLS,
    INTERPRETERS,
    _h_interpreter,
    _h_project_script,
    _h_pwsh,
    _h_shell,
)
from infomark.gates.shell.runners import (
    _h_flock,
    _h_gdb,
    _h_script,
    _h_taskset,
    _h_time,
)
from infomark.gates.shell.sql import _h_mysql, _h_psql, _h_sqlite
from infomark.gates.shell.walks import WALKERS
from infomark.gates.shell.words import Arg, _command_name
from infomark.gates.shell.wrappers import (
    _h_alias,
    _h_chroot,
    _h_command,
    _h_env,
    _h_exec_tool,
    _h_hash,
    _h_infomark,
    _h_opaque,
    _h_ssh,
    _h_su,
    _h_sudo,
    _h_timeout,
    _h_trap,
    _h_watch,
    _wrapper,
)
from infomark.kernel.lazyre import lazy_compile

__all__ = ["HANDLERS", "MODULE_HANDLERS", "lookup"]

_HANDLERS: dict[str, Handler] = {
    # wrappers
    "sudo": _h_sudo,
    "sudoedit": _h_sudo,
    "doas": _wrapper("uC"),
    "env": _h_env,
    "command": _h_command,
    "builtin": _wrapper(),
    "exec": _wrapper("a"),
    "nice": _wrapper("n", frozenset({"--adjustment"})),
    "nohup": _wrapper(),
    "time": _h_time,
    "timeout": _h_timeout,
    "stdbuf": _wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "xargs": _h_xargs,
    "setsid": _wrapper(),
    "ionice": _wrapper("cn", frozenset({"--class", "--classdata"})),
    "chroot": _h_chroot,
    "busybox": _wrapper(),
    "toybox": _wrapper(),
    "script": _h_script,
    "flock": _h_flock,
    "taskset": _h_taskset,
    "parallel": _h_parallel,
    "gdb": _h_gdb,
    "coproc": _wrapper(),
    "watch": _h_watch,
    "ssh": _h_ssh,
    "su": _h_su,
    "trap": _h_trap,
    "npx": _h_exec_tool,
    "uvx": _h_exec_tool,
    "bunx": _h_exec_tool,
    "infomark": _h_infomark,
    **dict.fromkeys(
        ("manage.py", "setup.py", "django-admin", "django-admin.py"), _h_project_script
    ),
    "alias": _h_alias,
    "hash": _h_hash,
    # opaque
    "eval": _h_opaque,
    "source": _h_opaque,
    ".": _h_opaque,
    "invoke-expression": _h_opaque,
    "iex": _h_opaque,
    # shells and interpreters
    **dict.fromkeys(_SHELLS, _h_shell),
    "pwsh": _h_pwsh,
    "powershell": _h_pwsh,
    "cmd": _h_pwsh,
    **dict.fromkeys(INTERPRETERS, _h_interpreter),
    # files
    "rm": _h_rm,
    "del": _h_remove_item,
    "erase": _h_remove_item,
    "rd": _h_remove_item,
    "ri": _h_remove_item,
    "remove-item": _h_remove_item,
    "rmdir": _h_rmdir,
    "rimraf": _h_rimraf,
    "find": _h_find,
    "fd": _h_fd,
    "fdfind": _h_fd,
    "dd": _h_dd,
    "shred": _h_wipe,
    "wipefs": _h_wipe,
    "mke2fs": _h_wipe,
    "mkswap": _h_wipe,
    "blkdiscard": _h_wipe,
    "format-volume": _h_wipe,
    "clear-disk": _h_wipe,
    "tee": _h_tee,
    "sed": _h_sed,
    "gsed": _h_sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk", "busybox-awk"), _h_awk),
    "uniq": _h_uniq,
    "iconv": _h_iconv,
    "xxd": _h_xxd,
    "sponge": _h_sponge,
    "yq": _h_yq,
    "openssl": _h_openssl,
    "sort": _h_sort,
    "curl": _h_curl,
    "wget": _h_wget,
    "tar": _h_tar,
    "gtar": _h_tar,
    "bsdtar": _h_tar,
    "unzip": _h_unzip,
    **dict.fromkeys(
        ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "lzma"),
        _h_compress,
    ),
    "7z": _h_7z,
    "7za": _h_7z,
    "7zr": _h_7z,
    "rsync": _h_rsync,
    **dict.fromkeys(_MODIFY_VERBS, _h_modify_verb),
    # formatters
    "black": _formatter(writes_unless=ws("--check --diff --version -h --help")),
    "isort": _formatter(writes_unless=ws("--check --check-only -c --diff --version -h")),
    "autopep8": _formatter(writes_if=frozenset({"-i", "--in-place"})),
    "autoflake": _formatter(writes_if=frozenset({"-i", "--in-place"})),
    "yapf": _formatter(writes_if=frozenset({"-i", "--in-place"})),
    "prettier": _formatter(writes_if=frozenset({"--write", "-w"})),
    "eslint": _formatter(writes_if=frozenset({"--fix"})),
    "gofmt": _formatter(writes_if=frozenset({"-w"})),
    "goimports": _formatter(writes_if=frozenset({"-w"})),
    "shfmt": _formatter(writes_if=frozenset({"-w", "--write"})),
    "clang-format": _formatter(writes_if=frozenset({"-i"})),
    "rustfmt": _formatter(writes_unless=ws("--check --version -h --help")),
    "ruff": _h_ruff,
    # package managers: one declarative table (packages.MANAGERS)
    **dict.fromkeys(packages.MANAGERS, packages.handle),
    "pacman": packages.handle_pacman,
    # version control
    "git": _h_git,
    # SQL clients
    "psql": _h_psql,
    "mysql": _h_mysql,
    "mariadb": _h_mysql,
    "sqlite3": _h_sqlite,
    "sqlite": _h_sqlite,
    "duckdb": _h_sqlite,
}


def _walking(name: str, handler: Handler | None) -> Handler:
    """The handler, after noting the walk the command makes (:mod:`.walks`)."""
    walker = WALKERS[name]

    def handle(cmd: str, args: list[Arg], env: Env) -> None:
        walker(cmd, args, env)
        if handler is None:
            env.execute()
        else:
            handler(cmd, args, env)

    return handle


for _name in WALKERS:
    _HANDLERS[_name] = _walking(_name, _HANDLERS.get(_name))

_MODULE_HANDLERS: dict[str, Handler] = {
    "pip": _HANDLERS["pip"],
    "black": _HANDLERS["black"],
    "isort": _HANDLERS["isort"],
    "autopep8": _HANDLERS["autopep8"],
    "autoflake": _HANDLERS["autoflake"],
    "yapf": _HANDLERS["yapf"],
    "ruff": _h_ruff,
    **dict.fromkeys(("pipx", "poetry", "pdm", "uv"), packages.handle),
}

_PYTHON = lazy_compile(r"^(python|pypy|py)(\d+(\.\d+)*)?[a-z]?$")
_PIP_NAME = lazy_compile(r"^pip\d+(\.\d+)*$")


def _pattern_handler(name: str) -> Handler | None:
    if _PYTHON.match(name):
        return _h_interpreter
    if _PIP_NAME.match(name):
        return _HANDLERS["pip"]
    if name.startswith("mkfs"):
        return _h_wipe
    return None


_LOOKUP_CACHE: dict[str, tuple[str | None, Handler | None]] = {}


def lookup(word: str) -> tuple[str | None, Handler | None]:
    """Command word → (normalised name, handler); cached, the same names recur constantly."""
    hit = _LOOKUP_CACHE.get(word)
    if hit is None:
        name = _command_name(word)
        handler = None if name is None else (_HANDLERS.get(name) or _pattern_handler(name))
        hit = (name, handler)
        if len(_LOOKUP_CACHE) < 4096:
            _LOOKUP_CACHE[word] = hit
    return hit


HANDLERS = _HANDLERS
MODULE_HANDLERS = _MODULE_HANDLERS
