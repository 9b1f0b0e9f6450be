"""An oracle no test runner reports on: a baseline script that must have failed before the change.

``python3 test_calc.py``, ``sh check.sh``, ``./run_tests``: infomark knows no report for them,
so their outcome is their exit status. An exit status 0 alone shows nothing (``git status``,
``test -f calc.py``, ``python3 -c 'import calc'`` all exit 0), so such a run grounds a claim
only when it **discriminates** the change, judged by what the oracle does rather than by its
spelling:

- the program the oracle runs is a **file of the baseline** (the script itself, or the file an
  interpreter is given as its first word): its content in the attested copy is the baseline's
  (or a grading change the user approved), never the agent's. Inline code (``-c``, ``-e``, a
  ``sh -c`` line) is the agent's own text, so it cannot grade the agent;
- the same oracle **failed on the pristine baseline** (:mod:`.baseline_run`: no change
  carried, same sandbox, not stopped by a limit) and exits 0 with the change: the change is
  what made it pass, as in a test-driven fix.

Anything else stays ``weak_oracle``, with the reason naming what was seen.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

__all__ = ["INTERPRETERS", "baseline_script"]

#: programs whose first argument is the script they run (``python3.12``, ``bash`` …)
INTERPRETERS = re.compile(r"(python[0-9.]*|pypy[0-9.]*|sh|bash|dash|zsh|ksh|node|ruby|perl|php)")


def baseline_script(
    argv: Sequence[str], files: Mapping[str, object], carried: Mapping[str, str]
) -> str | None:
    """The project-relative path of the baseline file ``argv`` runs as its program, or None
    when it runs inline code, an option first, or a file the baseline did not have or the
    agent's change replaced (``carried``)."""
    if not argv:
        return None
    first = argv[0]
    if INTERPRETERS.fullmatch(os.path.basename(first)):
        if len(argv) < 2 or argv[1].startswith("-"):
            return None  # `python3 -c …`, `sh -c …`, `node -e …`, `python3 -m mod`: inline
        script = argv[1]
    elif "/" in first:
        script = first  # `./check.sh`, `scripts/test`
    else:
        return None  # a program on PATH: not the project's
    if os.path.isabs(script):
        return None
    rel = os.path.normpath(script)
    if rel.startswith("..") or rel not in files or rel in carried:
        return None
    return rel
