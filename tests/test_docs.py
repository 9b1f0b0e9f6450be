"""The user documentation is checked against the code it describes.

1. Every fenced ``python`` block in ``docs/*.md`` and ``README.md`` runs without error, unless
   the line before its fence is ``<!-- no-test -->``. A file's blocks run in order in one
   namespace (later blocks may use earlier ones), in a fresh temporary directory, with the
   virtual environment's ``bin`` first on ``PATH`` (as after ``source .venv/bin/activate``).
   What a ``print(...)`` is documented to print (its trailing ``# comment``, or the comment
   lines right after it) must be what it prints: in order, whitespace collapsed, ``…``
   standing for any text.
2. Every ``$ infomark …`` command in a ``sh`` / ``console`` block names a real command and
   parses with its real options.
3. Every CLI command has help text and a hand-written section in ``docs/cli.md``.
4. ``scripts/gen_cli_docs.py --check`` passes (the options reference is current).
5. The gate, edge and guard tables in ``docs/gates.md`` match ``DEFAULT_GRAPH``.

Plus drift guards: every reason code, configuration key and environment variable is documented.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import click
import pytest

from infomark.gates.config_model import ConfigModel
from infomark.kernel.graph import DEFAULT_GRAPH, GUARDS
from infomark.kernel.reasons import RejectReason

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GEN_SCRIPT = ROOT / "scripts" / "gen_cli_docs.py"
DOC_FILES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
SHELL_INFOS = frozenset({"sh", "console", "shell", "bash"})
NO_TEST = "<!-- no-test -->"


# -- Markdown fences ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fence:
    path: Path
    line: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence (past the end when unclosed)
    info: str  # first word of the info string, lower case
    body: str
    marked_no_test: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def fences(path: Path) -> list[Fence]:
    """Every top-level fenced block of a Markdown file (nested fences are content)."""
    lines = path.read_text("utf-8").splitlines()
    out: list[Fence] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        char, width, indent = m["fence"][0], len(m["fence"]), len(m["indent"])
        closing = re.compile(rf"^[ \t]*{re.escape(char)}{{{width},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        body = textwrap.dedent(
            "\n".join(ln[indent:] if ln[:indent].isspace() else ln for ln in lines[i + 1 : j])
        )
        info = (m["info"].strip().split() or [""])[0].lower()
        marked = i > 0 and lines[i - 1].strip() == NO_TEST
        out.append(Fence(path, i + 1, j + 1, info, body + "\n", marked))
        i = j + 1
    return out


def _python_files() -> list[Path]:
    return [
        p for p in DOC_FILES if any(f.info == "python" and not f.marked_no_test for f in fences(p))
    ]


# -- 1. Python examples run --------------------------------------------------------------------


@pytest.fixture
def docs_sandbox(tmp_path: Path) -> Iterator[Path]:
    """A fresh working directory, the venv first on PATH; cwd and environment restored after."""
    old_cwd, old_env = Path.cwd(), dict(os.environ)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)


_PRINT = re.compile(r"^\s*print\(")


def documented_prints(body: str) -> list[str]:
    """What each ``print`` of a block is documented to print, in order.

    A print's trailing comment is its output; without one, the comment lines right after it
    are (a long line may wrap over several). Other comments explain and are not compared.
    """
    lines = body.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if not _PRINT.match(line):
            continue
        code, sep, comment = line.partition("  #")
        if sep and code.count("(") == code.count(")"):
            out.append(comment.strip())
            continue
        shown = []
        for nxt in lines[i + 1 :]:
            if not nxt.lstrip().startswith("#"):
                break
            shown.append(nxt.lstrip()[1:].strip())
        if shown:
            out.append(" ".join(shown))
    return out


def _collapse(text: str) -> str:
    return " ".join(text.split())


def prints_match(expected: list[str], printed: str) -> str | None:
    """None when every documented output appears in ``printed``, in order; else the first
    that does not."""
    actual = _collapse(printed)
    pos = 0
    for want in expected:
        pattern = ".*?".join(re.escape(part) for part in _collapse(want).split("…"))
        found = re.compile(pattern, re.DOTALL).search(actual, pos)
        if found is None:
            return want
        pos = found.end()
    return None


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.name)
def test_python_examples_run(path: Path, docs_sandbox: Path) -> None:
    import contextlib
    import io

    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in [f for f in fences(path) if f.info == "python" and not f.marked_no_test]:
        code = compile(block.body, block.where, "exec")
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(code, namespace)  # running our own documentation is the point
        except Exception as exc:
            pytest.fail(f"the python example at {block.where} failed: {type(exc).__name__}: {exc}")
        missing = prints_match(documented_prints(block.body), printed.getvalue())
        assert missing is None, (
            f"the python example at {block.where} is documented to print {missing!r}; it "
            f"printed:\n{printed.getvalue()}"
        )


def test_documented_prints_are_read_and_compared() -> None:
    body = (
        "x = 1  # not a print\n"
        "print(x)  # 1\n"
        "print('a long', 'line')\n"
        "# a long\n"
        "# line\n"
        "print(2)\n"
        "y = 3\n"
    )
    assert documented_prints(body) == ["1", "a long line"]
    assert prints_match(["1", "a long line"], "1\na long line\n2\n") is None
    assert prints_match(["ev_… tool=bash"], "[ev_0123 tool=bash]") is None
    assert prints_match(["scratch"], "ungrounded_premises\n") == "scratch"  # the README bug
    assert prints_match(["2", "1"], "1\n2\n") == "1"  # order matters


def test_fence_scanner_skips_nested_and_honours_no_test(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "````markdown\n```python\nraise SystemExit\n```\n````\n\n"
        f"{NO_TEST}\n```python\nraise SystemExit\n```\n\n  ```python\n  x = 1\n  ```\n"
    )
    found = [(f.info, f.marked_no_test, f.body) for f in fences(doc)]
    assert found == [
        ("markdown", False, "```python\nraise SystemExit\n```\n"),
        ("python", True, "raise SystemExit\n"),
        ("python", False, "x = 1\n"),
    ]


# -- the CLI, as the docs generator sees it ----------------------------------------------------


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", GEN_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_cli_docs", module)
    spec.loader.exec_module(module)
    return module


GEN = _load_generator()


def _command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = GEN.cli_group()
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


# -- 2. documented commands exist --------------------------------------------------------------

_OPERATORS = frozenset({"|", "||", "&", "&&", ";"})
_REDIRECTS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "&>", "&>>", "<&", ">|"})


def infomark_invocations(command_line: str) -> list[list[str]]:
    """The argument lists of every ``infomark`` command in a shell line (pipes, lists …)."""
    lexer = shlex.shlex(command_line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    out: list[list[str]] = []
    segment: list[str] = []
    skip_next = False
    for tok in [*tokens, ";"]:
        if skip_next:
            skip_next = False
            continue
        if tok in _OPERATORS:
            if segment and segment[0] == "infomark":
                out.append(segment[1:])
            segment = []
        elif tok in _REDIRECTS:
            if segment and segment[-1].isdigit():
                segment.pop()  # `2>` : the fd is not an argument
            skip_next = True  # the redirect target is not an argument either
        else:
            segment.append(tok)
    return out


def documented_commands() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for path in DOC_FILES:
        for fence in fences(path):
            if fence.info not in SHELL_INFOS:
                continue
            for k, line in enumerate(fence.body.splitlines(), start=1):
                if line.startswith("$ "):
                    where = f"{fence.where}+{k}"
                    found.extend((where, args) for args in infomark_invocations(line[2:]))
    return found


def check_invocation(args: list[str]) -> None:
    """Raise AssertionError unless ``infomark ARGS`` names a command and parses."""
    if args[:1] == ["hook"]:
        assert args[1:2] in (["claude-code"], ["claude"], ["--help"], ["-h"]), args
        return
    cmd: click.Command = GEN.cli_group()
    shown = ["infomark"]
    rest = list(args)
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        name = rest.pop(0)
        sub = cmd.commands.get(name)
        assert sub is not None, f"`{' '.join(shown)}` has no subcommand {name!r}"
        shown.append(name)
        cmd = sub
    if isinstance(cmd, click.Group) and not rest:
        raise AssertionError(f"`{' '.join(shown)}` needs a subcommand")
    if "--help" in rest or "-h" in rest:
        return
    try:
        cmd.make_context(" ".join(shown), rest)
    except click.BadParameter as exc:
        ptype = exc.param.type if exc.param is not None else None
        if not (isinstance(ptype, click.Path) and ptype.exists):  # a file only the reader has
            line = " ".join(["infomark", *args])
            raise AssertionError(f"`{line}`: {exc.format_message()}") from None
    except click.UsageError as exc:
        line = " ".join(["infomark", *args])
        raise AssertionError(f"`{line}`: {exc.format_message()}") from None


_COMMANDS = documented_commands()


def test_docs_show_commands() -> None:
    assert len(_COMMANDS) >= 10  # cli.md alone shows more: the scan did find them


@pytest.mark.parametrize(("where", "args"), _COMMANDS, ids=[w for w, _ in _COMMANDS])
def test_documented_command_is_real(where: str, args: list[str]) -> None:
    check_invocation(args)


@pytest.mark.parametrize(
    "line",
    [
        "infomark frobnicate",
        "infomark kernel",
        "infomark kernel explode",
        "infomark authorize --nope",
        "infomark record",  # --tool is required
        "infomark hook cursor",
    ],
)
def test_invocation_check_rejects(line: str) -> None:
    (args,) = infomark_invocations(line)
    with pytest.raises(AssertionError):
        check_invocation(args)


def test_invocations_are_split_at_shell_operators() -> None:
    line = "echo x | infomark ingest - && infomark gate --json > g.json 2>/dev/null # note"
    assert infomark_invocations(line) == [["ingest", "-"], ["gate", "--json"]]


# -- 3. every command has help and a section ---------------------------------------------------


def _hand_written_headings() -> list[str]:
    text = (DOCS / "cli.md").read_text("utf-8")
    outside = text[: text.index(GEN.BEGIN)] + text[text.index(GEN.END) :]
    return [ln for ln in outside.splitlines() if ln.startswith("#")]


_PATHS = [p for p in GEN.command_paths() if p]


@pytest.mark.parametrize("path", _PATHS, ids=" ".join)
def test_command_has_help_and_section(path: tuple[str, ...]) -> None:
    cmd = _command(path)
    assert (cmd.help or "").strip(), f"`infomark {' '.join(path)}` has no help text"
    wanted = "infomark " + " ".join(path)
    assert any(wanted in h for h in _hand_written_headings()), f"no section for `{wanted}`"


def test_hook_command_has_section() -> None:
    assert any("infomark hook claude-code" in h for h in _hand_written_headings())


# -- 4. the generated reference is current -----------------------------------------------------


def test_cli_reference_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(GEN_SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_cli_reference_check_detects_staleness(tmp_path: Path) -> None:
    stale = tmp_path / "cli.md"
    text = (DOCS / "cli.md").read_text("utf-8")
    stale.write_text(text.replace("Show this message and exit.", "Show nothing.", 1))
    proc = subprocess.run(
        [sys.executable, str(GEN_SCRIPT), "--check", "--file", str(stale)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "stale" in proc.stderr


def test_generated_help_is_the_real_help() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [sys.executable, "-m", "infomark", "audit", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert proc.stdout in (DOCS / "cli.md").read_text("utf-8")


# -- 5. the gate tables match the graph --------------------------------------------------------


def markdown_table(text: str, header: str) -> list[list[str]]:
    """The rows of the table whose header row is ``header`` (cells stripped of backticks)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip() == header), None)
    assert start is not None, f"no table with header {header!r}"
    rows: list[list[str]] = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip().strip("`") for c in ln.strip().strip("|").split("|")])
    return rows


