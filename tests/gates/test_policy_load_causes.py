"""A policy that fails to load keeps its cause (``raise … from exc``, issue 29): the
import error inside a plugin is what its author needs, and it holds no secret."""

from __future__ import annotations

import pytest

from infomark.gates.config import Config
from infomark.gates.policies import PolicyRuntime
from infomark.kernel.errors import ConfigError


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        ("infomark_no_such_module_xyz:Policy", ModuleNotFoundError),
        ("infomark.kernel.errors:NoSuchPolicy", AttributeError),
    ],
)
def test_a_policy_that_cannot_load_keeps_its_cause(spec: str, cause: type[Exception]) -> None:
    with pytest.raises(ConfigError, match="cannot load") as raised:
        PolicyRuntime(Config(policies={"policies": [spec]}))
    assert isinstance(raised.value.__cause__, cause)
