"""Inline Python decided from where its values come from (issue 33): read-only one-liners of
real agents are execute; no program that contains a write primitive is ever execute.

SAFETY: the programs are DATA; they are parsed, never run.
"""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates.shell import classify_shell
from infomark.gates.shell.pycode import analyse_python
from infomark.gates.shell.pywriters import STD_WRITERS
from infomark.kernel.tools import ToolClass

# One-liners real agents ran while solving SWE-bench tasks (the public mini-swe-agent
# trajectories measured in docs/gates.md): none of them writes anything.
READ_ONLY = [
    "python -c \"import numpy as np; a = np.array(['a']); print(np.allclose(a, a))\"",
    "python3 -c \"from decimal import Decimal; d = Decimal('-1e-200'); print(d.is_signed())\"",
    'python3 -c "import datetime; print(datetime.datetime.now().year)"',
    "python3 -c \"from urllib.parse import urlsplit; print(urlsplit('http://e.com/'))\"",
    'python3 -X dev -c "import sys; print(sys._xoptions)"',
    'python -c "import matplotlib; print(matplotlib.get_backend())"',
    'python -c "import seaborn as sns; print(sns.get_dataset_names())"',
    'python -c "import xarray as xr; da = xr.DataArray(1); print(da.ndim)"',
    "python -c \"from sympy import Symbol; print(bool(Symbol('x')))\"",
    'python -c "from sympy import And; print(And(True, False, evaluate=False))"',
    "python3 -c \"import csv; print(list(csv.reader([' a , b '], skipinitialspace=True))[0])\"",
    "python3 -c \"import ast; print(ast.dump(ast.parse('d[1]')))\"",
    "python3 -c \"import unicodedata; print(unicodedata.combining('a'))\"",
    "python3 -c \"from django.db import models\nclass C(models.TextChoices):\n    A = 'a'\n"
    'print(C.A)"',
    "python3 <<EOF\nfrom enum import IntEnum\nclass IE(IntEnum):\n    A = 1\n"
    "print(repr(IE.A))\nEOF",
    'python -c "from sympy import S; print(S(1) == S.true)"',
    "python3 -c \"print(list(memoryview(b'abc')))\"",
    "node -e \"console.log(require('react/package.json').version)\"",
    'node -e "console.log(process.version)"',
]

