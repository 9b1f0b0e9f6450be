# ruff: noqa: E501  (a table of command templates: one template per item reads best)
"""Generate tests/corpus/agent_commands.jsonl: realistic shell commands of coding agents, labelled.

Written for this project from documented agent behaviour (the command shapes SWE-agent /
OpenHands / Claude Code style agents issue while exploring, reproducing, editing and testing a
repository: see SWE-bench trajectories as published in their papers); no third-party data is
copied. Labels come from the template each command was made from, never from the classifier:

- ``read``: only reads (ls, cat, grep, git status, python -c that prints a version …)
- ``execute``: runs a program whose effect the command line does not state (pytest, a script)
- ``modify``: the command line itself writes, edits, installs or commits
- ``destructive``: it deletes or discards work (rm -rf, git reset --hard, DROP TABLE …)

``mutates`` is true for modify and destructive. Run ``python tests/corpus/generate.py`` to
rewrite the file (deterministic: a fixed seed).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

R = random.Random(20261201)

PROJECTS = {
    "django": [
        "django/db/models/query.py",
        "django/forms/fields.py",
        "django/utils/text.py",
        "django/core/management/base.py",
        "tests/queries/tests.py",
        "django/http/response.py",
    ],
    "sympy": [
        "sympy/core/expr.py",
        "sympy/simplify/simplify.py",
        "sympy/printing/latex.py",
        "sympy/solvers/solvers.py",
        "sympy/core/tests/test_expr.py",
    ],
    "astropy": [
        "astropy/io/fits/header.py",
        "astropy/units/core.py",
        "astropy/table/table.py",
        "astropy/wcs/wcs.py",
    ],
    "requests": [
        "requests/models.py",
        "requests/sessions.py",
        "requests/utils.py",
        "tests/test_requests.py",
    ],
    "flask": ["src/flask/app.py", "src/flask/cli.py", "tests/test_basic.py"],
    "pytest": ["src/_pytest/python.py", "src/_pytest/fixtures.py", "testing/test_collection.py"],
    "sklearn": [
        "sklearn/linear_model/_base.py",
        "sklearn/utils/validation.py",
        "sklearn/metrics/_classification.py",
    ],
    "matplotlib": ["lib/matplotlib/axes/_axes.py", "lib/matplotlib/colors.py"],
    "xarray": ["xarray/core/dataset.py", "xarray/core/variable.py"],
    "sphinx": ["sphinx/ext/autodoc/__init__.py", "sphinx/domains/python.py"],
}
WORDS = [
    "QuerySet",
    "def filter",
    "class Field",
    "_check_",
    "TODO",
    "deprecated",
    "latex",
    "simplify",
    "__repr__",
    "Header",
    "verbose_name",
    "raise ValueError",
    "def test_",
    "import re",
    "self.assert",
    "kwargs",
    "encoding",
    "timezone",
    "autodoc",
    "fit_intercept",
]
DIRS = [
    "src",
    "tests",
    "django/db",
    "sympy/core",
    "lib",
    "docs",
    "astropy/io",
    "testbed",
    "requests",
    "sklearn/utils",
    ".",
]
PKGS = [
    "numpy",
    "pytest",
    "sympy",
    "django",
    "requests",
    "astropy",
    "pandas",
    "setuptools",
    "hypothesis",
    "matplotlib",
    "flask",
    "attrs",
]
TESTS = [
    "test_basic",
    "test_filter",
    "test_latex_printing",
    "test_header_fromstring",
    "test_unit_conversion",
    "test_repr",
    "test_fit",
    "test_issue_12345",
]


def pick(seq: list[str]) -> str:
    return R.choice(seq)


def src() -> str:
    return R.choice(R.choice(list(PROJECTS.values())))


def word() -> str:
    return pick(WORDS)


def n() -> int:
    return R.randint(1, 400)


def read() -> str:
    f, w, d = src(), word(), pick(DIRS)
    a = n()
    b = a + R.randint(5, 80)
    project = pick(list(PROJECTS))
    pkg = pick(PKGS)
    forms = [
        "ls", f"ls -la {d}", f"ls -R {d} | head -50", f"cat {f}", f"head -n {a} {f}",
        f"tail -n {a} {f}", f"wc -l {f}", f'grep -rn "{w}" {d}', f'grep -n "{w}" {f}',
        f'grep -rn "{w}" --include="*.py" {d} | head -20', f'rg "{w}" {d}',
        f'find {d} -name "*.py" | head -20', f'find . -type f -name "*{w.split()[-1]}*"',
        f"sed -n '{a},{b}p' {f}", f"nl -ba {f} | sed -n '{a},{b}p'",
        f"awk 'NR>={a} && NR<={b}' {f}", "git status", "git diff", f"git diff -- {f}",
        "git log --oneline -n 10", "git show HEAD --stat", f"git blame -L {a},{b} {f}",
        f"git log -p -n 3 -- {f}", "git stash list", "git branch -a", "git remote -v",
        f"git grep -n \"{w}\"", f"git ls-files | grep {project}", f"tree -L 2 {d}",
        f"file {f}", f"stat {f}", f"du -sh {d}", "which python", "python --version",
        f"pip show {pkg}", f"pip list | grep {pkg}", "pip freeze", "echo $PATH", "pwd",
        "env | grep PYTHON", f"cat {f} | grep -n \"{w}\"", f"cd /testbed && grep -rn \"{w}\" .",
        f"cd /testbed && ls {d}", f'python3 -c "import {pkg}; print({pkg}.__version__)"',
        f'python -c "import {pkg}; print({pkg}.__file__)"', 'python3 -c "import sys; print(sys.path)"',
        'python -c "import django; print(django.get_version())"',
        'python3 -c "import sys; print(sys.version_info)"', f"grep -c \"{w}\" {f}",
        f"diff {f} {src()}", f"md5sum {f}", "jq '.name' package.json", "cat setup.cfg",
        "cat pyproject.toml", "cat tox.ini", f"xxd {f} | head", f"od -c {f} | head -20",
        f"sort {f} | uniq -c | sort -rn | head", "cut -d: -f1 /etc/passwd | head",
        "ps aux | grep python", "df -h", "uname -a", "cat /etc/os-release", "date",
        f"realpath {f}", f"readlink -f {f}", f"test -f {f} && echo yes", f"[ -d {d} ] && echo ok",
        "sqlite3 db.sqlite3 '.tables'", "sqlite3 db.sqlite3 'SELECT * FROM auth_user LIMIT 5'",
        "python -m json.tool package.json", f"sed -n '/{w}/,+20p' {f}", f"cat -n {f} | head -100",
        f"head -c 500 {f}", "ls -la | grep -i test", "awk -F, '{print $2}' data.csv | head",
        "python3 -c \"import json; print(json.load(open('package.json'))['version'])\"",
        f"python -c \"print(open('{f}').read()[:500])\"", "git config --get user.name",
        f"find {d} -name '*.py' -newer setup.py", f"grep -rl \"{w}\" {d} | xargs grep -n import",
        f"cat {f} | head -n {a} | tail -n 20", f"less {f}", f"python -m pydoc {pkg}",
        f"python3 -c \"from {pkg} import __version__ as v; print(v)\"", "echo done",
        f"ls {d} | wc -l", "git log --format='%H %s' -n 5", "git rev-parse HEAD",
        f"git show HEAD:{f} | head -50", "history | tail", "conda list | grep numpy",
        f"python - <<'EOF'\nimport {pkg}\nprint({pkg}.__version__)\nEOF",
        f"python3 - <<'EOF'\nwith open('{f}') as fh:\n    print(fh.read()[:300])\nEOF",
        f"echo 'import {pkg}; print({pkg}.__name__)' | python3",
        "sqlite3 app.db 'SELECT count(*) FROM users'", "curl -s https://pypi.org/pypi/requests/json | head -c 300",
        f"strings {f} | head", f"hexdump -C {f} | head", "nproc", "free -m",
        f"ls -lt {d} | head", "find . -path ./node_modules -prune -o -name '*.ts' -print | head",
        # read-only code that calls library functions: not decidable from the AST alone
        "python -c \"from sympy import symbols, simplify; x = symbols('x'); print(simplify(x**2 + 2*x + 1))\"",
        "python3 -c \"from sympy import latex, Symbol; print(latex(Symbol('x')**2))\"",
        "python -c \"import numpy as np; print(np.arange(5).sum())\"",
        "python3 -c \"from django.conf import settings; settings.configure(); print(settings.DEBUG)\"",
        "python -c \"from astropy.io import fits; print(fits.Header.fromstring('SIMPLE  =                    T'))\"",
        "python3 -c \"import inspect, requests; print(inspect.signature(requests.get))\"",
        "python -c \"import re; print(re.findall(r'\\d+', 'a1b22'))\"",
        "python3 -c \"from packaging.version import Version; print(Version('1.2') < Version('1.10'))\"",
    ]  # fmt: skip
    return pick(forms)


def execute() -> str:
    t, f = pick(TESTS), src()
    forms = [
        "pytest", "pytest -q", "pytest -x -q", f"pytest {f} -q", f"pytest -k {t} -q",
        f"python -m pytest {f}::{t} -xvs", f"python -m pytest tests/ -k {t}",
        "python reproduce.py", "python reproduce_issue.py", "python3 test_fix.py", "python repro.py",
        "tox -e py39", "make test", "./runtests.py queries", f"python tests/runtests.py {t} --verbosity 2",
        "npm test", "go test ./...", "cargo test", f"python -m unittest tests.{t}",
        "timeout 60 python reproduce.py", "python manage.py check", "node index.js", "bash run_tests.sh",
        f"mypy {f}", f"flake8 {f}", f"ruff check {f}", f"black --check {f}", f"python -m doctest {f}",
        "coverage report", f"pylint {f}", "sleep 2", "true", f"python -W error {f}",
        f"cd /testbed && python -m pytest {f} -q 2>&1 | tail -20", "python -m pytest --collect-only -q",
        f"pytest {f} -q 2>&1 | head -50", "python -X dev reproduce.py", "python3 -u run.py",
        f"isort --check-only {f}", "make -n", "npm run lint", "python -m pip check",
        "python setup.py --version", "python manage.py test", "./manage.py showmigrations",
        "git fetch --dry-run", "docker ps", "cargo build", "go build ./...", "make",
        # staging writes the index only, never the working tree (issue 12)
        f"git add {f}", "git add -A", f"git restore --staged {f}",
    ]  # fmt: skip
    return pick(forms)


def modify() -> str:
    f, w, pkg = src(), word(), pick(PKGS)
    a = n()
    forms = [
        f"sed -i 's/{w.split()[-1]}/{w.split()[-1]}_new/' {f}", f"sed -i.bak '{a}d' {f}",
        f"sed -i '{a}a\\    return None' {f}",
        f"cat > reproduce.py << 'EOF'\nfrom {pkg} import *\nprint('reproducing')\nEOF",
        f"cat <<EOF > test_fix.py\nimport {pkg}\nassert {pkg}\nEOF", "echo 'print(1)' > reproduce.py",
        f"echo '# fix' >> {f}", "printf 'x = 1\\n' > scratch.py",
        f"tee reproduce.py <<'EOF'\nimport {pkg}\nEOF", f"cp {f} {f}.orig", f"mv {f}.orig {f}",
        "mkdir -p tests/regression", "touch tests/regression/__init__.py", "rm reproduce.py",
        f"pip install {pkg}", "pip install -e .", f"pip install '{pkg}>=1.0'", "npm install",
        "git commit -m 'Fix issue'", "git checkout -b fix-branch",
        "git stash", "git apply fix.patch", "patch -p1 < fix.patch",
        f"python - <<'EOF'\nimport re\np = '{f}'\ns = open(p).read()\nopen(p, 'w').write(s.replace('a', 'b'))\nEOF",
        f"python -c \"open('{f}', 'a').write('\\n')\"",
        "python3 -c \"import pathlib; pathlib.Path('notes.txt').write_text('x')\"",
        "chmod +x run.sh", "ln -s ../lib lib", f"black {f}", f"ruff format {f}", f"ruff check --fix {f}",
        f"isort {f}", f"awk '{{print $1}}' {f} > out.txt", "sort -o data.txt data.txt",
        "curl -sL -o data.json https://example.com/data.json", "wget https://example.com/file.tar.gz",
        "tar xzf file.tar.gz", "unzip archive.zip", "python setup.py develop", "python setup.py install",
        "python setup.py build_ext --inplace", "python manage.py migrate", "python manage.py makemigrations",
        "git merge main", "git rebase -i HEAD~3", "git cherry-pick abc123", "git reset --soft HEAD~1",
        "sqlite3 app.db \"INSERT INTO users (name) VALUES ('x')\"",
        "psql -c \"UPDATE users SET active = false WHERE id = 3\"", "yq -i '.version = \"2\"' config.yaml",
        "jq '.a = 1' f.json > tmp.json && mv tmp.json f.json", "truncate -s 0 log.txt",
        f"cd /testbed && sed -i 's/old/new/g' {f}", f"echo '{w}' | tee -a notes.md",
        f"perl -pi -e 's/foo/bar/' {f}", "git commit --amend --no-edit", "git tag v1.0",
        "npm install --save-dev jest", "uv pip install -r requirements.txt", "poetry add requests",
        "conda install -y numpy", f"python -m pip install --upgrade {pkg}", "pre-commit install",
        "git config user.email agent@example.com", "mkdir build && cd build && cmake ..",
        f"python3 /dev/stdin <<< \"open('{f}','w').write('')\"", "git submodule update --init",
        "dos2unix script.sh", "python -m venv .venv", "npm ci", "cargo add serde", "go mod tidy",
        f"cat {f} | sed 's/a/b/' > {f}.new", f"sed -n 'w copy.py' {f}", "uniq data.txt dedup.txt",
        "python3 -m json.tool in.json out.json", "openssl req -new -x509 -nodes -out cert.pem -keyout key.pem",
        "iconv -f latin1 -t utf-8 -o out.txt in.txt", "xxd -r dump.hex out.bin", "/usr/bin/time -o timing.txt make",
        "pytest -q 2>&1 | tee test_output.log", "python reproduce.py > output.txt 2>&1",
        "git diff > fix.patch", "pip freeze > requirements.txt", "git diff --output=changes.diff", "awk '{print > $1\".txt\"}' data.txt", "gawk -i inplace '{print}' f",
    ]  # fmt: skip
    return pick(forms)


def destructive() -> str:
    f = src()
    forms = [
        "rm -rf build", "rm -rf build/ dist/ *.egg-info", "rm -f reproduce.py", "rm -rf __pycache__",
        "find . -name '*.pyc' -delete", "find . -name __pycache__ -exec rm -rf {} +",
        "git reset --hard", "git reset --hard HEAD~1", f"git checkout -- {f}", f"git checkout {f}",
        "git clean -fd", "git clean -fdx", "git stash drop", f"git restore {f}", "git branch -D old",
        "git push --force origin main", "psql -c 'DROP TABLE users'", "sqlite3 db.sqlite3 'DELETE FROM sessions'",
        "sqlite3 app.db 'DELETE FROM users WHERE 1'", "mysql -e 'TRUNCATE logs'", "rm -r node_modules",
        "rsync -a --delete src/ dst/", "dd if=/dev/zero of=disk.img bs=1M count=1",
        "git -c alias.x='reset --hard' x", "cd /testbed && git checkout -- .", "shred -u secret.txt",
        "python manage.py flush --noinput", "git stash clear", "rm -rf .git", "git worktree remove --force wt",
        "sqlite3 app.db 'UPDATE users SET password = NULL'", "xargs rm -f < files.txt",
        "git filter-branch --force --index-filter 'git rm --cached secrets' HEAD",
    ]  # fmt: skip
    return pick(forms)


def main() -> None:
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    plan = [("read", read, 560), ("execute", execute, 200), ("modify", modify, 300),
            ("destructive", destructive, 60)]  # fmt: skip
    for label, make, count in plan:
        made = tries = 0
        while made < count and tries < count * 50:
            tries += 1
            command = make()
            if command in seen:
                continue
            seen.add(command)
            rows.append({"command": command, "label": label,
                         "mutates": label in ("modify", "destructive")})  # fmt: skip
            made += 1
    out = Path(__file__).with_name("agent_commands.jsonl")
    with out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} commands → {out}")


if __name__ == "__main__":
    main()
