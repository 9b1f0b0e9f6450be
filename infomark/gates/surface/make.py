"""What GNU make reads: its makefile, what that includes, and what its recipes run.

GNU make (manual, "What Name to Give Your Makefile"): with no ``-f``, the first of
``GNUmakefile``, ``makefile``, ``Makefile`` in the directory (after each ``-C``); the files in
``MAKEFILES`` first; ``include`` / ``-include`` / ``sinclude`` read more files (relative to
the directory, then ``-I`` dirs). All three names are on the surface whichever exists: a new
``GNUmakefile`` shadows the ``Makefile``. The recipes of the goals (the first target when none
is named) and of their prerequisites are discovered in turn: ``make test`` whose recipe runs
``pytest`` reads pytest's surface too. A recipe line with a variable discovery cannot expand
is noted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from infomark.gates.surface.model import GradingSurface, Nested, RunnerCall
from infomark.kernel.regular import read_regular
from infomark.kernel.runners import MAKEFILE_NAMES, RunnerKind

__all__ = ["make_surface", "makefiles"]

_VALUE_OPTS = frozenset(
    {
        "-f",
        "--file",
        "--makefile",
        "-C",
        "--directory",
        "-I",
        "--include-dir",
        "-o",
        "--old-file",
        "-W",
        "--what-if",
        "--new-file",
        "--assume-new",
        "--assume-old",
        "-j",
        "--jobs",
        "-l",
        "--load-average",
        "-O",
        "--output-sync",
    }
)
_INCLUDE = re.compile(r"^\s*(?:-include|sinclude|include)\s+(.+?)\s*$")
_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*([^=;#]*?)(?:;(.*))?\s*$")
_ASSIGN = re.compile(r"^\s*(?:export\s+|override\s+)?([A-Za-z_][\w.]*)\s*(?::{0,3}=|\?=|\+=|!=)")
_VAR = re.compile(r"\$\((?:MAKE|\(MAKE\))\)|\$\{MAKE\}")
_MAX_MAKEFILES = 64


def _options(args: tuple[str, ...]) -> tuple[list[str], list[str], list[str], list[str]]:
    """``(-f files, -I dirs, goals, VAR=value words)`` of make's arguments."""
    files: list[str] = []
    incdirs: list[str] = []
    goals: list[str] = []
    assigns: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a.startswith("--") and "=" in a:
            opt, _, value = a.partition("=")
            if opt in ("--file", "--makefile"):
                files.append(value)
            elif opt == "--include-dir":
                incdirs.append(value)
            continue
        if a in _VALUE_OPTS:
            value = args[i] if i < len(args) else ""
            i += 1
            if a in ("-f", "--file", "--makefile"):
                files.append(value)
            elif a in ("-I", "--include-dir"):
                incdirs.append(value)
            continue
        if a.startswith("-f") and len(a) > 2:
            files.append(a[2:])
        elif a.startswith("-I") and len(a) > 2:
            incdirs.append(a[2:])
        elif a.startswith("-"):
            continue
        elif "=" in a:
            assigns.append(a)
        else:
            goals.append(a)
    return files, incdirs, goals, assigns


def _logical_lines(text: str) -> Iterator[str]:
    buf = ""
    for line in text.splitlines():
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield buf + line
        buf = ""
    if buf:
        yield buf


def makefiles(
    directory: str, files: list[str], incdirs: list[str], environ: dict[str, str]
) -> tuple[list[str], list[str], list[str]]:
    """``(paths read or looked for, notes, the makefile texts read)`` for make in
    ``directory``: ``MAKEFILES``, the ``-f`` files or the default names, their includes."""
    looked: list[str] = []
    notes: list[str] = []
    texts: list[str] = []
    queue = [os.path.join(directory, w) for w in environ.get("MAKEFILES", "").split()]
    if files:
        queue += [os.path.join(directory, f) for f in files if f != "-"]
    else:
        looked += [os.path.join(directory, n) for n in MAKEFILE_NAMES]
        first = next((p for p in looked if os.path.isfile(p)), None)
        if first:
            queue.append(first)
    seen: set[str] = set()
    while queue and len(seen) < _MAX_MAKEFILES:
        path = os.path.normpath(queue.pop(0))
        if path in seen:
            continue
        seen.add(path)
        looked.append(path)
        try:
            text = read_regular(path, 2_000_000).decode("utf-8", "replace")
        except OSError:
            continue
        texts.append(text)
        for line in _logical_lines(text):
            m = _INCLUDE.match(line)
            if not m or line.startswith("\t"):
                continue
            for word in m.group(1).split():
                if "$" in word or any(c in word for c in "*?["):
                    notes.append(f"make: `include {word}` has a variable or wildcard")
                    if "$" not in word:
                        import glob

                        queue += sorted(glob.glob(os.path.join(directory, word)))
                    continue
                cands = [os.path.join(directory, word)] + [
                    os.path.join(directory, d, word) for d in incdirs
                ]
                looked += cands
                queue += [c for c in cands if os.path.isfile(c)][:1]
    return looked, notes, texts


