"""Byte code never carries a verdict from one run to another (real bubblewrap, real pytest).

CPython runs a ``__pycache__/*.pyc`` instead of its source when the header says so: a
timestamp pyc whose recorded mtime and size match the source, and an *unchecked hash-based*
pyc (PEP 552, flags ``0b01``) always, whatever the source says. So byte code is code, and
whoever writes it decides what a later run executes. Two ways an agent could try:

- from inside an attested run: the agent's carried source writes unchecked pycs wherever a
  later run might read them (the copy's ``__pycache__``, the project's, ``/tmp``,
  ``/dev/shm``, the parents of the copy); the later check of the buggy tree must still FAIL.
  The copy is thrown away, the project is read-only in the sandbox, ``/tmp`` and ``/dev``
  are the sandbox's own; the one cache shared between attested runs (infomark's own byte
  code of the copy's modules, :mod:`infomark.tools.attest.pycache`) is in the hidden ledger
  home and holds only what infomark compiled itself;
- from its own tree: a pyc written into a ``__pycache__`` the baseline held (a project
  without a ``.gitignore`` whose tests ran before the session) is never carried into the
  copy, though the directory held baseline files: byte code is not source (a changed one is
  named in the evidence; a new file in a cache directory is not even read).
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import py_compile
from pathlib import Path

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
from infomark.tools.attest import CheckResult, check, pycache
from tests.security.attested_project import BUGGY, FIXED, PYTEST, TESTS, git_project, ledger
from tests.security.attested_project import need_bwrap as _need_bwrap

TAG = importlib.util.cache_from_source("calc.py").rsplit("/", 1)[-1]  # calc.cpython-3XY.pyc


def unchecked_pyc(source: str) -> bytes:
    """An unchecked hash-based pyc of ``source``: CPython loads it without looking at the
    ``.py`` beside it."""
    code = compile(source, "calc.py", "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")  # hash-based, check_source off
    digest = importlib.util.source_hash(source.encode())
    return importlib.util.MAGIC_NUMBER + flags + digest + marshal.dumps(code)


#: the poisoners' targets: every place a later run might read byte code from
PLACES = """    places = [here, {project!r}, tempfile.gettempdir(), "/tmp", "/dev/shm"]
    up = here
    while up != "/":
        up = os.path.dirname(up)
        places.append(up)
"""

POISONER = (
    FIXED
    + """

def _poison():
    import importlib.util, marshal, os, tempfile
    code = compile("def add(a, b):\\n    return a + b\\n", "calc.py", "exec")
    pyc = (importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little")
           + importlib.util.source_hash(b"") + marshal.dumps(code))
    name = os.path.basename(importlib.util.cache_from_source(__file__))
    here = os.path.dirname(os.path.abspath(__file__))
"""
    + PLACES
    + """    for place in places:
        for sub in ("__pycache__", "."):
            try:
                os.makedirs(os.path.join(place, sub), exist_ok=True)
                with open(os.path.join(place, sub, name), "wb") as fh:
                    fh.write(pyc)
            except OSError:
                pass


