"""What is **source**: the agent's changes that an attested run carries over.

The operator's ``[grading] source = [globs]`` decides when set. The default: every file
tracked at the baseline that is outside the grading surface, plus a new file in a directory
that already held such a source file (a new module beside the old ones). Whatever the
globs say, a grading file is never source: the runner reads the baseline's. A new test file
(by the runner's own patterns) is carried too: a new test is not tampering, and the runner's
integrity check watches what it does. For a conservative surface (a runner infomark does not
know) this is the whole rule: everything that is not source comes from the baseline.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from infomark.gates.surface.model import GradingSurface, glob_match

__all__ = ["SourceSet", "source_set"]


@dataclass(frozen=True, slots=True)
class SourceSet:
    """The source rule for one surface and one baseline (see the module's docstring)."""

    surface: GradingSurface
    tracked: frozenset[str]
    globs: tuple[str, ...]
    source_dirs: frozenset[str]

    def is_source(self, rel: str) -> bool:
        """``rel`` (root-relative, ``/``-separated) is source: the agent's version counts."""
        if self.surface.covers(rel) or _hidden_tool_dir(rel):
            return False
        if self.globs:
            return any(glob_match(rel, g) for g in self.globs)
        if rel in self.tracked:
            return True
        return posixpath.dirname(rel) in self.source_dirs

    def carried(self, rel: str) -> bool:
        """The attested copy takes the agent's ``rel``: source, or a new test file."""
        return self.is_source(rel) or (rel not in self.tracked and self.surface.is_new_test(rel))


def _hidden_tool_dir(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    return top in (".git", ".infomark", ".hg", ".svn")


def source_set(
    surface: GradingSurface, tracked: Iterable[str], globs: Sequence[str] = ()
) -> SourceSet:
    """The source rule: ``tracked`` are the files tracked at the baseline (root-relative),
    ``globs`` the operator's ``[grading] source`` (empty: the default rule)."""
    files = frozenset(tracked)
    dirs: set[str] = set()
    for rel in files:  # a directory is asked about until one of its files is source
        parent = posixpath.dirname(rel)
        if parent not in dirs and not surface.covers(rel) and not _hidden_tool_dir(rel):
            dirs.add(parent)
    return SourceSet(surface, files, tuple(globs), frozenset(dirs))
