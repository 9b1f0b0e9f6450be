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

import os
import shutil
import sys
import sysconfig
import tempfile
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


def test_a_pth_in_the_users_site_directory_does_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system interpreter reads ``~/.local/lib/python3.X/site-packages``: pytest installed
    there (``pip install --user``), and the agent's start-up patch beside it."""
    need_bwrap()
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.access(python, os.X_OK):
        pytest.skip(f"no {python} here: the user's site directory cannot be tried")
    home = Path(tempfile.mkdtemp(prefix="attest-user-", dir=var_tmp()))  # seen in the sandbox
    try:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site = home / ".local" / "lib" / version / "site-packages"
        site.mkdir(parents=True)
        (site / "tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        (site / "zz_evil.py").write_text(PATCH_AT_IMPORT)
        (site / "zz_evil.pth").write_text("import zz_evil\n")
        monkeypatch.setenv("HOME", str(home))
        root = git_project(tmp_path, {"calc.py": BUGGY, "test_calc.py": TESTS})
        with Gatekeeper.open(tmp_path / "home", "user-site", root=root) as gk:
            gk.ingest(ledger(f"{python} -m pytest -q -p no:cacheprovider"))
            gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))
            done = check(gk, "C1")
            assert done.outcome != "PASS", done.text
            assert "No module named pytest" in done.text, done.text  # the user site is not read
    finally:
        shutil.rmtree(home, ignore_errors=True)


def var_tmp() -> str:
    """A temp directory the sandbox shows as it is (its ``/tmp`` and ``/dev`` are fresh):
    ``/var/tmp``, where a user's home would be seen."""
    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("no writable /var/tmp: a home the sandbox shows cannot be made")
    return "/var/tmp"
