"""What ``cargo test`` and ``go test`` read.

cargo: the package's ``Cargo.toml`` (and the workspace's, searched upwards), ``Cargo.lock``,
``build.rs``, ``.cargo/config.toml`` (or ``.cargo/config``) in the directory and **every
parent** (cargo's hierarchical configuration), ``rust-toolchain[.toml]``; integration tests
in ``tests/``, benches, examples; unit tests live in the source (``#[cfg(test)]``), so they
are source. go: ``go.mod``, ``go.sum``, ``go.work`` (searched upwards), ``vendor/``,
``*_test.go`` files and ``testdata/`` directories.
"""

from __future__ import annotations

import os

from infomark.gates.surface.model import GradingSurface, RunnerCall
from infomark.kernel.runners import CARGO_FILES, GO_FILES, RunnerKind

__all__ = ["cargo_surface", "go_surface"]


def _ancestors(path: str) -> list[str]:
    out = [path]
    while os.path.dirname(out[-1]) != out[-1]:
        out.append(os.path.dirname(out[-1]))
    return out


def _split(root: str, paths: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    inside: dict[str, None] = {}
    above: dict[str, None] = {}
    for p in paths:
        rel = os.path.relpath(p, root)
        if rel.startswith(".."):
            above[os.path.normpath(p)] = None
        elif rel != ".":
            inside[rel.replace(os.sep, "/")] = None
    return tuple(inside), tuple(above)


def _walk(directory: str, root: str, suffix: str, *, under: str | None = None) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in ("target", "vendor")
        )
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        if under is not None and under not in rel_dir.split("/"):
            continue
        for n in sorted(filenames):
            if n.endswith(suffix):
                out.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
        if len(out) > 5000:
            break
    return out


def _upwards(
    root: str, directory: str, names: tuple[str, ...], here_only: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """``(files, above, base)``: ``names`` in ``directory`` and every parent (``here_only``
    in ``directory`` alone), split at the root; ``base`` the directory as a glob prefix."""
    paths = [
        os.path.join(d, name)
        for d in _ancestors(directory)
        for name in names
        if d == directory or name not in here_only
    ]
    files, above = _split(root, paths)
    base = os.path.relpath(directory, root).replace(os.sep, "/")
    return files, above, "" if base == "." else base + "/"


def cargo_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    root, directory = call.where(root)
    manifest: tuple[str, ...] = ()
    for i, a in enumerate(call.args):
        if a == "--manifest-path" and i + 1 < len(call.args):
            path = os.path.normpath(os.path.join(directory, call.args[i + 1]))
            manifest, _ = _split(root, [path])
            directory = os.path.dirname(path)
    files, above, base = _upwards(root, directory, CARGO_FILES, ("build.rs", "Cargo.lock"))
    return GradingSurface(
        root=root,
        kind=RunnerKind.CARGO,
        files=(*manifest, *files),
        above=above,
        globs=(f"{base}target/**", f"{base}benches/**", f"{base}examples/**"),
        test_globs=(f"{base}tests/**/*.rs",),
        tests=tuple(_walk(os.path.join(directory, "tests"), root, ".rs")),
        kinds=(RunnerKind.CARGO,),
        calls=(call,),
        notes=("cargo: unit tests inside src/ are source",),
    )


def go_surface(root: str, call: RunnerCall, environ: dict[str, str]) -> GradingSurface:
    root, directory = call.where(root)
    files, above, base = _upwards(root, directory, GO_FILES, ("vendor/modules.txt",))
    return GradingSurface(
        root=root,
        kind=RunnerKind.GO,
        files=files,
        above=above,
        globs=(f"{base}**/testdata/**", f"{base}vendor/**"),
        test_globs=(f"{base}**/*_test.go",),
        tests=tuple(_walk(directory, root, "_test.go")),
        kinds=(RunnerKind.GO,),
        calls=(call,),
        notes=("go test: GOFLAGS and GOWORK in the environment change what it reads",),
    )
