"""Security tests: each one is an attack a hostile agent (same OS user, a shell, full
knowledge of the code) tried on main, written so that it fails if the defence goes away.
The hook tests drive the real hook process with the reliability suite's helpers."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/helpers.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # hook_session.py
_RELIABILITY = str(Path(__file__).resolve().parents[1] / "reliability")
if _RELIABILITY not in sys.path:
    sys.path.insert(0, _RELIABILITY)
