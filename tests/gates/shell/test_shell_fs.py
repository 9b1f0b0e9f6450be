"""The shell classifier reads the file system only through ``gates/shell_fs`` (so a
classification that read nothing is known to, and its class may be reused for the result of
the call it decided: ``gates/watch``)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates import shell_fs
from infomark.gates.shell import classify_shell

SHELL = Path(__file__).resolve().parents[3] / "infomark" / "gates" / "shell"

# what reads the file system (or the process's cwd, or the password database)
_OS = {"stat", "lstat", "listdir", "scandir", "walk", "getcwd", "readlink", "access", "open",
       "fspath"}  # fmt: skip
_OS_PATH = {"isdir", "isfile", "exists", "lexists", "realpath", "expanduser", "islink",
            "getsize", "getmtime", "abspath", "samefile", "ismount"}  # fmt: skip
# tree.py's loader of the tree-sitter extension modules: where the parser is, not the command
_ALLOWED = {("tree.py", "_extension")}


def _reads(tree: ast.AST, name: str) -> list[str]:
    found: list[str] = []

    class V(ast.NodeVisitor):
        where = ""

        def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
            outer, self.where = self.where, node.name
            self.generic_visit(node)
            self.where = outer

        def visit_Call(self, node: ast.Call) -> None:
            f = node.func
            text = ast.unparse(f)
            bad = (
                text in ("open", "io.open", "Path", "pathlib.Path", "glob.glob", "glob.iglob")
                or text.startswith("shutil.")
                or (text.startswith("os.path.") and text[8:] in _OS_PATH)
                or (text.startswith("os.") and text[3:] in _OS)
            )
            if bad and (name, self.where) not in _ALLOWED:
                found.append(f"{name}:{node.lineno} {text}() in {self.where or 'module'}")
            self.generic_visit(node)

    V().visit(tree)
    return found


def test_the_shell_package_reads_files_only_through_shell_fs() -> None:
    found = []
    for path in sorted(SHELL.glob("*.py")):
        found += _reads(ast.parse(path.read_text()), path.name)
    assert found == [], "read through infomark.gates.shell_fs instead: " + "; ".join(found)


def test_the_check_catches_a_direct_read() -> None:
    planted = ast.parse("import os\ndef f(p):\n    return os.path.isfile(p) or open(p)\n")
    assert len(_reads(planted, "x.py")) == 2


def _seen(command: str, cwd: str | None) -> bool:
    shell_fs.begin()
    classify_shell(command, cwd=cwd)
    return not shell_fs.untouched()


def test_what_counts_as_a_read(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("drop table t;\n")
    cwd = str(tmp_path)
    assert not _seen("python3 check.py 4", cwd)  # the paths it names resolved: not the class
    assert _seen("ls *.py", cwd)  # a glob lists the directory
    assert _seen("psql -f a.sql", cwd)  # the file's SQL is read
    assert _seen("echo hi", None)  # the process's cwd
    assert not _seen("echo hi", cwd)
    assert not _seen("true && echo 'a b' | wc -l", cwd)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab ./*?~$'\"-;|&", max_size=24))
def test_a_classification_that_read_nothing_does_not_depend_on_the_tree(command: str) -> None:
    """Same command, same start directory: the class found in an empty directory is the
    class found in a populated one whenever the first classification read nothing."""
    import tempfile

    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as full:
        for name in ("a", "b", "ab", ".a", "a.b"):
            Path(full, name).write_text("x")
        os.mkdir(os.path.join(full, "d"))
        shell_fs.begin()
        first = classify_shell(command, cwd=empty)
        if not shell_fs.untouched():
            return
        # the same directory name, now holding files
        os.rmdir(empty)
        os.symlink(full, empty)
        try:
            again = classify_shell(command, cwd=empty)
        finally:
            os.unlink(empty)
            os.mkdir(empty)
        assert (again.tool_class, again.opaque) == (first.tool_class, first.opaque)