# Programs that write, delete, run or load code, however they reach the primitive.
WRITES = [
    "import numpy; numpy.os.remove('x')",
    "import numpy as np; np.save('x', 1)",
    "import numpy as np; np.savez('x', a=1)",
    "import numpy as np; np.lib.npyio.savetxt('x', [1])",
    "from numpy import os as o; o.remove('x')",
    "import xarray as xr; xr.DataArray(1).to_netcdf('f')",
    "import pandas as pd; pd.DataFrame().to_csv('f')",
    "import h5py; h5py.File('f', 'w')",
    "import h5py; h5py.File('f', 'a')",
    "import numpy as np; np.memmap('f', mode='w+')",
    "import tarfile; tarfile.open('x.tgz', 'w:gz').add('src')",
    "import zipfile; zipfile.ZipFile('x.zip', mode='a')",
    "import pickle; pickle.loads(b'')",
    "from marshal import loads",
    "import pathlib; type(pathlib.Path('x')).replace(pathlib.Path('x'), 'y')",
    "import os\nfor m in [os]: m.remove('x')",
    "import os\nx = [os]\nx[0].remove('f')",
    "import os\nd = {'k': os}\nd['k'].remove('f')",
    "import os\na = 'x'\na = os\na.remove('f')",
    "import os; getattr(os, 'remove')('x')",
    "import numpy as np; getattr(np, 'sa' + 've')('f', 1)",
    "import numpy as np; np.__dict__['save']('f', 1)",
    "import numpy as np; vars(np)['save']('f', 1)",
    "from django.core.management import call_command; call_command('migrate')",
    "from django.conf import settings; settings.x = 1",
    "import numpy as np; del np.x",
    "import shutil as s; s.rmtree('x')",
    "from shutil import rmtree as r; r('x')",
    "from pkg import remove; remove('x')",
    "from pkg import do_remove; do_remove('x')",
    "import pkg; pkg.Model.objects.filter(a=1).update(x=1)",
    "import pkg; pkg.Model.objects.create(x=1)",
    "import pkg; pkg.Model().save()",
    "import os; (lambda: os.remove('x'))()",
    "import os; [os.remove(p) for p in ['x']]",
    "import numpy; f = numpy.save; f('x', 1)",
    "import sqlite3; sqlite3.connect('x.db').execute('DELETE FROM t')",
    "import os; os.environ['X'] = '1'",
    "import sys; sys.modules['x'] = None",
    "__builtins__.open('f', 'w')",
    "().__class__.__bases__[0].__subclasses__()",
    "import importlib; importlib.import_module('o' + 's').remove('x')",
    "from importlib import import_module as im; im('os').remove('x')",
    "import pathlib; p = pathlib.Path('x'); p.write_text('y')",
    "import matplotlib.pyplot as plt; plt.savefig('f.png')",
    "import py; py.process.cmdexec('touch f')",
    "import json, numpy; json.dump({}, numpy.DataSource().open('f', 'w'))",
    "import pandas as pd; pd.read_csv('a').dropna(inplace=True)",
    "import os, operator; operator.methodcaller('remove', 'f')(os)",
    "import os, operator; operator.attrgetter('remove')(os)('f')",
    "import os, functools; functools.reduce(getattr, ['remove'], os)('f')",
    "import pkg; pkg.builtins.eval('1')",
    "import pkg; pkg.sys.settrace(None)",
    "list(map(open, ['f'], ['w']))",
    "import io; list(map(io.open, ['f'], ['w']))",
    "import cffi; cffi.FFI().dlopen(None).fopen(b'f', b'w')",
    "import cffi; cffi.FFI().dlopen(None).creat(b'f', 420)",
    "import git; git.Repo('.').git.checkout('--', '.')",
    "import git; git.Repo('.').index.checkout(force=True)",
    "exec('import os')",
    "eval('1')",
    "compile('1', 'f', 'exec')",
    "setattr(__import__('os'), 'x', 1)",
    "open('f', 'w').write('x')",
    "print('x', file=open('f', 'a'))",
    "with open('f', 'w') as fh: fh.write('x')",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_one_liners_of_real_agents_are_execute(command: str) -> None:
    c = classify_shell(command)
    assert c.tool_class is ToolClass.EXECUTE, c


@pytest.mark.parametrize("code", WRITES)
def test_every_way_to_a_write_primitive_is_not_read_only(code: str) -> None:
    verdict = analyse_python(code)
    assert not verdict.read_only, code
    assert classify_shell(f"python3 -c {shlex.quote(code)}").tool_class.mutates, code


@pytest.mark.parametrize("code", WRITES)
def test_the_same_through_a_here_doc(code: str) -> None:
    assert classify_shell(f"python3 - <<'EOF'\n{code}\nEOF").tool_class.mutates, code


def test_the_writer_table_covers_this_interpreter() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_py_writers", Path(__file__).resolve().parents[3] / "scripts" / "gen_py_writers.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = module.writer_names() - STD_WRITERS
    assert not missing, f"run scripts/gen_py_writers.py: {sorted(missing)[:20]}"


# --- a grammar of programs: safe statements, and write primitives reached many ways -------

_SAFE = st.sampled_from(
    [
        "import numpy as np",
        "import sys",
        "from decimal import Decimal",
        "import sympy",
        "x = [1, 2, 3]",
        "print(len(x) if 'x' in dir() else 0)",
        "import sys\nprint(sys.version)",
        "import numpy as np\nprint(np.__version__)",
        "y = sorted([3, 1])\nprint(y)",
        "def f(a):\n    return a + 1\nprint(f(1))",
        "for i in range(3):\n    print(i)",
        "s = 'a,b'.split(',')\nprint(s)",
        "from decimal import Decimal\nprint(Decimal('1.0').is_signed())",
        "import sympy\nprint(sympy.Symbol('x'))",
        "d = {'a': 1}\nd.update(b=2)\nprint(d)",
    ]
)
_MODULES = st.sampled_from(["os", "shutil", "subprocess", "tempfile"])
_ALIASES = st.sampled_from(["m", "o", "np", "x", "data", "helper"])


@st.composite
def _unsafe(draw: st.DrawFn) -> str:
    alias = draw(_ALIASES)
    module = draw(_MODULES)
    forms = [
        f"import {module} as {alias}\n{alias}.{draw(st.sampled_from(_PRIMITIVES[module]))}('f')",
        f"from {module} import {draw(st.sampled_from(_PRIMITIVES[module]))} as {alias}\n"
        f"{alias}('f')",
        f"import numpy\n{alias} = numpy.{module}\n"
        f"{alias}.{draw(st.sampled_from(_PRIMITIVES[module]))}('f')",
        f"import {module}\n{alias} = [{module}]\n"
        f"{alias}[0].{draw(st.sampled_from(_PRIMITIVES[module]))}('f')",
        f"import {module}\nfor {alias} in ({module},):\n"
        f"    {alias}.{draw(st.sampled_from(_PRIMITIVES[module]))}('f')",
        f"import {module}\ngetattr({module}, {alias!r} + 'x')('f')",
        f"{alias} = open('f', {draw(st.sampled_from(['w', 'a', 'x', 'r+', 'wb', 'w:gz']))!r})",
        f"import numpy as {alias}\n{alias}.{draw(st.sampled_from(_LIB_WRITERS))}('f', 1)",
        f"{draw(st.sampled_from(['exec', 'eval', 'compile']))}('1')",
        f"__import__({alias!r} + 's')",
        f"import sys\nsys.{alias} = 1",
        f"import numpy as np\ndel np.{alias}",
        f"import numpy as np\nnp.zeros(1).tofile({alias!r})",
        f"import pandas as pd\npd.DataFrame().{draw(st.sampled_from(_LIB_WRITERS))}('f')",
        f"import pathlib as {alias}\n{alias}.Path('f').{draw(st.sampled_from(_PATH_WRITERS))}()",
        f"from pathlib import Path\n{alias} = Path('f')\n"
        f"{alias}.{draw(st.sampled_from(_PATH_WRITERS))}()",
    ]
    return draw(st.sampled_from(forms))


_PRIMITIVES = {
    "os": ["remove", "unlink", "rmdir", "mkdir", "makedirs", "rename", "replace", "system",
           "truncate", "chmod", "symlink", "link", "utime", "popen", "removedirs"],
    "shutil": ["rmtree", "copy", "copyfile", "copytree", "move", "make_archive", "chown"],
    "subprocess": ["run", "call", "check_call", "check_output", "Popen", "getoutput"],
    "tempfile": ["mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile"],
}  # fmt: skip
_PATH_WRITERS = ["write_text", "write_bytes", "unlink", "touch", "mkdir", "rmdir", "rename",
                 "replace", "symlink_to", "hardlink_to", "chmod"]  # fmt: skip
_LIB_WRITERS = ["save", "savez", "savetxt", "to_csv", "to_pickle", "to_netcdf", "dump", "tofile",
                "write_bytes", "savefig", "to_parquet"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(before=st.lists(_SAFE, max_size=3), unsafe=_unsafe(), after=st.lists(_SAFE, max_size=3))
def test_no_program_with_a_write_primitive_is_read_only(
    before: list[str], unsafe: str, after: list[str]
) -> None:
    code = "\n".join([*before, unsafe, *after])
    assert not analyse_python(code).read_only, code


@settings(max_examples=100, deadline=None)
@given(program=st.lists(_SAFE, min_size=1, max_size=6))
def test_programs_of_safe_statements_are_read_only(program: list[str]) -> None:
    code = "\n".join(program)
    assert analyse_python(code).read_only, (code, analyse_python(code).why)
