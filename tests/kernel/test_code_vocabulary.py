"""Issue 9: decision and finish codes are the kernel's vocabulary, never bare strings in gates/;
issue 29: nor are the profiles' names anywhere outside kernel/."""

from __future__ import annotations

import ast
from pathlib import Path

import infomark
from infomark.kernel.decisions import DecisionCode, FinishCode
from infomark.kernel.profiles import PROFILES, Profile

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


# -- profiles: the enum's properties, never the names, outside kernel/ ---------------------
INFOMARK = Path(infomark.__file__).parent
_PROFILE_NAMES = frozenset(p.value for p in Profile)


def _named(node: ast.AST) -> set[str]:
    """The profile names ``node`` spells: a constant, or the constants of a literal collection."""
    if isinstance(node, ast.Constant):
        return {node.value} & _PROFILE_NAMES if isinstance(node.value, str) else set()
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_named(e) for e in node.elts if isinstance(e, ast.Constant)))
    return set()


def profile_literals(source: str, where: str = "<src>") -> list[str]:
    """Where ``source`` compares or lists profile names as strings: a comparison or ``case``
    with a name (or a collection holding one), a tuple, list or set literal holding two or
    more names, a dict literal keyed by two or more (a profile set or table spelt by hand).
    A lone name elsewhere (a claim field ``observe``, the parser's ``ledger`` rule, a default
    argument) is not a profile comparison and is not reported."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            names = set().union(*(_named(o) for o in (node.left, *node.comparators)))
            kind = "compared"
        elif isinstance(node, ast.MatchValue):
            names, kind = _named(node.value), "matched"
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            names, kind = _named(node), "listed"
            names = names if len(names) >= 2 else set()
        elif isinstance(node, ast.Dict):
            names = set().union(*(_named(k) for k in node.keys if k is not None))
            names, kind = (names if len(names) >= 2 else set()), "keyed"
        else:
            continue
        if names:
            found.append((getattr(node, "lineno", 0), f"{kind} {sorted(names)}"))
    return [f"{where}:{line} {what}" for line, what in sorted(found)]


def test_no_profile_name_is_compared_or_listed_outside_the_kernel() -> None:
    found = []
    for path in sorted(INFOMARK.rglob("*.py")):
        rel = path.relative_to(INFOMARK)
        if rel.parts[0] == "kernel":
            continue  # kernel/profiles.py defines the names
        found += profile_literals(path.read_text("utf-8"), str(rel))
    assert found == []  # ask Profile's properties, or compare members (Profile.STRICT)


def test_the_profile_checker_finds_a_planted_comparison_or_list() -> None:
    planted = """
if config.profile == "observe":
    pass
if "verify" != profile and x:
    pass
ok = profile in ("strict",)
ENFORCING = ("ledger", "strict", "verify")
CHOICES = ["ledger", "observe"]
TABLE = {"ledger": 1, "strict": 2}
match profile:
    case "verify":
        pass
"""
    assert [f.split(" ", 1)[1] for f in profile_literals(planted)] == [
        "compared ['observe']",
        "compared ['verify']",
        "compared ['strict']",
        "listed ['ledger', 'strict', 'verify']",
        "listed ['ledger', 'observe']",
        "keyed ['ledger', 'strict']",
        "matched ['verify']",
    ]
    unrelated = """
cause = c.get("cause", "ledger")  # a claim's cause, not a profile
RULES = [("ledger", "ledger", 0, 6, "kdddcd")]  # the parser's ledger rule
FIELDS = ("id", "text", "observe")  # claim fields
strict = config.profile is Profile.STRICT or profile == Profile.OBSERVE
def f(profile: str = "verify") -> None: ...
"""
    assert profile_literals(unrelated) == []


def test_the_profiles_ask_what_the_gates_ask() -> None:
    table = {
        p.value: (p.enforcing, p.asks_protocol, p.judges_checks, p.walks_graph) for p in Profile
    }
    assert table == {
        "ledger": (True, True, False, False),
        "strict": (True, True, False, True),
        "observe": (False, True, False, False),
        "verify": (True, False, True, False),
    }
    assert PROFILES == ("ledger", "strict", "observe", "verify")  # the configuration's order
    assert all(type(p) is str for p in PROFILES)  # plain names: argparse shows them as written


def test_the_configuration_validates_exactly_the_profiles() -> None:
    from infomark.gates.config import Config
    from infomark.gates.config_model import validate_config
    from infomark.kernel.errors import ConfigError

    for p in Profile:
        validated = validate_config({"profile": p.value}, source="t")
        assert Config.from_dict(validated).profile is p
    assert Config().profile is Profile.LEDGER
    assert Config(profile="strict").profile is Profile.STRICT  # type: ignore[arg-type]
    try:
        validate_config({"profile": "nope"}, source="t")
    except ConfigError as exc:
        assert "profile: Input should be 'ledger', 'strict', 'observe' or 'verify'" in str(exc)
    else:
        raise AssertionError("an unknown profile validated")