_REF = re.compile(r"\$[({]([A-Za-z_][\w.]*)[)}]")
_SIMPLE_ASSIGN = re.compile(
    r"^\s*(?:export\s+|override\s+)?([A-Za-z_][\w.]*)\s*(::?=|:::=|\?=|=)\s*(.*?)\s*$"
)


def _variables(texts: list[str], assigns: list[str], environ: dict[str, str]) -> dict[str, str]:
    """Simple ``NAME = value`` / ``:=`` / ``?=`` assignments (functions are not evaluated);
    command-line ``NAME=value`` override them, as in make."""
    out: dict[str, str] = {}
    for text in texts:
        for line in _logical_lines(text):
            if line.startswith("\t"):
                continue
            m = _SIMPLE_ASSIGN.match(line)
            if m and not (m.group(2) == "?=" and (m.group(1) in out or m.group(1) in environ)):
                out[m.group(1)] = m.group(3)
    for a in assigns:
        key, _, value = a.partition("=")
        out[key] = value
    return out


def _expand(text: str, variables: dict[str, str]) -> str:
    for _ in range(8):
        new = _REF.sub(lambda m: variables.get(m.group(1), m.group(0)), text)
        if new == text:
            break
        text = new
    return text


def _rules(texts: list[str]) -> tuple[dict[str, tuple[list[str], list[str]]], str | None]:
    """``target → (prerequisites, recipe lines)`` and the default goal."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    default: str | None = None
    current: list[str] = []
    for text in texts:
        for line in _logical_lines(text):
            if line.startswith("\t"):
                for t in current:
                    rules[t][1].append(line[1:])
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if _ASSIGN.match(line) or _INCLUDE.match(line):
                current = []
                continue
            m = _RULE.match(line)
            if not m:
                current = []
                continue
            targets = m.group(1).split()
            prereqs = m.group(2).split()
            current = []
            for t in targets:
                entry = rules.setdefault(t, ([], []))
                entry[0].extend(prereqs)
                if m.group(3):
                    entry[1].append(m.group(3))
                current.append(t)
                if default is None and not t.startswith(".") and "%" not in t:
                    default = t
    return rules, default


def _expand_rule_lines(text: str, variables: dict[str, str]) -> str:
    """Targets and prerequisites with their variables expanded (recipes stay as written)."""
    out = []
    for line in text.splitlines():
        out.append(
            line
            if line.startswith("\t") or _SIMPLE_ASSIGN.match(line)
            else _expand(line, variables)
        )
    return "\n".join(out)


def make_surface(
    root: str,
    call: RunnerCall,
    environ: dict[str, str],
    nested: Nested,
) -> GradingSurface:
    """GNU make's surface for ``call`` (its recipes' runners through ``nested``)."""
    root, directory = call.where(root)
    env = {**environ, **dict(call.env)}
    files, incdirs, goals, assigns = _options(call.args)
    looked, notes, texts = makefiles(directory, files, incdirs, env)
    variables = _variables(texts, assigns, env)
    rules, default = _rules([_expand_rule_lines(t, variables) for t in texts])
    inside: dict[str, None] = {}
    above: dict[str, None] = {}
    for path in looked:
        rel = os.path.relpath(path, root)
        if rel.startswith(".."):
            above[path] = None
        else:
            inside[rel.replace(os.sep, "/")] = None
    surface = GradingSurface(
        root=root,
        kind=RunnerKind.MAKE,
        files=tuple(inside),
        above=tuple(above),
        notes=tuple(notes),
        kinds=(RunnerKind.MAKE,),
        calls=(call,),
    )
    todo = list(goals or ([default] if default else []))
    done: set[str] = set()
    while todo and len(done) < 64:
        target = todo.pop(0)
        if target in done:
            continue
        done.add(target)
        prereqs, recipe = rules.get(target, ([], []))
        todo += [p for p in prereqs if p in rules]
        if target not in rules and os.path.isfile(os.path.join(directory, target)):
            continue
        for line in recipe:
            cmd = line.lstrip("@-+ \t")
            if not cmd.strip():
                continue
            cmd = _expand(_VAR.sub("make", cmd), variables)
            if "$(" in cmd or "${" in cmd:
                surface = surface.merged(
                    GradingSurface(
                        root=root,
                        kind=RunnerKind.MAKE,
                        notes=(f"make: recipe of {target} has a variable: `{cmd.strip()[:80]}`",),
                    )
                )
            cwd = os.path.relpath(directory, root)
            sub = nested(cmd.replace("$$", "$"), "" if cwd == "." else cwd)
            surface = surface.merged(sub)
    return surface
