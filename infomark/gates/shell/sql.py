"""SQL handed to SQL clients (``psql``, ``mysql``, ``sqlite3``, ``duckdb``): scanned for writes
and destructive statements (``db``), from arguments, ``-f`` files, here-docs and pipes."""

from __future__ import annotations

from infomark.gates.shell.core import SQL_FILE_LIMIT, Env, read_small, ws
from infomark.gates.shell.words import Arg, Options
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass, field

__all__ = ["_h_mysql", "_h_psql", "_h_sqlite"]

# the option grammars (which options take a value)
_PSQL = Options(
    "cdfhpUvoLPTFR",
    "--command --file --dbname --host --port --username --set --variable --output --log-file "
    "--pset --field-separator --record-separator --table-attr",
)
_MYSQL = Options("euhPDSO", "--execute --user --host --port --database --socket")

_MAX_SQL_INCLUDES = 3

_SQL_WRITES = ws(
    "INSERT UPDATE CREATE ALTER REPLACE MERGE GRANT REVOKE COPY RENAME ATTACH DETACH VACUUM "
    "REINDEX UPSERT LOAD CALL EXEC EXECUTE DO IMPORT REFRESH CLUSTER COMMENT SECURITY REASSIGN"
)
_SQL_TOKEN = lazy_compile(r"[A-Za-z_][A-Za-z0-9_$]*|;")


