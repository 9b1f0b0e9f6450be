"""Environment variables whose value is code some program runs later: ``GIT_PAGER='touch f'
git log``, ``BASH_ENV=/dev/stdin bash -c :``, ``PS4='$(touch f)' bash -x``.

A command-valued variable (a pager, an editor, an ssh command …) set to a static value has
that value classified as the shell command it is; set to a computed value it is unknown code.
A variable that makes a program load code from a file or evaluate text (``BASH_ENV``,
``LD_PRELOAD``, ``NODE_OPTIONS``, a prompt holding ``$(…)`` …) is unknown code: ``opaque``.
"""

from __future__ import annotations

from infomark.gates.shell.core import MODIFY, State, ws
from infomark.gates.shell.words import Arg

__all__ = ["code_variable"]

_COMMAND_VARS = ws(
    "PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER EDITOR VISUAL GIT_EDITOR GIT_SEQUENCE_EDITOR "
    "GIT_SSH_COMMAND GIT_SSH GIT_EXTERNAL_DIFF GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS "
    "PROMPT_COMMAND BROWSER LESSOPEN LESSCLOSE FCEDIT"
)
_LOADER_VARS = ws(
    "BASH_ENV ENV LD_PRELOAD LD_AUDIT PYTHONSTARTUP PERL5OPT PERL5DB NODE_OPTIONS RUBYOPT "
    "ZDOTDIR BASH_LOADABLES_PATH"
)
_PROMPTS = ws("PS0 PS1 PS2 PS3 PS4")


def code_variable(name: str, value: Arg | None, state: State, depth: int, where: str) -> None:
    """Classify what setting ``name`` to ``value`` makes some program run later."""
    if name in _COMMAND_VARS:
        if value is None or value.value is None:
            _opaque(state, f"{where} sets {name} to a computed command (opaque)")
        elif value.value.strip():
            code = value.value.strip().lstrip("|").replace("%s", "FILE")
            state.walker.nested(code, state, depth, f"{where} command in {name}")
    elif name in _LOADER_VARS:
        _opaque(state, f"{where} sets {name}, which makes programs load or run code (opaque)")
    elif name in _PROMPTS and (value is None or "$(" in value.approx or "`" in value.approx):
        _opaque(state, f"{where} sets {name} to a prompt that runs commands (opaque)")


def _opaque(state: State, reason: str) -> None:
    state.opaque = True
    state.add(MODIFY, reason)
