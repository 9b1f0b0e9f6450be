"""Shell-command classification with a real bash parser (tree-sitter-bash), not regexes.

Every simple command in a command line is classified, wherever it sits: pipelines, ``&&`` /
``||`` / ``;`` lists, subshells, ``{ …; }`` groups, ``$( … )`` and backticks, if/for/while/case
bodies and function bodies. Wrappers (``sudo``, ``env``, ``timeout``, ``xargs`` …) are looked
through, and the code strings of ``sh -c`` / ``bash -c`` / ``zsh -c`` (and a few other places that
take shell code) are parsed recursively. The overall class is the most severe one found:
destructive > modify > execute.

Text that is only data never counts: quoted arguments, here-doc bodies and commit messages are
words, not commands. The exceptions are deliberate: the ``-c`` strings of shells, SQL handed to SQL
clients (``psql``/``sqlite3``/``mysql``, including here-docs, here-strings and ``.sql`` files) and
code fed to a shell on stdin. ``$( … )`` inside double quotes or an unquoted here-doc *does* run,
and is classified.

Anything the classifier cannot read with confidence fails closed to ``modify``: syntax errors,
computed command names, ``eval`` / ``source``, inline interpreter code, NUL bytes, invalid Unicode,
oversized input. :func:`classify_shell` never raises.

The package is split by what each module knows:

- :mod:`.core`: severities, findings, the per-command context handlers report through;
- :mod:`.tree`: parsing and the tree walk (redirections, here-docs, stdin, nested code);
- :mod:`.words`: quote removal, escapes and option scanning;
- :mod:`.expand`: static expansion of words into paths (globs, braces, ``cd`` chains);
- :mod:`.wrappers`, :mod:`.interpreters`, :mod:`.files`, :mod:`.archives`, :mod:`.git`,
  :mod:`.sql`: the handlers; :mod:`.packages`: package managers as one declarative table;
- :mod:`.walks` (with :mod:`.walks_copy` and :mod:`.walkroots`): recursive operations
  (``grep -r``, ``tar c``, ``cp -r`` …) recorded as ``Classification.walks``, judged against
  the ledger home by :mod:`infomark.gates.reach`;
- :mod:`.lookup`, :mod:`.common` and :mod:`.table`: command name → handler (wrappers,
  shells and interpreters load with the classifier; the rest of the table on the first
  name it holds).

Standard library only at import; tree-sitter is imported on the first parse.
"""

from __future__ import annotations

from infomark.gates.shell.core import SQL_FILE_LIMIT
from infomark.gates.shell.tree import MAX_COMMAND_CHARS, MAX_DEPTH, classify_shell

__all__ = ["MAX_COMMAND_CHARS", "MAX_DEPTH", "SQL_FILE_LIMIT", "classify_shell"]