GATES_MD = DOCS / "gates.md"
GATE_HEADER = "| gate | name | mutates | allows | default loop budget |"
EDGE_HEADER = "| from | to | kind | guard | condition |"
GUARD_HEADER = "| guard | meaning (kernel) | checked as (runtime) |"


def test_gate_table_matches_graph() -> None:
    rows = markdown_table(GATES_MD.read_text("utf-8"), GATE_HEADER)
    expected = [
        [g.id, g.name, "yes" if g.mutates else "no", g.allows, str(DEFAULT_GRAPH.routes_out(g.id))]
        for g in DEFAULT_GRAPH.gates
    ]
    assert rows == expected


def test_edge_table_matches_graph() -> None:
    rows = markdown_table(GATES_MD.read_text("utf-8"), EDGE_HEADER)
    expected = [[e.src, e.dst, e.kind.value, e.guard, e.condition] for e in DEFAULT_GRAPH.edges]
    assert rows == expected


def test_guard_table_matches_kernel() -> None:
    rows = markdown_table(GATES_MD.read_text("utf-8"), GUARD_HEADER)
    assert [r[:2] for r in rows] == [[name, meaning] for name, meaning in GUARDS.items()]
    assert all(r[2] for r in rows)


def test_table_check_can_fail() -> None:
    doctored = GATES_MD.read_text("utf-8").replace("| G7 | G8 | forward |", "| G7 | G9 | forward |")
    rows = markdown_table(doctored, EDGE_HEADER)
    assert rows != [[e.src, e.dst, e.kind.value, e.guard, e.condition] for e in DEFAULT_GRAPH.edges]


