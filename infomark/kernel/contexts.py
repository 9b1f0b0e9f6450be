"""``contextmanager`` and ``suppress``: :mod:`contextlib`'s, re-exported.

This module once re-implemented them so a hook process would not import
:mod:`contextlib`; measured again for issue 29 (``python -m bench.icount``), that saved
2.3 M of a steady-state PreToolUse's 122.8 M instructions (1.8 %) and nothing once a
ledger block is parsed, under the 3 % a stand-in must earn (``standins/README.md``). New
code imports :mod:`contextlib` directly; the remaining call sites move with their modules.
"""

from __future__ import annotations

from contextlib import contextmanager, suppress

__all__ = ["contextmanager", "suppress"]
