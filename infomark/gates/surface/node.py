"""What npm / yarn / pnpm, jest, vitest, mocha and ``node --test`` read.

npm (``npm run-script``): ``package.json``'s ``scripts``; ``npm test`` runs ``pretest``,
``test``, ``posttest``; ``node_modules/.bin`` comes first on ``PATH``, so the runner itself
lives in ``node_modules``. jest: ``--config``, else the first ``jest.config.{js,ts,mjs,cjs,
cts,json}``, else ``package.json``'s ``jest`` key; tests ``**/__tests__/**`` and
``*.{test,spec}.{js,jsx,ts,tsx}``. vitest: ``--config``, else ``vitest.config.*``, else
``vite.config.*``; tests ``*.{test,spec}.?(c|m)[jt]s?(x)``. mocha: ``--config``, else the
first ``.mocharc.*``, ``package.json``'s ``mocha`` key; tests ``./test/*.{js,cjs,mjs}``.
``node --test``: its documented default patterns. A JavaScript config can compute anything:
discovery cannot read it, and notes so.
"""

from __future__ import annotations

import json
import os

from infomark.gates.surface.model import GradingSurface, Nested, RunnerCall
from infomark.kernel.regular import read_regular
from infomark.kernel.runners import (
    JEST_CONFIGS,
    MOCHA_CONFIGS,
    NODE_PACKAGE_FILES,
    VITEST_CONFIGS,
    RunnerKind,
)

__all__ = [
    "jest_surface",
    "mocha_surface",
    "node_test_surface",
    "package_surface",
]

_JS = ("js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts")
_LIFECYCLE_ALIASES = {"t": "test", "tst": "test", "run-script": "run", "rum": "run", "urn": "run"}
_NODE_GLOBS = ("node_modules/**", "**/node_modules/**")


def _package(directory: str) -> dict[str, object]:
    try:
        doc = json.loads(read_regular(os.path.join(directory, "package.json")))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _rel(root: str, path: str) -> str | None:
    rel = os.path.relpath(path, root)
    return None if rel.startswith("..") or rel == "." else rel.replace(os.sep, "/")


def _files(root: str, directory: str, names: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for n in names:
        rel = _rel(root, os.path.join(directory, n))
        if rel is not None:
            out.append(rel)
    return tuple(out)


def _base(root: str, directory: str) -> str:
    rel = _rel(root, directory)
    return f"{rel}/" if rel else ""


def _script_name(call: RunnerCall) -> str | None:
    """The package script ``npm test`` / ``npm run X`` / ``yarn X`` / ``pnpm X`` runs."""
    words = [a for a in call.args if not a.startswith("-")]
    if not words:
        return "test" if call.argv and call.argv[0].endswith("yarn") else None
    verb = _LIFECYCLE_ALIASES.get(words[0], words[0])
    if verb == "run":
        return words[1] if len(words) > 1 else None
    if verb in ("test", "start", "stop", "restart"):
        return verb
    manager = os.path.basename(call.argv[0]) if call.argv else ""
    if manager in ("yarn", "pnpm", "bun"):
        return verb  # `yarn lint`, `pnpm check`: a script by its name
    return None


def package_surface(
    root: str,
    call: RunnerCall,
    environ: dict[str, str],
    nested: Nested,
) -> GradingSurface:
    """A package manager running a ``package.json`` script (and its pre/post scripts)."""
    root, directory = call.where(root)
    for i, a in enumerate(call.args):  # npm --prefix DIR, pnpm -C DIR, yarn --cwd DIR
        if a in ("--prefix", "-C", "--dir", "--cwd") and i + 1 < len(call.args):
            directory = os.path.normpath(os.path.join(directory, call.args[i + 1]))
    doc = _package(directory)
    scripts = doc.get("scripts") if isinstance(doc.get("scripts"), dict) else {}
    assert isinstance(scripts, dict)
    name = _script_name(call)
    surface = GradingSurface(
        root=root,
        kind=RunnerKind.NPM,
        files=_files(root, directory, NODE_PACKAGE_FILES),
        globs=_NODE_GLOBS,
        kinds=(RunnerKind.NPM,),
        calls=(call,),
        notes=(f"package script `{name}`" if name else "package manager without a script",),
    )
    cwd = _rel(root, directory) or ""
    for key in (f"pre{name}", name, f"post{name}") if name else ():
        body = scripts.get(key)
        if isinstance(body, str) and body.strip():
            surface = surface.merged(nested(body, cwd))
    return surface


def _config_arg(call: RunnerCall, *flags: str) -> str | None:
    args = call.args
    for i, a in enumerate(args):
        for flag in flags:
            if a == flag and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(flag + "="):
                return a.partition("=")[2]
    return None


def _runner_surface(
    root: str,
    call: RunnerCall,
    kind: RunnerKind,
    configs: tuple[str, ...],
    package_key: str | None,
    test_globs: tuple[str, ...],
    flags: tuple[str, ...],
) -> GradingSurface:
    root, directory = call.where(root)
    named = _config_arg(call, *flags)
    files = list(_files(root, directory, ("package.json", *configs)))
    notes = []
    if named:
        rel = _rel(root, os.path.join(directory, named))
        if rel:
            files.append(rel)
    found = [c for c in configs if os.path.isfile(os.path.join(directory, c))]
    if found and not found[0].endswith((".json", ".yaml", ".yml", ".jsonc")):
        notes.append(f"{kind.value}: {found[0]} is code: what it loads is not followed")
    if package_key and package_key in _package(directory):
        notes.append(f"{kind.value}: configuration in package.json's `{package_key}` key")
    base = _base(root, directory)
    positional = [a for a in call.args if not a.startswith("-")]
    for p in positional:
        rel = _rel(root, os.path.join(directory, p))
        if rel and os.path.isfile(os.path.join(root, rel)):
            files.append(rel)
    return GradingSurface(
        root=root,
        kind=kind,
        files=tuple(dict.fromkeys(files)),
        globs=_NODE_GLOBS,
        test_globs=tuple(base + g for g in test_globs),
        tests=tuple(_existing_tests(root, directory, test_globs)),
        notes=tuple(notes),
        kinds=(kind,),
        calls=(call,),
    )


def _existing_tests(root: str, directory: str, globs: tuple[str, ...]) -> list[str]:
    from infomark.gates.surface.model import glob_match

    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d != "node_modules" and not d.startswith("."))
        for n in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, n), directory).replace(os.sep, "/")
            if any(glob_match(rel, g) for g in globs):
                full = _rel(root, os.path.join(dirpath, n))
                if full:
                    out.append(full)
        if len(out) > 5000:
            break
    return out