_poison()
"""
)


def _session(tmp_path: Path) -> tuple[Gatekeeper, Path]:
    root = git_project(tmp_path, {"calc.py": BUGGY, "test_calc.py": TESTS})
    gk = Gatekeeper.open(tmp_path / "home", "bytecode", root=root)
    return gk, root


def _poison_then_restore(tmp_path: Path, poisoner: str) -> tuple[Gatekeeper, Path, CheckResult]:
    """An attested check of ``poisoner`` (the fix, plus code that plants byte code), then the
    bug put back and checked again: the later check, which must FAIL."""
    gk, root = _session(tmp_path)
    with gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))  # the baseline
        (root / "calc.py").write_text(poisoner.format(project=str(root)))
        first = check(gk, "C1")
        assert first.outcome == "PASS", first.text  # the fix, and the poison ran
        (root / "calc.py").write_text(BUGGY)  # back to the bug: nothing is carried
        assert not (root / "__pycache__").exists()  # the project was read-only
        later = check(gk, "C1")
        assert later.outcome == "FAIL", later.text
        assert "test_add" in later.text
        assert gk.state.claims["C1"].status != "Exact"
    return gk, root, later


def test_an_attested_run_cannot_leave_byte_code_for_a_later_one(tmp_path: Path) -> None:
    _need_bwrap()
    _, root, later = _poison_then_restore(tmp_path, POISONER)
    record = later.evidence.record if later.evidence else {}
    assert record["attested"]["carried"] == {}
    # infomark's own byte-code cache holds what infomark compiled, nothing the run wrote
    cache = pycache.cache_dir(str(tmp_path / "home"))
    assert cache is not None
    poisoner = POISONER.format(project=str(root)).encode()
    compiled = {hashlib.sha256(src).hexdigest() + ".pyc" for src in (poisoner, BUGGY.encode())}
    assert set(os.listdir(cache)) == compiled


def test_byte_code_in_the_agents_tree_is_not_carried(tmp_path: Path) -> None:
    _need_bwrap()
    gk, root = _session(tmp_path)
    # the user's tests ran before the session, and no .gitignore hides __pycache__: the
    # baseline holds the timestamp pyc, so its directory held baseline files
    py_compile.compile(str(root / "calc.py"), cfile=str(root / "__pycache__" / TAG))
    with gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))  # the baseline
        assert f"__pycache__/{TAG}" in _baseline_files(gk)
        (root / "__pycache__" / TAG).write_bytes(unchecked_pyc(FIXED))  # a changed file
        (root / "__pycache__" / "helper.cpython-999.pyc").write_bytes(b"new")  # a new one
        result = check(gk, "C1")
        assert result.outcome == "FAIL", result.text  # the baseline's buggy calc.py ran
        record = result.evidence.record if result.evidence else {}
        left_out = record["attested"]["left_out"]
        assert "byte code" in left_out[f"__pycache__/{TAG}"]
        assert "__pycache__/helper.cpython-999.pyc" not in left_out  # new in a cache dir: skipped
        assert record["attested"]["carried"] == {}
        assert gk.state.claims["C1"].status != "Exact"


def _baseline_files(gk: Gatekeeper) -> set[str]:
    from infomark.gates import baseline

    return set(baseline.load(gk.store, gk.store.refresh().baseline)["files"])


def test_a_compiled_extension_beside_a_test_module_is_not_carried(tmp_path: Path) -> None:
    """The import system tries extension modules before a ``.py`` of the same name: a ``.so``
    named after the test module would be imported in its place (and a passing one written in
    C would grade the buggy code)."""
    import importlib.machinery

    from infomark.tools.attest.carry import guard

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for name in (f"test_calc{suffix}", "conftest.abi3.so", "pkg/mod.so", "mod.pyd"):
        assert guard(name, {}) == (
            "a compiled extension: the interpreter imports it before a module's source"
        )
        assert guard(name, {name: ["git:0", "f"]}) is not None  # changed: not carried either
    assert guard("calc.py", {}) is None and guard("data/notes.sol", {}) is None
    _need_bwrap()
    gk, root = _session(tmp_path)
    with gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))  # the baseline
        (root / f"test_calc{suffix}").write_bytes(b"\x7fELF not really")
        result = check(gk, "C1")
        assert result.outcome == "FAIL", result.text  # the baseline's tests ran, and failed
        record = result.evidence.record if result.evidence else {}
        assert "compiled extension" in record["attested"]["left_out"][f"test_calc{suffix}"]
        assert gk.state.claims["C1"].status != "Exact"


REWRITE_POISONER = (
    FIXED
    + """

def _poison():
    import importlib.util, marshal, os, sys, tempfile
    from _pytest._version import version
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "test_calc.py"), "rb") as fh:
        digest = importlib.util.source_hash(fh.read())[:8]
    code = compile("def test_add():\\n    pass\\n", "test_calc.py", "exec")
    pyc = importlib.util.MAGIC_NUMBER + b"\\x03\\0\\0\\0" + digest + marshal.dumps(code)
    name = "test_calc." + sys.implementation.cache_tag + "-pytest-" + version + ".pyc"
"""
    + PLACES
    + """    for place in places:
        try:
            os.makedirs(os.path.join(place, "__pycache__"), exist_ok=True)
            with open(os.path.join(place, "__pycache__", name), "wb") as fh:
                fh.write(pyc)
        except OSError:
            pass


_poison()
"""
)


def test_an_attested_run_cannot_leave_rewritten_tests_for_a_later_one(tmp_path: Path) -> None:
    """pytest reads its rewritten test modules from ``__pycache__`` when the hash of the
    source matches, and the agent knows the test file's bytes: a forged one that passes must
    not reach a later run, and infomark's own cache of them holds only what it rewrote."""
    _need_bwrap()
    from infomark.tools.attest import rewrites

    _poison_then_restore(tmp_path, REWRITE_POISONER)
    rw = rewrites.rewriter(str(tmp_path / "home"))
    assert rw is not None and rw.cache, "infomark's interpreter holds pytest: the cache is used"
    assert os.listdir(rw.cache) == [hashlib.sha256(TESTS.encode()).hexdigest() + ".pyc"]
