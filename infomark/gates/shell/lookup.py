"""Command word → handler, loading the rest of the table only for a name it holds.

The handlers of :mod:`.common` (wrappers, shells, interpreters) load with the classifier. The
rest of the table (:mod:`.table`: package managers, files, filters, archives, git, SQL clients,
walks and the handlers that assemble commands) costs a Bash hook ~8 M instructions to import,
and a command line such as ``python3 check.py 1`` never reaches it. It is imported on the
first name it holds (:data:`_REST`, pinned to the table by
``tests/gates/shell/test_shell_lookup.py``) or that only its patterns match (``pip3.12``,
``mkfs.ext4``). Any other name is looked up as the whole table would (a ``python3.12`` is an
interpreter; anything else runs).
"""

from __future__ import annotations

from infomark.gates.shell.common import _PIP_NAME, _PYTHON, COMMON
from infomark.gates.shell.core import Handler, ws
from infomark.gates.shell.interpreters import _h_interpreter
from infomark.gates.shell.words import _command_name

__all__ = ["lookup", "module_handler"]

# Every other name of the table (table.HANDLERS minus COMMON).
_REST: frozenset[str] = ws(
    "7z 7za 7zr ack ack-grep add-content ag apk apt apt-get aptitude autoflake autopep8 awk aws "
    "black blkdiscard borg brew bsdtar bun bundle bundler bunzip2 busybox-awk bzip2 cargo "
    "chattr chgrp chmod chown clang-format clear-content clear-disk composer conda copy "
    "copy-item cp cpi cpio csplit curl dd del deno diff dnf dos2unix dotnet duckdb ed egrep "
    "emacs erase eslint ex fd fdfind fgrep find flatpak format-volume gawk gem git go gofmt "
    "goimports grep gsed gsutil gtar gunzip gzip hatch iconv install isort jar link ln lz4 lzma "
    "mamba mariadb mawk md mi micro microdnf micromamba mkdir mke2fs mkfifo mknod mkswap mktemp "
    "move move-item mv mysql nano nawk new-item ni npm nvim openssl out-file pacman parallel "
    "patch pax pdm pico pip pip3 pipenv pipx pnpm poetry port pre-commit prettier psql rclone "
    "rd remove-item ren rename rename-item restic rg rgrep ri rimraf rm rmdir rni rsync ruff "
    "rustfmt rustup scp sed set-content set-item setfacl shfmt shred snap sort split sponge "
    "sqlite sqlite3 tar tdnf tee touch truncate uniq unix2dos unlink unxz unzip unzstd uv vi "
    "vim wget wipefs xargs xxd xz yapf yarn yq yum zip zstd zypper"
)


def _handler(name: str) -> Handler | None:
    """``table.HANDLERS.get(name)`` or its name patterns, importing the table only for a name
    it holds or one of its patterns matches."""
    found = COMMON.get(name)
    if found is not None:
        return found
    if name in _REST or _PIP_NAME.match(name) or name.startswith("mkfs"):
        from infomark.gates.shell import table  # the rest of the handlers, on first use

        return table.handler(name)
    if _PYTHON.match(name):
        return _h_interpreter
    return None


def module_handler(name: str) -> Handler | None:
    """The handler of ``python -m NAME`` (pip, the formatters, ruff …), None for others."""
    from infomark.gates.shell import table

    return table.MODULE_HANDLERS.get(name)


_LOOKUP_CACHE: dict[str, tuple[str | None, Handler | None]] = {}


def lookup(word: str) -> tuple[str | None, Handler | None]:
    """Command word → (normalised name, handler); cached, the same names recur constantly."""
    hit = _LOOKUP_CACHE.get(word)
    if hit is None:
        name = _command_name(word)
        hit = (name, None if name is None else _handler(name))
        if len(_LOOKUP_CACHE) < 4096:
            _LOOKUP_CACHE[word] = hit
    return hit
