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
from infomark.gates.shell.common import _PIP_NAME, _PYTHON, COMMON
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
from infomark.gates.shell.interpreters import _h_interpreter
from infomark.gates.shell.sql import _h_mysql, _h_psql, _h_sqlite
from infomark.gates.shell.walks import WALKERS
from infomark.gates.shell.words import Arg

__all__ = ["HANDLERS", "MODULE_HANDLERS", "handler"]

_HANDLERS: dict[str, Handler] = {
    **COMMON,  # wrappers, shells, interpreters (.common)
    "xargs": _h_xargs,
    "parallel": _h_parallel,
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


def _pattern_handler(name: str) -> Handler | None:
    if _PYTHON.match(name):
        return _h_interpreter
    if _PIP_NAME.match(name):
        return _HANDLERS["pip"]
    if name.startswith("mkfs"):
        return _h_wipe
    return None


def handler(name: str) -> Handler | None:
    """The handler of a normalised command name: its entry, else its name pattern's."""
    return _HANDLERS.get(name) or _pattern_handler(name)


HANDLERS = _HANDLERS
MODULE_HANDLERS = _MODULE_HANDLERS
