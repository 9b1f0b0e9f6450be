"""The shell classification table: one row per command line, with its expected class.

SAFETY: these strings are DATA. They are parsed, never run. Keep them in this file; never paste
them into a shell.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infomark.gates.classify import ToolClass
from infomark.gates.shell import classify_shell

E, M, D = ToolClass.EXECUTE, ToolClass.MODIFY, ToolClass.DESTRUCTIVE

# (command, expected class, expected destructive family or None)
TABLE: list[tuple[str, ToolClass, str | None]] = [
    # --- plain execute ------------------------------------------------------------------------
    ("", E, None),
    ("# only a comment rm -rf /", E, None),
    ("ls -la", E, None),
    ("cat README.md", E, None),
    ("grep -rn TODO src", E, None),
    ("pytest -q", E, None),
    ("python -m pytest tests -x", E, None),
    ("python3 script.py --flag", E, None),
    ("make test", E, None),
    ("echo hello", E, None),
    ("echo rm -rf /", E, None),
    ("true", E, None),
    ("export PATH=$PATH:/opt/bin", E, None),
    ("read -r line", E, None),
    ("echo $(( 1 + 2 ))", E, None),
    ("docker ps", E, None),
    ("node app.js", E, None),
    ("node --version", E, None),
    ("perl script.pl", E, None),
    ("bash script.sh", E, None),
    ("ssh host uptime", E, None),
    # pipelines and lists
    ("ls -la | wc -l", E, None),
    ("grep -q foo file && echo found || echo missing", E, None),
    ("ls; pwd; date", E, None),
    ("git log --oneline | head -5", E, None),
    # compound statements
    ("(cd src && ls)", E, None),
    ("{ ls; pwd; }", E, None),
    ('for f in *.py; do wc -l "$f"; done', E, None),
    ("if [ -f x ]; then cat x; else echo none; fi", E, None),
    ('while read line; do echo "$line"; done < input.txt', E, None),
    ("case $x in a) ls;; *) pwd;; esac", E, None),
    ("f() { ls; }; f", E, None),
    ("[[ -d build ]] && echo yes", E, None),
    ("diff <(ls a) <(ls b)", E, None),
    ("x=$(git rev-parse HEAD) && echo $x", E, None),
    ("echo `date`", E, None),
    # wrappers around harmless commands
    ("sudo ls /root", E, None),
    ("env FOO=1 BAR=2 pytest", E, None),
    ("timeout 10 pytest -x", E, None),
    ("nice -n 5 make", E, None),
    ("nohup python server.py", E, None),
    ("command -v rm", E, None),
    ("time make build", E, None),
    ("printf '%s\\n' a b | xargs -n1 echo", E, None),
    # redirects that do not write files
    ("ls 2>/dev/null", E, None),
    ("ls > /dev/null 2>&1", E, None),
    ("make &> /dev/null", E, None),
    ("ls >&2", E, None),
    ("pytest 2>&1 | tee /dev/stderr", E, None),
    ("cat < input.txt", E, None),
    # git reads
    ("git status", E, None),
    ("git diff HEAD~1", E, None),
    ("git -C sub status", E, None),
    ("git --no-pager log -p", E, None),
    ("git branch -a", E, None),
    ("git branch", E, None),
    ("git tag -l 'v*'", E, None),
    ("git stash list", E, None),
    ("git remote -v", E, None),
    ("git config --get user.name", E, None),
    ("git clean -n", E, None),
    ("git apply --check fix.patch", E, None),
    ("git worktree list", E, None),
    ("git show HEAD:src/app.py", E, None),
    # tools that only read
    ("curl -s https://example.com", E, None),
    ("curl -s -o /dev/null -w '%{http_code}' https://example.com", E, None),
    ("wget -qO- https://example.com", E, None),
    ("tar -tzf a.tgz", E, None),
    ("tar -czf - src | wc -c", E, None),
    ("unzip -l a.zip", E, None),
    ("sed -n '1,5p' file", E, None),
    ("sort -u names.txt", E, None),
    ("find . -name '*.py'", E, None),
    ("pip list", E, None),
    ("npm test", E, None),
    ("cargo test", E, None),
    ("go build ./...", E, None),
    ("uv run pytest", E, None),
    ("poetry run pytest -q", E, None),
    ("npx tsc --noEmit", E, None),
    ("black --check .", E, None),
    ("ruff check .", E, None),
    ("ruff format --check .", E, None),
    ("bash -c 'ls -la'", E, None),
    ('sh -c "echo hi"', E, None),
    # SQL that only reads
    ("psql -c 'SELECT 1'", E, None),
    ("sqlite3 app.db 'SELECT count(*) FROM users'", E, None),
    ("mysql -e 'SHOW TABLES' app", E, None),
    # --- quoted text, here-doc bodies and messages never count ---------------------------------
    ('echo "rm -rf /"', E, None),
    ("echo 'git reset --hard'", E, None),
    ('echo "git push --force origin main"', E, None),
    ("grep -r 'rm -rf' .", E, None),
    ('git log --grep="rm -rf"', E, None),
    ("git log -S 'DROP TABLE'", E, None),
    ('wc -l <<< "rm -rf /"', E, None),
    ("cat <<'EOF'\nrm -rf /\ngit reset --hard\nEOF", E, None),
    ("cat <<EOF\nDROP TABLE users;\nEOF", E, None),
    ("psql -c \"SELECT 'DROP TABLE t'\"", E, None),
    ("psql -c 'SELECT 1 -- DROP TABLE t'", E, None),
    ("sqlite3 app.db \"SELECT * FROM t WHERE note = 'truncate me'\"", E, None),
    ('git commit -m "rm -rf /"', M, None),
    ("git commit -m 'git reset --hard and git push --force'", M, None),
    ('echo "DROP TABLE users" > notes.txt', M, None),
    ("cat > notes.md <<EOF\nrm -rf /\nEOF", M, None),
    ("cat <<'EOF' > script.sh\nrm -rf /\nEOF", M, None),
    # --- modify: redirects ----------------------------------------------------------------------
    ("echo hi > out.txt", M, None),
    ("echo hi >> log.txt", M, None),
    ("ls &> all.log", M, None),
    ("make 2> errors.log", M, None),
    ("echo x >| forced.txt", M, None),
    ("cat a b > c", M, None),
    ('ls > "$OUT"', M, None),
    ("{ ls; pwd; } > listing.txt", M, None),
    ("for f in *.txt; do echo $f >> all.txt; done", M, None),
    ("exec > log.txt", M, None),
    # tee, sed -i, perl -i
    ("tee output.txt", M, None),
    ("pytest | tee results.log", M, None),
    ("sed -i 's/a/b/' file.txt", M, None),
    ("sed -i.bak -e 's/a/b/' f", M, None),
    ("sed --in-place 's/x/y/' f", M, None),
    ("perl -pi -e 's/a/b/' f", M, None),
    # file commands
    ("mv a b", M, None),
    ("cp -r src dst", M, None),
    ("touch new.txt", M, None),
    ("mkdir -p build/out", M, None),
    ("rm file.txt", M, None),
    ("rm -i a", M, None),
    ("rm -- -rf", M, None),
    ("rmdir empty", M, None),
    ("ln -s a b", M, None),
    ("chmod +x run.sh", M, None),
    ("chown me file", M, None),
    ("patch -p1 < fix.diff", M, None),
    ("truncate -s 0 log", M, None),
    ("install -m 755 a /usr/local/bin/a", M, None),
    ("sudo -u deploy touch /srv/app/flag", M, None),
    ("xargs -I{} cp {} backup/", M, None),
    ("find . -name '*.log' -exec gzip {} \\;", M, None),
    ("find . -fprint list.txt", M, None),
    # git writes
    ("git add -A", E, None),
    ("git commit -am 'wip'", M, None),
    ("git apply fix.patch", M, None),
    ("git am 0001.patch", M, None),
    ("git merge feature", M, None),
    ("git rebase main", M, None),
    ("git cherry-pick abc123", M, None),
    ("git revert HEAD", M, None),
    ("git stash", M, None),
    ("git stash push -m wip", M, None),
    ("git stash save wip", M, None),
    ("git tag v1.0", M, None),
    ("git mv a b", M, None),
    ("git rm old.py", M, None),
    ("git pull", M, None),
    ("git checkout -b feature", M, None),
    ("git switch -c feature", M, None),
    ("git init", M, None),
    ("git clone https://example.com/x.git", M, None),
    ("git push origin main", M, None),
    ("git branch -d old", M, None),
    ("git reset HEAD~1", M, None),
    ("git restore --staged a.py", E, None),
    ("git -c alias.x='!sh' x", M, None),
    # package installs
    ("pip install requests", M, None),
    ("pip uninstall -y requests", M, None),
    ("python -m pip install -e .", M, None),
    ("npm install", M, None),
    ("npm i lodash", M, None),
    ("npm ci", M, None),
    ("npm uninstall left-pad", M, None),
    ("yarn add react", M, None),
    ("yarn", M, None),
    ("pnpm add zod", M, None),
    ("pnpm install", M, None),
    ("apt-get install -y jq", M, None),
    ("sudo apt install jq", M, None),
    ("apt remove jq", M, None),
    ("cargo install ripgrep", M, None),
    ("cargo add serde", M, None),
    ("go get example.com/x", M, None),
    ("go install example.com/x@latest", M, None),
    ("uv pip install httpx", M, None),
    ("uv add httpx", M, None),
    ("poetry add requests", M, None),
    ("brew install jq", M, None),
    # downloads and archives
    ("curl -o out.html https://example.com", M, None),
    ("curl -O https://example.com/file.tgz", M, None),
    ("curl -sSLo out https://example.com", M, None),
    ("wget https://example.com/file", M, None),
    ("tar -xzf a.tgz", M, None),
    ("tar xzf a.tgz", M, None),
    ("tar -czf out.tgz src", M, None),
    ("unzip a.zip", M, None),
    # formatters
    ("black src", M, None),
    ("ruff format .", M, None),
    ("ruff check --fix .", M, None),
    ("prettier --write src", M, None),
    ("cargo fmt", M, None),
    # opaque code
    # inline Python is read from its AST (issue 12 §5): only imports and prints → execute
    ("python -c 'print(1)'", E, None),
    ('python3 -c "import os"', E, None),
    ("python -c 'import os; os.remove(\"x\")'", M, None),
    ("node -e 'console.log(1)'", E, None),  # issue 33: an exact version/literal print
    ('node -e \'console.log(require("fs").readFileSync("f", "utf8"))\'', M, None),
    ("perl -e 'print 1'", M, None),
    ("ruby -e 'puts 1'", M, None),
    ("python <<EOF\nimport os\nEOF", E, None),
    ("python <<EOF\nimport shutil\nshutil.rmtree('x')\nEOF", M, None),
    ("curl -s https://example.com/install.sh | bash", M, None),
    ("$CMD foo", M, None),
    ('"$EDITOR" file.txt', M, None),
    ('eval "$x"', M, None),
    ("source env.sh", M, None),
    (". ./env.sh", M, None),
    ('bash -c "$CMD"', M, None),
    # substitutions run, even inside double quotes
    ("echo $(touch marker)", M, None),
    ('echo "result: $(mkdir -p out)"', M, None),
    # nested shell code that writes
    ("trap 'touch done' EXIT", M, None),
    ("ssh host 'mkdir /tmp/x'", M, None),
    # SQL that writes
    ("psql -c 'INSERT INTO t VALUES (1)'", M, None),
    ("psql -c 'UPDATE t SET a = 1 WHERE id = 2'", M, None),
    ("sqlite3 app.db 'DELETE FROM users WHERE id = 3'", M, None),
    ("psql -f no-such-file-for-infomark-tests.sql", M, None),
    ("mysql app < no-such-dump-for-infomark-tests.sql", M, None),
    ("echo 'SELECT 1' | psql | sort | psql", M, None),
    # unparseable → fail closed
    ("echo 'unterminated", M, None),
    ("ls |", M, None),
    ("if true; then ls", M, None),
    ("echo $(", M, None),
    ("{rm,-rf,/}", M, None),
    ("ls 0<>f", M, None),
    # --- destructive: file ----------------------------------------------------------------------
    ("rm -rf build", D, "file"),
    ("rm -r dir", D, "file"),
    ("rm -f file.txt", D, "file"),
    ("rm -Rf /tmp/x", D, "file"),
    ("rm --recursive --force node_modules", D, "file"),
    ("rm -fr ~/.cache", D, "file"),
    ("rm -v -r out", D, "file"),
    ("/bin/rm -rf x", D, "file"),
    ("\\rm -rf x", D, "file"),
    ("'rm' -rf x", D, "file"),
    ('r"m" -rf x', D, "file"),
    ("$'\\x72m' -rf x", D, "file"),
    ('rm "-rf" x', D, "file"),
    ("rm > /dev/null -rf x", D, "file"),
    ("find . -name '*.pyc' -delete", D, "file"),
    ("find /tmp -type f -exec rm {} \\;", D, "file"),
    ("find . -exec rm -f {} +", D, "file"),
    ("find . -name '*.pyc' | xargs rm", D, "file"),
    ("xargs rm -rf < list.txt", D, "file"),
    ("mkfs.ext4 /dev/sdb1", D, "file"),
    ("mkfs -t ext4 /dev/sdb1", D, "file"),
    ("dd if=/dev/zero of=/dev/sda bs=1M", D, "file"),
    ("dd if=a.img of=b.img", D, "file"),
    ("shred -u secret.txt", D, "file"),
    ("wipefs -a /dev/sdb", D, "file"),
    ("cat image.iso > /dev/sdb", D, "file"),
    ("rsync -a --delete src/ dst/", D, "file"),
    # wrappers keep destructive
    ("sudo rm -rf /var/lib/app", D, "file"),
    ("sudo -u root rm -rf /", D, "file"),
    ("env X=1 rm -rf out", D, "file"),
    ("env -i PATH=/bin rm -rf out", D, "file"),
    ("timeout 5 rm -rf out", D, "file"),
    ("timeout -s KILL 5s rm -rf out", D, "file"),
    ("nice -n 10 nohup rm -rf out", D, "file"),
    ("command rm -rf out", D, "file"),
    ("exec rm -rf out", D, "file"),
    ("time rm -rf out", D, "file"),
    ("stdbuf -oL rm -rf out", D, "file"),
    ("doas rm -rf out", D, "file"),
    ("sudo env A=1 timeout 3 nice rm -rf out", D, "file"),
    # lists, pipelines, compounds, substitutions
    ("ls && rm -rf build", D, "file"),
    ("ls; rm -rf build", D, "file"),
    ("false || rm -rf build", D, "file"),
    ("ls | rm -rf build", D, "file"),
    ("(cd /tmp && rm -rf x)", D, "file"),
    ("{ rm -rf x; }", D, "file"),
    ("echo $(rm -rf x)", D, "file"),
    ("echo `rm -rf x`", D, "file"),
    ('echo "$(rm -rf x)"', D, "file"),
    ("echo `echo \\`rm -rf x\\``", D, "file"),
    ("if true; then rm -rf x; fi", D, "file"),
    ('for d in a b; do rm -rf "$d"; done', D, "file"),
    ("while true; do rm -rf x; done", D, "file"),
    ("cleanup() { rm -rf x; }; cleanup", D, "file"),
    ("rm -rf x; echo 'oops", D, "file"),
    # nested shells
    ("bash -c 'rm -rf build'", D, "file"),
    ('sh -c "rm -rf build"', D, "file"),
    ("zsh -c 'rm -rf build'", D, "file"),
    ("bash -lc 'cd x && rm -rf y'", D, "file"),
    ("bash -c \"sh -c 'rm -rf build'\"", D, "file"),
    ("sudo bash -c 'rm -rf /opt/app'", D, "file"),
    ('bash -c "rm -rf $DIR"', D, "file"),
    ("bash <<EOF\nrm -rf build\nEOF", D, "file"),
    ("cat <<X\n`rm -rf x`\nX", D, "file"),
    ("cat <<X\n$(rm -rf x)\nX", D, "file"),
    # --- destructive: git -----------------------------------------------------------------------
    ("git reset --hard", D, "git"),
    ("git reset --hard origin/main", D, "git"),
    ("git -C repo reset --hard", D, "git"),
    ("cd repo && git reset --hard HEAD~3", D, "git"),
    ("git push --force", D, "git"),
    ("git push -f origin main", D, "git"),
    ("git push --force-with-lease origin feature", D, "git"),
    ("git push origin +main", D, "git"),
    ("git push origin :old-branch", D, "git"),
    ("git clean -f", D, "git"),
    ("git clean -fd", D, "git"),
    ("git clean -fdx", D, "git"),
    ("git checkout -- src/app.py", D, "git"),
    ("git checkout .", D, "git"),
    ("git checkout -f main", D, "git"),
    ("git checkout HEAD~1 -- file.py", D, "git"),
    ("git restore src/app.py", D, "git"),
    ("git restore .", D, "git"),
    ("git switch --discard-changes main", D, "git"),
    ("git switch -f main", D, "git"),
    ("git stash drop", D, "git"),
    ("git stash clear", D, "git"),
    ("git stash pop", D, "git"),
    ("git branch -D old", D, "git"),
    ("git branch --delete --force old", D, "git"),
    ("git commit -m wip && git push --force", D, "git"),
    ("bash -c 'git reset --hard'", D, "git"),
    # --- destructive: db ------------------------------------------------------------------------
    ("psql -c 'DROP TABLE users'", D, "db"),
    ('psql -d app -c "TRUNCATE events"', D, "db"),
    ("psql -c 'DELETE FROM users'", D, "db"),
    ("psql -c 'ALTER TABLE t DROP COLUMN c'", D, "db"),
    ("psql -c \"SELECT 'x'; DROP TABLE t\"", D, "db"),
    ("sqlite3 app.db 'DROP TABLE users'", D, "db"),
    ('sqlite3 app.db "DELETE FROM sessions;"', D, "db"),
    ("mysql -e 'DROP DATABASE app'", D, "db"),
    ('mysql -u root -p app -e "truncate table logs"', D, "db"),
    ("psql <<EOF\nDROP TABLE users;\nEOF", D, "db"),
    ("sqlite3 app.db <<'SQL'\nDELETE FROM t;\nSQL", D, "db"),
    ("sqlite3 app.db <<< 'drop table t'", D, "db"),
    ("cat <<EOF | psql\nDROP TABLE t;\nEOF", D, "db"),
    ("echo 'DROP TABLE t' | psql app", D, "db"),
    ('psql -c "DROP TABLE $T"', D, "db"),
    ("sudo -u postgres psql -c 'DROP DATABASE app'", D, "db"),
    ("sqlite3 app.db '.shell rm -rf build'", D, "file"),
    # --- more wrappers, code fed on stdin, and other places that hold shell code ---------------
    ("echo 'rm -rf build' | bash", D, "file"),
    ("ssh host <<EOF\nrm -rf /srv/app\nEOF", D, "file"),
    ("ssh -t host 'sudo rm -rf /srv/app'", D, "file"),
    ("coproc rm -rf x", D, "file"),
    ("watch -n 5 'rm -rf x'", D, "file"),
    ("timeout 5 bash -c 'rm -rf x'", D, "file"),
    ("su -c 'rm -rf /srv/x' root", D, "file"),
    ("env -S 'rm -rf x'", D, "file"),
    ("trap 'rm -rf \"$tmp\"' EXIT", D, "file"),
    ("git submodule foreach 'git reset --hard'", D, "git"),
    ("find . -type d -name node_modules -prune -exec rm -rf '{}' +", D, "file"),
    ("xargs -0 rm -f", D, "file"),
    ("npx rimraf dist", D, "file"),
    ("git -C repo clean -fdx", D, "git"),
    ("git push origin main --force", D, "git"),
    ("git checkout src/app.py", D, "git"),
    # PowerShell and cmd.exe
    ("Remove-Item -Recurse -Force build", D, "file"),
    ("pwsh -Command 'Remove-Item -Recurse build'", D, "file"),
    ("del /s /q build", D, "file"),
    ("Remove-Item notes.txt", M, None),
    ("Set-Content -Path a.txt -Value 1", M, None),
    # harmless neighbours of dangerous commands
    ("git checkout main", M, None),
    ("git checkout feature/login", M, None),
    ("npm --prefix web install", M, None),
    ("uv run python -c 'import os'", E, None),
    ('uv run python -c \'open("x", "w")\'', M, None),
    ("printf 'DROP TABLE x' > notes.sql", M, None),
    ("psql -c \"COMMENT ON TABLE t IS 'drop later'\"", M, None),
    ("sqlite3 app.db 'SELECT * FROM t' > out.csv", M, None),
    ("bash < setup.sh", E, None),
    ("grep -- -rf file", E, None),
    ("ls -- -rf", E, None),
    ("echo $'rm -rf x'", E, None),
    ("cat drop.sql", E, None),
    ("git checkout", E, None),
    ("git diff -- src/app.py", E, None),
    ("sudo -l", E, None),
    ("env", E, None),
]


@pytest.mark.parametrize(
    ("command", "expected", "family"), TABLE, ids=[repr(row[0])[:60] for row in TABLE]
)
def test_shell_table(command: str, expected: ToolClass, family: str | None) -> None:
    result = classify_shell(command)
    assert result.tool_class is expected, result.reasons
    assert result.reasons, "every classification explains itself"
    if expected is ToolClass.DESTRUCTIVE:
        assert family in result.families, result
    else:
        # below destructive only the markers may appear (issue 11: a computed command word)
        assert set(result.families) <= {"opaque_command"}, result
        computed = any(
            "as its command name" in r or "computed command name" in r for r in result.reasons
        )
        assert ("opaque_command" in result.families) == computed, result


def test_table_is_big_and_covers_every_family() -> None:
    assert len(TABLE) >= 150
    assert len({row[0] for row in TABLE}) == len(TABLE), "duplicate rows"
    assert {row[2] for row in TABLE if row[1] is D} == {"file", "git", "db"}


# --- beyond the table ---------------------------------------------------------------------------


def test_reason_names_the_command_and_family() -> None:
    result = classify_shell("rm -rf build")
    assert any("`rm -rf build`" in r and "(file)" in r for r in result.reasons), result.reasons


def test_mixed_families_are_all_reported() -> None:
    result = classify_shell("git reset --hard && rm -rf build && psql -c 'DROP TABLE t'")
    assert result.tool_class is D
    assert result.families == ("db", "file", "git")


def test_opaque_inline_code_reason() -> None:
    result = classify_shell("python -c 'import os; os.unlink(1)'")
    assert any("opaque inline code" in r for r in result.reasons)


def test_unparseable_reason_says_so() -> None:
    result = classify_shell("echo 'unterminated")
    assert any("unparseable" in r for r in result.reasons), result.reasons


@pytest.mark.parametrize(
    ("sql", "expected", "via"),
    [
        ("DROP TABLE users;\n", D, "-f"),
        ("SELECT 1;\n-- DROP TABLE users\n", E, "-f"),
        ("INSERT INTO t VALUES ('drop table t');\n", M, "-f"),
        ("delete from t;\n", D, "<"),
        ("SELECT 'TRUNCATE';\n", E, "<"),
    ],
)
def test_sql_files_are_read(
    tmp_path: Path, sql: str, expected: ToolClass, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "script.sql").write_text(sql)
    monkeypatch.chdir(tmp_path)
    command = "psql -f script.sql" if via == "-f" else "sqlite3 app.db < script.sql"
    result = classify_shell(command)
    assert result.tool_class is expected, result.reasons
    if expected is D:
        assert result.families == ("db",)


def test_oversized_sql_file_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "big.sql").write_text("SELECT 1;\n" * 110_000)
    monkeypatch.chdir(tmp_path)
    result = classify_shell("psql -f big.sql")
    assert result.tool_class is M
    assert any("could not be inspected" in r for r in result.reasons)


@pytest.mark.parametrize(
    "command",
    [
        "echo a\x00b",
        "echo \ud800",
        "echo " + "x" * 70_000,
        "bash -c " + "\"bash -c '" * 6 + "ls" + "'\"" * 6,
    ],
    ids=["nul", "surrogate", "huge", "deep-unbalanced"],
)
def test_bad_input_fails_closed(command: str) -> None:
    result = classify_shell(command)
    assert result.tool_class is M, result.reasons


def test_nesting_deeper_than_the_limit_fails_closed() -> None:
    inner = "ls"
    for _ in range(9):
        inner = "bash -c " + _sh_quote(inner)
    result = classify_shell(inner)
    assert result.tool_class is M
    assert any("nested deeper" in r for r in result.reasons)


def test_nesting_within_the_limit_is_followed() -> None:
    inner = "rm -rf x"
    for _ in range(6):
        inner = "sh -c " + _sh_quote(inner)
    result = classify_shell(inner)
    assert result.tool_class is D


def test_double_paren_subshells_are_looked_into() -> None:
    # bash runs `((a); (b))` as nested subshells when it is not arithmetic
    result = classify_shell("((cd /tmp; rm -rf x); (ls))")
    assert result.tool_class is D
    assert any("unparseable" in r for r in classify_shell("((echo hi))").reasons)


_BRACE_CRASH_PROBE = """
import sys
from infomark.gates.shell import classify_shell
shapes = ["{%s", "x{%s", "{12%s", "{1..%s", "{1..2%s", "echo {%s}", "a={%s"]
for cp in list(range(0x100, 0x800, 0x17)) + list(range(0x800, 0x110000, 0x1003)):
    if 0xD800 <= cp <= 0xDFFF:
        continue
    for shape in shapes:
        result = classify_shell(shape % chr(cp))
        assert result.tool_class.value in ("execute", "modify", "destructive"), result
print("ok")
"""


def test_brace_followed_by_wide_character_does_not_crash_the_parser() -> None:
    # tree-sitter-bash calls C isdigit() on the character after `{` (undefined above 255; it
    # segfaulted on e.g. U+F67CA). Run in a subprocess so a crash fails this test cleanly.
    done = subprocess.run(
        [sys.executable, "-c", _BRACE_CRASH_PROBE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_brace_hazard_keeps_text_offsets() -> None:
    result = classify_shell("echo {\U000f67ca} > out\U000f67ca.txt")
    assert result.tool_class is M
    assert any("out\U000f67ca.txt" in r for r in result.reasons), result.reasons


def test_non_string_fails_closed() -> None:
    result = classify_shell(b"ls")  # type: ignore[arg-type]
    assert result.tool_class is M


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
