"""The public API: every name in ``infomark.__all__`` resolves, lazily, and nothing heavy loads."""

from __future__ import annotations

import subprocess
import sys

import infomark


def test_all_names_resolve_and_are_sorted() -> None:
    assert infomark.__all__ == sorted(infomark.__all__)
    for name in infomark.__all__:
        assert getattr(infomark, name) is not None, name
    assert set(dir(infomark)) == set(infomark.__all__)


def test_the_documented_entry_points_are_there() -> None:
    for name in ("Gatekeeper", "ToolCall", "ToolOutcome", "InfoMark", "Decision", "Client"):
        assert name in infomark.__all__


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        infomark.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = "import infomark, sys; print(','.join(sorted(sys.modules)))"
    mods = (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        .stdout.strip()
        .split(",")
    )
    assert not [m for m in mods if m.split(".")[0] in ("pydantic", "lark", "httpx", "click")]
