"""Code the agent's change carries that runs before infomark's report plugin (real bubblewrap,
real pytest).

``python -m pytest`` puts the copy's root first on ``sys.path``: a new root module named
after one pytest imports at start-up (``iniconfig``, ``packaging``, ``pygments`` …) is
imported in place of the real one, before the report plugin can take its references, and
patches the runner there. :mod:`infomark.tools.attest.shadow` keeps such files out of the copy
by name; these tests empty that list (as for a module of another interpreter the list does
not know) and show the plugin's own start-up check catches the attack by where the code came
from: a module loaded from a carried file, or a runner function compiled from one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
from infomark.tools.attest import check, shadow
from tests.security.attested_project import (
    BUGGY,
    PATCH_AT_IMPORT,
    PYTEST,
    TESTS,
    git_project,
    ledger,
    need_bwrap,
)

#: a root ``iniconfig.py``: loads the real iniconfig (pytest needs it), then patches the runner
#: (:data:`PATCH_AT_IMPORT`); ``{hide}`` is run last
STAND_IN = (
    """
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_me = sys.modules[__name__]
_saved = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
del sys.modules[__name__]
import iniconfig as _real
sys.path[:] = _saved
globals().update({k: v for k, v in vars(_real).items() if not k.startswith("__")})
"""
    + PATCH_AT_IMPORT
    + "{hide}\n"
)

#: stays in ``sys.modules`` as itself
KEEP = "sys.modules[__name__] = _me"
#: leaves no trace in ``sys.modules``: the real iniconfig is found there
HIDE = "sys.modules[__name__] = _real"


def _attacked(tmp: Path, monkeypatch: pytest.MonkeyPatch, stand_in: str) -> tuple[str, str]:
    need_bwrap()
    monkeypatch.setattr(shadow, "_names", lambda: frozenset())  # a name no list knows
    root = git_project(tmp, {"calc.py": BUGGY, "test_calc.py": TESTS})
    with Gatekeeper.open(tmp / "home", "startup", root=root) as gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))
        (root / "iniconfig.py").write_text(stand_in)  # the bug stays
        done = check(gk, "C1")
        assert done.evidence is not None, done.text
        record = done.evidence.record["attested"]
        assert "iniconfig.py" in record["carried"], done.text  # the list let it in
        return done.outcome, done.text


@pytest.mark.parametrize(
    ("hide", "seen"),
    [
        (KEEP, "module `iniconfig` was imported from iniconfig.py"),
        # leaves no trace in sys.modules: where the runner's code came from still shows
        (HIDE, "Function.runtest was replaced by code of iniconfig.py"),
    ],
)
def test_a_carried_module_pytest_imports_at_start_up_is_runner_tampered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hide: str, seen: str
) -> None:
    outcome, text = _attacked(tmp_path, monkeypatch, STAND_IN.replace("{hide}", hide))
    assert outcome != "PASS", text
    assert "runner_tampered" in text, text
    assert seen in text, text
