"""``[grading] source``: the operator's globs for what an attested run carries over."""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gates.config import load_config
from infomark.gates.surface import discover, source_set
from infomark.kernel.errors import ConfigError


def test_source_globs_load(tmp_path: Path) -> None:
    (tmp_path / "infomark.toml").write_text('[grading]\nsource = ["src/**", "*.py"]\n')
    config = load_config(tmp_path)
    assert config.grading_source == ("src/**", "*.py")
    sources = source_set(discover(str(tmp_path), "pytest -q"), [], config.grading_source)
    assert sources.carried("src/pkg/new.py") and not sources.carried("src/conftest.py")


def test_the_default_is_empty(tmp_path: Path) -> None:
    assert load_config(tmp_path).grading_source == ()


@pytest.mark.parametrize("glob", ["/etc/**", "../x/*.py", "src/../../y", " "])
def test_a_glob_outside_the_project_is_refused(tmp_path: Path, glob: str) -> None:
    (tmp_path / "infomark.toml").write_text(f"[grading]\nsource = [{glob!r}]\n".replace("'", '"'))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert "grading.source" in str(err.value) and "project-relative glob" in str(err.value)


def test_an_unknown_grading_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "infomark.toml").write_text('[grading]\nsources = ["src/**"]\n')
    with pytest.raises(ConfigError, match=r"grading\.sources"):
        load_config(tmp_path)
