"""The handlers every command line may meet: wrappers (``sudo``, ``env``, ``timeout`` …),
shells and interpreters, and the table's name patterns.

They are looked up for almost every command, and their modules are needed to look through
them: they load with the classifier. The rest of the table (:mod:`.table`) loads on first
use (:mod:`.lookup`).
"""

from __future__ import annotations

from infomark.gates.shell.core import Handler
from infomark.gates.shell.interpreters import (
    _SHELLS,
    INTERPRETERS,
    _h_interpreter,
    _h_project_script,
    _h_pwsh,
    _h_shell,
)
from infomark.gates.shell.runners import _h_flock, _h_gdb, _h_script, _h_taskset, _h_time
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

__all__ = ["COMMON"]

# The table's entries for these names (table.py spreads this dict into its own).
COMMON: dict[str, Handler] = {
    # wrappers (xargs and parallel assemble commands and walk: in the table)
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
    "setsid": _wrapper(),
    "ionice": _wrapper("cn", frozenset({"--class", "--classdata"})),
    "chroot": _h_chroot,
    "busybox": _wrapper(),
    "toybox": _wrapper(),
    "script": _h_script,
    "flock": _h_flock,
    "taskset": _h_taskset,
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
}

# the table's name patterns (a ``python3.12`` is an interpreter, ``pip3.12`` is pip)
_PYTHON = lazy_compile(r"^(python|pypy|py)(\d+(\.\d+)*)?[a-z]?$")
_PIP_NAME = lazy_compile(r"^pip\d+(\.\d+)*$")
