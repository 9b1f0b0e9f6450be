"""Configuration: file discovery, validation errors that name the field, the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infomark.gates.config import load_config
from infomark.kernel.errors import ConfigError


def test_defaults_without_a_file(tmp_path: Path) -> None:
    assert load_config(tmp_path).profile == "ledger"


def test_infomark_toml_wins_over_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.infomark]\nprofile = "observe"\n')
    assert load_config(tmp_path).profile == "observe"
    (tmp_path / "infomark.toml").write_text('profile = "strict"\n')
    assert load_config(tmp_path).profile == "strict"


def test_infomark_config_env_may_name_a_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "sub" / "pyproject.toml"
    p.parent.mkdir()
    p.write_text('[project]\nname = "x"\n[tool.infomark]\nprofile = "strict"\n')
    monkeypatch.setenv("INFOMARK_CONFIG", str(p))
    assert load_config(tmp_path).profile == "strict"


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('profile = "paranoid"', "profile"),
        ("finish_refusal_cap = -1", "finish_refusal_cap"),
        ("loop_budget = { G11 = 2 }", "loop_budget"),
        ("loop_budget = { G8 = -1 }", "loop_budget"),
        ('tools = { deploy = "dangerous" }', "tools.deploy"),
        ("unknown_key = 1", "unknown_key"),
        ("max_active_packs = 7", "max_active_packs"),
    ],
)
def test_invalid_values_name_the_field(tmp_path: Path, toml: str, field: str) -> None:
    (tmp_path / "infomark.toml").write_text(toml + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert field in str(err.value) and "infomark.toml" in str(err.value)


def test_not_toml_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "infomark.toml").write_text("profile = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path)


def test_validated_config_is_cached_by_content(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "infomark.toml").write_text('profile = "strict"\n')
    assert load_config(tmp_path, home).profile == "strict"
    assert (home / "config.cache.json").exists()
    (tmp_path / "infomark.toml").write_text('profile = "observe"\n')
    assert load_config(tmp_path, home).profile == "observe"  # new content, new validation


SEED_YAML = """# toc agent file
runtime_config:
  adaptive_packs:
    - repeated_failures
    - evidence_before_done
    - context_pressure
  pack_overrides:
    evidence_before_done:
      min_failures: 1
      severity: medium
"""


def test_seed_shaped_yaml_runtime_config_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "infomark.yaml").write_text(SEED_YAML)
    cfg = load_config(tmp_path)
    assert cfg.policies["adaptive_packs"] == [
        "repeated_failures",
        "evidence_before_done",
        "context_pressure",
    ]
    override = cfg.policies["pack_overrides"]["evidence_before_done"]
    assert override["threshold"] == 1 and override["severity"] == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("adaptive_packs: [a]\n", "runtime_config"),
        ("runtime_config:\n  adaptive_packs:\n    - {a: 1}\n", "line 3"),
        ("runtime_config:\n\tadaptive_packs: []\n", "tabs"),
        ("runtime_config:\n  max_active_packs: 9\n", "max_active_packs"),
        ('runtime_config:\n  pack_overrides: "oops\n', "line 2"),
    ],
)
def test_bad_yaml_config_names_the_line_or_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "infomark.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


# -- [attest] required: the default in the enforcing profiles, an explicit opt-out ---------


@pytest.mark.parametrize(
    ("toml", "required"),
    [
        ("", True),  # no file: the defaults
        ('profile = "ledger"\n', True),
        ('profile = "strict"\n', True),
        ('profile = "verify"\n', True),
        ('profile = "observe"\n', False),  # observe enforces nothing
        ("[attest]\nwall_seconds = 60\n", True),  # an [attest] table without `required`
        ("[attest]\nrequired = false\n", False),  # the operator's explicit opt-out
        ('profile = "verify"\n[attest]\nrequired = false\n', False),
        ('profile = "observe"\n[attest]\nrequired = true\n', False),
    ],
)
def test_attested_runs_are_required_by_default_in_enforcing_profiles(
    tmp_path: Path, toml: str, required: bool
) -> None:
    if toml:
        (tmp_path / "infomark.toml").write_text(toml)
    home = tmp_path / "home"
    home.mkdir()
    assert load_config(tmp_path, home).attest_required is required
    assert load_config(tmp_path, home).attest_required is required  # the cached form too


def test_a_cache_written_under_other_defaults_is_validated_again(tmp_path: Path) -> None:
    """An older infomark cached `required: false` as a default for a file that never said it:
    that cache is not read as it is (the default would silently stay off)."""
    import json

    from infomark.kernel.digest import sha256

    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "infomark.toml"
    path.write_text('profile = "strict"\n')
    old = {"profile": "strict", "attest": {"required": False}}
    digest = sha256(path.read_bytes()).hexdigest()
    (home / "config.cache.json").write_text(
        json.dumps({"sha256": digest, "path": str(path), "config": old})
    )
    assert load_config(tmp_path, home).attest_required is True
    cached = json.loads((home / "config.cache.json").read_text())
    assert cached["config"]["attest"]["required"] is None  # rewritten under today's shape


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_config_file_that_is_there_but_unreadable_is_an_error_not_the_defaults(
    tmp_path: Path, kind: str
) -> None:
    """The operator's pyproject says strict; an agent that puts a FIFO (which a plain open
    would wait on for ever) or a directory where ``infomark.toml`` goes must get neither a
    hang nor the defaults, even with the pyproject's configuration cached in the home."""
    (tmp_path / "pyproject.toml").write_text('[tool.infomark]\nprofile = "strict"\n')
    home = tmp_path / "home"
    home.mkdir()
    assert load_config(tmp_path, home).profile == "strict"  # cached now
    target = tmp_path / "infomark.toml"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    for where in (home, None):
        with pytest.raises(ConfigError) as err:
            load_config(tmp_path, where)
        what = "a FIFO" if kind == "fifo" else "a directory"
        assert f"infomark.toml: cannot be read ({what}, not a file)" in str(err.value)
        assert "remove it to use the defaults" in str(err.value)