# -- drift guards ------------------------------------------------------------------------------


def test_every_reason_code_is_explained() -> None:
    rows = markdown_table((DOCS / "concepts.md").read_text("utf-8"), "| code | when | fix |")
    assert [r[0] for r in rows] == [r.value for r in RejectReason]


def test_every_config_key_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text("utf-8")
    rows = markdown_table(text, "| key | type | default | meaning |")
    assert sorted(r[0] for r in rows) == sorted(ConfigModel.model_fields)


@pytest.mark.parametrize(
    "var",
    [
        "INFOMARK_HOME",
        "INFOMARK_SESSION",
        "INFOMARK_KEY",
        "INFOMARK_BYPASS_GROUNDING",
        "INFOMARK_CONFIG",
        "INFOMARK_TOKEN",
        "INFOMARK_DEBUG",
        "INFOMARK_STORE",
        "INFOMARK_PG_POOL_MAX",
    ],
)
def test_environment_variable_is_documented(var: str) -> None:
    rows = markdown_table((DOCS / "configuration.md").read_text("utf-8"), "| variable | meaning |")
    assert var in [r[0] for r in rows]


# -- links between the pages -------------------------------------------------------------------

OWN_PAGES = ("concepts", "cli", "gates", "configuration", "security", "architecture")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text("utf-8")
    fenced = {n for f in fences(path) for n in range(f.line, f.end + 1)}
    found = set(_ANCHOR.findall(text))
    for n, line in enumerate(text.splitlines(), start=1):
        if n not in fenced and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