_JEST_TESTS = tuple(
    [f"**/__tests__/**/*.{e}" for e in _JS[:4]]
    + [f"**/*.{k}.{e}" for k in ("test", "spec") for e in _JS[:4]]
)
_VITEST_TESTS = tuple(f"**/*.{k}.{e}" for k in ("test", "spec") for e in _JS)
_MOCHA_TESTS = ("test/*.js", "test/*.cjs", "test/*.mjs")
_NODE_TESTS = tuple(
    [f"**/*{s}.{e}" for s in (".test", "-test", "_test") for e in ("js", "cjs", "mjs")]
    + [f"**/test-*.{e}" for e in ("js", "cjs", "mjs")]
    + [f"**/test.{e}" for e in ("js", "cjs", "mjs")]
    + [f"**/test/**/*.{e}" for e in ("js", "cjs", "mjs")]
)


def jest_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    return _runner_surface(
        root, call, RunnerKind.JEST, JEST_CONFIGS, "jest", _JEST_TESTS, ("--config", "-c")
    )


def vitest_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    return _runner_surface(
        root, call, RunnerKind.VITEST, VITEST_CONFIGS, None, _VITEST_TESTS, ("--config", "-c")
    )


def mocha_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    surface = _runner_surface(
        root, call, RunnerKind.MOCHA, MOCHA_CONFIGS, "mocha", _MOCHA_TESTS, ("--config",)
    )
    required = [
        call.args[i + 1] for i, a in enumerate(call.args[:-1]) if a in ("--require", "-r", "--file")
    ]
    extra = tuple(r for r in required if os.path.isfile(os.path.join(root, call.cwd, r)))
    if not extra:
        return surface
    return surface.merged(GradingSurface(root=surface.root, kind=RunnerKind.MOCHA, files=extra))


def node_test_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    surface = _runner_surface(root, call, RunnerKind.NODE_TEST, (), None, _NODE_TESTS, ())
    loaders = tuple(
        call.args[i + 1]
        for i, a in enumerate(call.args[:-1])
        if a in ("--require", "-r", "--import", "--loader", "--experimental-loader")
    )
    files = tuple(p for p in loaders if os.path.isfile(os.path.join(root, call.cwd, p)))
    return surface.merged(
        GradingSurface(
            root=surface.root,
            kind=RunnerKind.NODE_TEST,
            files=files,
            notes=("node --test: NODE_OPTIONS and --import/--require load code first",),
        )
    )