def _strip_sql(sql: str) -> str:
    """Blank out string literals, quoted identifiers and comments (not ``/*! … */``, which MySQL
    executes). Backslash escapes are deliberately ignored: ending a literal early only exposes
    more text to the scan."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(" ")
            i = j + 1
        elif ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif ch == "/" and sql.startswith("/*", i) and not sql.startswith("/*!", i):
            j = sql.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass(slots=True)
class _SqlScan:
    destructive: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    shell: list[str] = field(default_factory=list)


_META_WRITES = ws(
    ".import .restore .output .once .save .backup .clone .load \\o \\out \\copy \\w \\write"
)


def _scan_sql(sql: str) -> _SqlScan:
    scan = _SqlScan()
    lines: list[str] = []
    for line in sql.splitlines():
        stripped = line.strip()
        if stripped.startswith((".", "\\")):
            word, _, rest = stripped.partition(" ")
            word = word.lower()
            if word in (".shell", ".system", "\\!"):
                scan.shell.append(rest)
            elif word == "\\gexec":
                scan.opaque.append("runs generated SQL (\\gexec)")
            elif word in (".read", "\\i", "\\ir", "\\include", "\\include_relative"):
                scan.includes.append(rest.strip().strip("'\""))
            elif word in _META_WRITES:
                scan.writes.append(word)
            continue
        lines.append(line)
    text = _strip_sql("\n".join(lines))
    statement: list[str] = []
    tokens = [t.upper() for t in _SQL_TOKEN.findall(text)]
    tokens.append(";")
    for tok in tokens:
        if tok != ";":
            statement.append(tok)
            continue
        if statement:
            _sql_statement(statement, scan)
        statement = []
    return scan


def _sql_statement(tokens: list[str], scan: _SqlScan) -> None:
    words = set(tokens)
    for kw in ("DROP", "TRUNCATE"):
        if kw in words and kw not in scan.destructive:
            scan.destructive.append(kw)
    lead = tokens[0]
    for verb in ("DELETE", "UPDATE"):
        if verb not in words or lead in ("GRANT", "REVOKE") or (verb == "UPDATE" and lead != verb):
            continue
        if "WHERE" not in words:
            _once(scan.destructive, f"{verb} without WHERE")
        elif _tautology(tokens):
            _once(scan.destructive, f"{verb} with an always-true WHERE")
        else:
            _once(scan.writes, verb)
    if lead in _SQL_WRITES and lead not in scan.writes:
        scan.writes.append(lead)
    elif lead == "WITH":
        for kw in ("INSERT", "UPDATE", "MERGE"):
            if kw in words and kw not in scan.writes:
                scan.writes.append(kw)


def _once(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


_ALWAYS = frozenset({"TRUE", "OR", "IS", "NOT", "NULL", "AND"})


def _tautology(tokens: list[str]) -> bool:
    """``WHERE 1``, ``WHERE 1=1``, ``WHERE TRUE``, ``WHERE 'a'='a'``: no column is named after
    WHERE (literals and strings are not tokens here), so the condition cannot select rows."""
    after = tokens[tokens.index("WHERE") + 1 :]
    for stop in ("RETURNING", "ORDER", "LIMIT"):
        if stop in after:
            after = after[: after.index(stop)]
    return all(t in _ALWAYS for t in after) and "NULL" not in after and "NOT" not in after


def _sql_text(env: Env, sql: str, label: str, hops: int = 0) -> None:
    scan = _scan_sql(sql)
    for kw in scan.destructive:
        env.destroy(f"runs SQL {kw} {label}", "db")
    if scan.writes:
        env.modify(f"runs SQL that writes ({', '.join(scan.writes)}) {label}")
    for note in scan.opaque:
        env.modify(f"{note} (opaque)")
    for code in scan.shell:
        env.nested(code, "shell escape in SQL")
    for path in scan.includes:
        if hops >= _MAX_SQL_INCLUDES:
            env.modify(f"includes SQL file {path} too deeply to inspect")
        else:
            _sql_file(env, path, hops + 1)
    if not (scan.destructive or scan.writes or scan.opaque or scan.includes or scan.shell):
        env.execute(f"runs read-only SQL {label}")


def _sql_file(env: Env, path: str | None, hops: int = 0) -> None:
    if path is None:
        env.modify("runs SQL from a computed path (opaque)")
        return
    text = read_small(path)
    if text is None:
        env.modify(
            f"runs SQL file {path}, which could not be inspected (missing, unreadable or "
            f"≥ {SQL_FILE_LIMIT} bytes)"
        )
        return
    _sql_text(env, text, f"from file {path}", hops)


def _sql_stdin(env: Env) -> None:
    stdin = env.stdin()
    if stdin.kind == "text" and stdin.text is not None:
        _sql_text(env, stdin.text, stdin.label)
    elif stdin.kind == "file":
        _sql_file(env, stdin.path)
    elif stdin.kind == "pipe":
        if stdin.text is not None:
            _sql_text(env, stdin.text, stdin.label)
        else:
            env.modify("runs SQL read from a pipe (opaque)")
    else:
        env.execute("opens an interactive SQL session")


def _sql_arg(env: Env, arg: Arg | None, label: str) -> None:
    if arg is None:
        return
    if arg.value is None:
        env.modify(f"runs computed SQL {label} (opaque)")
    _sql_text(env, arg.approx, label)


def _h_psql(name: str, args: list[Arg], env: Env) -> None:
    _sql_client(_PSQL.scan(args)[0], env, inline=("-c", "--command"), files=("-f", "--file"))


def _h_mysql(name: str, args: list[Arg], env: Env) -> None:
    _sql_client(_MYSQL.scan(args)[0], env, inline=("-e", "--execute"))


def _sql_client(
    opts: list[tuple[str, Arg | None]],
    env: Env,
    *,
    inline: tuple[str, str],
    files: tuple[str, ...] = (),
) -> None:
    """A SQL client's statements: given inline (``inline``: short, long), read from ``files``
    (``-`` is stdin), or else read from stdin."""
    given = False
    for opt, val in opts:
        if opt in inline:
            _sql_arg(env, val, f"in {inline[0]}")
            given = True
        elif opt in files:
            given = True
            if val is not None and val.value == "-":
                _sql_stdin(env)
            else:
                _sql_file(env, val.value if val else None)
    if not given:
        _sql_stdin(env)


_SQLITE_VALUES = ws(
    "-separator -newline -nullvalue -vfs -maxsize -mmap -pagecache -lookaside -heap -escape"
)


def _h_sqlite(name: str, args: list[Arg], env: Env) -> None:
    i, n = 0, len(args)
    pos: list[Arg] = []
    given = False
    while i < n:
        v = args[i].value
        if v is not None and v.startswith("-") and len(v) > 1:
            key = "-" + v.lstrip("-")
            if (key == "-cmd" or (key == "-c" and name == "duckdb")) and i + 1 < n:
                _sql_arg(env, args[i + 1], "in -cmd")
                given = True
                i += 2
                continue
            if key == "-init" and i + 1 < n:
                _sql_file(env, args[i + 1].value)
                given = True
                i += 2
                continue
            i += 2 if key in _SQLITE_VALUES else 1
            continue
        pos.append(args[i])
        i += 1
    for arg in pos[1:]:
        _sql_arg(env, arg, "in an argument")
        given = True
    if len(pos) <= 1 and not given:
        _sql_stdin(env)
    elif len(pos) <= 1:
        stdin = env.stdin()
        if stdin.kind != "none":
            _sql_stdin(env)
