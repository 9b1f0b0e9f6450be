"""Self-invocation of infomark is recognised on the parsed command (issue 11 §1): family
``infomark`` in any spelling, through wrappers, ``python -m``, and Python fed on stdin; a
computed command word fails closed with family ``opaque_command``.

SAFETY: bash only runs `printf '%s\\n' WORD` (to confirm a spelling means `infomark`).
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates.shell import classify_shell
from infomark.kernel.tools import ToolClass

SELF = [
    "infomark record --tool Bash --input '{}' --exit-code 0",
    "\\infomark record",
    "'infomark' record",
    '"infomark" approve',
    'inf""omark record',
    "inf''omark record",
    "i\\nfomark record",
    "$'infomark' record",
    "$'\\x69nfomark' record",
    "/usr/local/bin/infomark record",
    ".venv/bin/infomark record",
    "./.venv/bin/infomark approve",
    "python -m infomark record",
    "python3 -m infomark.cli.entry record",
    "python3.12 -m infomark approve",
    "python3 -minfomark record",
    "env FOO=1 infomark record",
    "nohup infomark record &",
    "timeout 5 infomark record",
    "time infomark record",
    "nice -n 5 infomark record",
    "sudo -E infomark record",
    "echo x | xargs infomark record",
    "xargs -I{} infomark record {}",
    "sh -c 'infomark record'",
    'bash -c "infomark approve"',
    "uv run infomark record",
    "npx infomark record",
    "command infomark record",
    "exec infomark record",
    "find . -exec infomark record {} \\;",
    "X=infomark; $X record",
    "X=$'\\x69nfomark'; $X record",
    "$(which infomark) record",
    "`which infomark` record",
    "python3 /dev/stdin <<< 'import infomark'",
    "python3 - <<'EOF'\nfrom infomark.cli.entry import main\nmain(['record'])\nEOF",
    "echo 'import infomark' | python3",
    "python3 -c 'import infomark.cli.entry as e; e.main()'",
    "python3 -c \"__import__('importlib').import_module('info' + 'mark')\"",
    "eval 'infomark record'",
    "alias im=infomark\nim record",
    "hash -p /opt/bin/infomark ls\nls record",
    "python .venv/bin/infomark record",
]


@pytest.mark.parametrize("command", SELF)
def test_self_invocation_is_marked(command: str) -> None:
    result = classify_shell(command)
    assert "infomark" in result.families or (
        "opaque_command" in result.families and result.opaque
    ), result


@pytest.mark.parametrize(
    "command",
    ["X=infomark; $X record", "$(which infomark) record", "$CMD record", '"$EDITOR" x'],
)
def test_computed_command_words_are_opaque_commands(command: str) -> None:
    result = classify_shell(command)
    assert "opaque_command" in result.families and result.opaque
    assert result.tool_class is ToolClass.MODIFY


@pytest.mark.parametrize(
    "command",
    ["echo infomark", "grep -r infomark docs", "cat infomark.toml", "ls infomark/", "git log"],
)
def test_mentioning_infomark_as_data_is_not_self_invocation(command: str) -> None:
    assert "infomark" not in classify_shell(command).families


def _spell(draw: st.DrawFn) -> str:
    out: list[str] = []
    for ch in "infomark":
        style = draw(st.sampled_from(["plain", "escape", "single", "double", "empty", "ansi"]))
        if style == "plain":
            out.append(ch)
        elif style == "escape":
            out.append("\\" + ch)
        elif style == "single":
            out.append(f"'{ch}'")
        elif style == "double":
            out.append(f'"{ch}"')
        elif style == "empty":
            out.append(ch + draw(st.sampled_from(['""', "''"])))
        else:
            out.append(f"$'\\x{ord(ch):02x}'")
    return "".join(out)


SPELLINGS = st.composite(_spell)()
PREFIXES = st.sampled_from(["", "/usr/bin/", ".venv/bin/", "./"])
WRAPPERS = st.lists(
    st.sampled_from(["env", "env A=1", "nohup", "timeout 5", "time", "nice", "sudo", "command"]),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(SPELLINGS, PREFIXES, WRAPPERS)
def test_any_quoting_of_infomark_is_recognised(word: str, prefix: str, chain: list[str]) -> None:
    # real bash agrees the word means infomark
    done = subprocess.run(
        ["bash", "--norc", "-c", "printf '%s\\n' " + prefix + word],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.stdout == prefix + "infomark\n", (word, done.stdout)
    command = " ".join([*chain, prefix + word, "record", "--tool", "Bash"])
    assert "infomark" in classify_shell(command).families, command
