"""Task suites: a directory per task (``task.toml``, a starting ``tree/``, a hidden ``check/``).

The agent's working tree is a copy of ``tree/`` only. ``check/`` is the grader: the harness
copies it over a copy of the final tree, outside the agent's tree and after the agent has
stopped (or at a finish attempt), and runs ``check`` there. ``[scripted]`` is what the scripted
agents know about the task (where the bug is, the fix, a wrong fix, how they would tamper with
the visible test); a model agent never sees it.
"""

from __future__ import annotations

import hashlib
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from infomark.kernel.errors import UserError

__all__ = ["Edit", "Scripted", "Suite", "Task", "TaskSpec", "load_suite"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Edit(_Strict):
    """Replace the first ``old`` by ``new`` in ``file`` (a path of the tree)."""

    file: str = Field(min_length=1)
    old: str = Field(min_length=1)
    new: str


class Scripted(_Strict):
    locate: str = Field(min_length=1, description="the command that shows where the bug is")
    read: list[str] = Field(default_factory=list, description="files worth reading")
    fix: list[Edit] = Field(min_length=1)
    wrong: Edit
    tamper: Edit


class TaskSpec(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,47}$")
    language: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    test_command: str = Field(min_length=1, description="the visible test the agent may run")
    tests: list[str] = Field(min_length=1, description="the visible test files")
    check: str = Field(min_length=1, description="the hidden check, run by the harness")
    short: bool = False
    requires: list[str] = Field(default_factory=list, description="programs the task needs")
    check_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    impossible: bool = Field(
        default=False,
        description="the visible test contradicts the prompt's specification (ImpossibleBench): "
        "code that meets the specification fails it, so passing it means cheating",
    )
    scripted: Scripted


@dataclass(frozen=True, slots=True)
class Task:
    spec: TaskSpec
    path: Path

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def tree(self) -> Path:
        return self.path / "tree"

    @property
    def check_dir(self) -> Path:
        return self.path / "check"

    def missing(self) -> list[str]:
        """Programs this task needs that are not on PATH."""
        return [p for p in self.spec.requires if shutil.which(p) is None]

    def digest(self) -> str:
        """sha256 over the task file, the tree and the check (what a result was measured on)."""
        h = hashlib.sha256()
        for base in (self.path / "task.toml", self.tree, self.check_dir):
            files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
            for f in files:
                h.update(str(f.relative_to(self.path)).encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Suite:
    path: Path
    tasks: tuple[Task, ...]

    def digest(self) -> str:
        h = hashlib.sha256()
        for t in self.tasks:
            h.update(f"{t.name}:{t.digest()}\n".encode())
        return h.hexdigest()


def _load_task(path: Path) -> Task:
    toml = path / "task.toml"
    try:
        doc = tomllib.loads(toml.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{toml}: cannot be read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{toml}: not valid TOML: {exc}") from exc
    try:
        spec = TaskSpec.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UserError(
            f"{toml}: {where}: {first['msg']} (see docs/eval.md#task-files for the format)"
        ) from exc
    if spec.name != path.name:
        raise UserError(f"{toml}: name {spec.name!r} must be the directory's name {path.name!r}")
    for sub in ("tree", "check"):
        if not (path / sub).is_dir():
            raise UserError(f"{path}: a task needs a {sub}/ directory")
    tree = (path / "tree").resolve()
    for rel in [*spec.tests, *(e.file for e in [*spec.scripted.fix, spec.scripted.tamper])]:
        target = (tree / rel).resolve()
        if not target.is_relative_to(tree) or not target.is_file():
            raise UserError(f"{toml}: {rel!r} is not a file of tree/")
    if spec.scripted.tamper.file not in spec.tests:
        raise UserError(f"{toml}: scripted.tamper.file must be one of tests")
    return Task(spec, path)


def load_suite(path: Path | str, *, only: tuple[str, ...] = ()) -> Suite:
    """Every task directory under ``path`` (sorted by name); ``only`` keeps those names."""
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"suite {root}: not a directory (a suite is a directory of tasks)")
    dirs = sorted(d for d in root.iterdir() if (d / "task.toml").is_file())
    if not dirs:
        raise UserError(f"suite {root}: no task directories (each needs a task.toml)")
    tasks = tuple(_load_task(d) for d in dirs)
    if only:
        unknown = sorted(set(only) - {t.name for t in tasks})
        if unknown:
            raise UserError(f"suite {root}: no task named {', '.join(unknown)}")
        tasks = tuple(t for t in tasks if t.name in only)
    return Suite(root, tasks)
