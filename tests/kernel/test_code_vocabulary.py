"""Issue 9: decision and finish codes are the kernel's vocabulary, never bare strings in gates/."""

from __future__ import annotations

import ast
from pathlib import Path

import infomark
from infomark.kernel.decisions import DecisionCode, FinishCode

GATES = Path(infomark.__file__).parent / "gates"


def _bare_codes() -> list[str]:
    found = []
    for path in sorted(GATES.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in ("replace", "Decision", "FinishDecision"):
                continue  # a decision is built or changed only through these
            args = [k.value for k in node.keywords if k.arg == "code"]
            if name == "FinishDecision" and len(node.args) >= 3:
                args.append(node.args[2])
            for a in args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    found.append(f"{path.name}:{a.lineno} code={a.value!r}")
    return found


def test_no_gate_spells_a_decision_code_as_a_bare_string() -> None:
    assert _bare_codes() == []


def test_the_two_vocabularies_agree_where_they_share_a_name() -> None:
    shared = {c.value for c in DecisionCode} & {c.value for c in FinishCode}
    assert shared == {"allowed", "ungrounded_premises", "gate_position"}
