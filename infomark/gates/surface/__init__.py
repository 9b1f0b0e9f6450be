"""The grading surface, discovered the way each runner discovers it (issue 26, §2).

``discover(root, oracle)`` reads the oracle as the shell would, and for each test runner it
starts returns what that runner reads: configuration in its precedence order (above the
project too), conftests and ``__init__.py`` on the way to each test, makefiles and what they
include, package scripts, test files. ``source_set(surface, tracked, globs)`` says which of
the agent's files an attested run carries over. Standard library only; file reads, no
journal.
"""

from __future__ import annotations

from infomark.gates.surface.discover import conservative, discover
from infomark.gates.surface.model import GradingSurface, RunnerCall, glob_match
from infomark.gates.surface.oracle import parse_oracle
from infomark.gates.surface.source import SourceSet, source_set

__all__ = [
    "GradingSurface",
    "RunnerCall",
    "SourceSet",
    "conservative",
    "discover",
    "glob_match",
    "parse_oracle",
    "source_set",
]
