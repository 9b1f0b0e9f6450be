"""Inline Python is read-only only when its AST proves it (issue 12 §5), and every way around the
allow-list a hostile agent would try stays a mutation.

SAFETY: the code strings are DATA; they are parsed with `ast`, never run.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates.shell import classify_shell
from infomark.gates.shell.pycode import analyse_python
from infomark.kernel.tools import ToolClass

READ_ONLY = [
    "import django; print(django.get_version())",
    "import sys; print(sys.version_info)",
    "print(open('setup.py').read()[:200])",
    "import json; print(json.load(open('package.json'))['version'])",
    "from pathlib import Path; print(Path('README.md').read_text()[:100])",
    "from importlib.metadata import version; print(version('pytest'))",
    "import sys; sys.stdout.write('x\\n')",
    "from hypothesis import __version__ as v; print(v)",
    "import os; print(os.getcwd(), os.listdir('.'))",
    "with open('a.txt') as f:\n    for line in f:\n        print(line.strip())",
    "import gzip; print(gzip.open('x.gz').read()[:10])",
]

ATTACKS = [
    "import os; os.remove('x')",
    "import shutil; shutil.rmtree('build')",
    "open('x', 'w').write('1')",
    "open('x', mode='a')",
    "open('x', **{'mode': 'w'})",
    "from pathlib import Path; Path('x').write_text('1')",
    "from pathlib import Path; Path('x').open('w').write('1')",
    "import io; io.open('x', 'w')",
    "import os; os.open('x', os.O_WRONLY | os.O_CREAT)",
    "import subprocess; subprocess.run(['rm', 'x'])",
    "import os; os.system('rm -rf x')",
    "sorted(['x'], key=__import__('os').remove)",
    "import os; list(map(os.remove, ['x']))",
    "import os; f = os.remove; f('x')",
    "import os as print; print.remove('x')",
    "from os import remove as print; print('x')",
    "from os.path import exists; from shutil import rmtree as exists; exists('d')",
    "from pathlib import Path; Path = __import__('shutil').rmtree; Path('d')",
    "import os; getattr(os, 'remove')('x')",
    "import os; os.__dict__['remove']('x')",
    "import os; vars(os)['remove']('x')",
    "exec('import os; os.remove(1)')",
    "eval(\"__import__('os').remove('x')\")",
    "import importlib; importlib.import_module('o' + 's').remove('x')",
    "import os; os.environ['PATH'] = ''",
    "import sys; sys.modules['os'].remove('x')",
    "import os.path; os.path.exists = print",
    "import os, glob; os.chmod(glob.glob('.info*/key')[0], 0o644)",
    "import pickle; pickle.dump({}, open('x', 'wb'))",
    "import sqlite3; sqlite3.connect('app.db').execute('DELETE FROM t')",
    "import tempfile; tempfile.mkdtemp()",
    "def f():\n    import os\n    os.remove('x')\nf()",
    "class A:\n    def __del__(self):\n        __import__('os').remove('x')\nA()",
    "(lambda: __import__('os').remove('x'))()",
    "import os\nos.rename('a', 'b')",
    "x = 1\nif x:\n    import shutil\n    shutil.copy('a', 'b')",
    "print(",  # not Python: undecidable
]


@pytest.mark.parametrize("code", READ_ONLY)
def test_read_only_code_is_execute(code: str) -> None:
    verdict = analyse_python(code)
    assert verdict.read_only, verdict
    result = classify_shell("python3 -c " + _q(code))
    assert result.tool_class is ToolClass.EXECUTE, result


@pytest.mark.parametrize("code", ATTACKS)
def test_every_way_around_the_allow_list_is_a_mutation(code: str) -> None:
    assert not analyse_python(code).read_only, code
    for command in (
        "python3 -c " + _q(code),
        f"python3 - <<'EOF'\n{code}\nEOF",
        "python3 /dev/stdin <<< " + _q(code),
        "echo " + _q(code) + " | python3",
    ):
        assert classify_shell(command).tool_class.mutates, command


def test_a_here_doc_that_expands_is_not_trusted() -> None:
    # an unquoted here-doc body is expanded by the shell first: what Python sees is unknown
    result = classify_shell('python3 - <<EOF\nimport os\nos.$(echo remove)("x")\nEOF')
    assert result.tool_class.mutates


def test_a_computed_dash_c_is_opaque() -> None:
    result = classify_shell('python3 -c "$CODE"')
    assert result.tool_class is ToolClass.MODIFY


def test_the_reads_of_read_only_code_are_paths() -> None:
    result = classify_shell("python3 -c \"print(open('.infomark/key').read())\"", cwd="/w")
    assert "/w/.infomark/key" in result.paths


MUTATIONS = st.sampled_from(
    [
        "os.remove('x')",
        "shutil.rmtree('d')",
        "open('f', 'w')",
        "Path('f').write_text('')",
        "subprocess.call('x')",
    ]
)
HARMLESS = st.sampled_from(["print(1)", "x = len('ab')", "import sys", "print(sys.argv)", "pass"])


@settings(max_examples=200, deadline=None)
@given(st.lists(HARMLESS, max_size=4), MUTATIONS, st.lists(HARMLESS, max_size=4))
def test_one_mutating_statement_anywhere_makes_it_a_mutation(
    before: list[str], bad: str, after: list[str]
) -> None:
    code = "\n".join(
        ["import os, shutil, subprocess", "from pathlib import Path", *before, bad, *after]
    )
    assert not analyse_python(code).read_only, code


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