@pytest.mark.parametrize("page", OWN_PAGES)
def test_links_resolve(page: str) -> None:
    path = DOCS / f"{page}.md"
    broken = []
    for target in _LINK.findall(path.read_text("utf-8")):
        if "://" in target:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part) if file_part else path
        if not dest.exists() or (anchor and anchor not in anchors(dest)):
            broken.append(target)
    assert not broken, f"{page}.md: broken links {broken}"


def test_slug_follows_github() -> None:
    assert _slug(" The event-sourced journal") == "the-event-sourced-journal"
    assert _slug(" `infomark hook claude-code`") == "infomark-hook-claude-code"
    assert _slug(" statement_changed") == "statement_changed"


def test_every_session_id_length_in_the_docs_is_the_rule() -> None:
    """The session-id rule (kernel/session_id.py) is the one the docs state, wherever."""
    from infomark.kernel.session_id import SESSION_ID_MAX

    said = []
    for path in DOC_FILES:
        for m in re.finditer(r"(?:session|id)[^.|]{0,40}?1[–-](\d+) characters", path.read_text()):
            said.append((path.name, int(m.group(1))))
    assert said and all(n == SESSION_ID_MAX for _, n in said), said


def test_the_readme_tells_a_newcomer_where_infomark_is_and_what_make_test_downloads() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert ".venv/bin/infomark" in readme and "source .venv/bin/activate" in readme
    installer = (ROOT / "scripts" / "install-claude-code.sh").read_text("utf-8")
    version = re.search(r"INFOMARK_CLAUDE_VERSION:-([0-9.]+)", installer)
    prefix = re.search(r'INFOMARK_E2E_CACHE:-\$HOME/([^}"]+)', installer)
    assert version and prefix
    assert f"pinned version ({version[1]}, about 357 MB" in readme
    assert f"`~/{prefix[1]}`" in readme and "INFOMARK_E2E_CACHE" in readme
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert "source $(VENV)/bin/activate" in makefile and "~357 MB" in makefile


def test_concepts_carries_the_seed_table_with_every_deviation_and_its_reason() -> None:
    text = (DOCS / "concepts.md").read_text("utf-8")
    rows = markdown_table(text, "| seed rule | what infomark does | why |")
    assert len(rows) >= 30 and all(len(r) == 3 and r[0] and r[1] for r in rows)
    seeds = {r[0].split(":", 1)[0] for r in rows}
    assert seeds == {"000", "001", "002", "003"}
    deviations = [r for r in rows if "deviation" in r[1] or "deviation" in r[2]]
    assert len(deviations) >= 8
    assert all(r[2] not in ("", "–") for r in deviations), "a deviation needs its reason"
    said = " ".join(" ".join(r) for r in rows)
    for item in ("5 s doubling", "language", "REUSE.BEFORE", "[execution ev_…]", 'at = "tool"',
                 "plan_drift", "would_have_skipped", "[policies]", "per profile"):  # fmt: skip
        assert item in said, item
