"""The security suite drives the real hook process with the reliability suite's helpers."""

from __future__ import annotations

import sys
from pathlib import Path

_RELIABILITY = str(Path(__file__).resolve().parents[1] / "reliability")
if _RELIABILITY not in sys.path:
    sys.path.insert(0, _RELIABILITY)
