"""Issue 9: decision and finish codes are the kernel's vocabulary, never bare strings in gates/;
issue 29: nor are the profiles' names, the tool classes, the codes or the ranks' names
anywhere outside kernel/ (compared or listed: the enums' members are)."""

from __future__ import annotations

import ast
from pathlib import Path

import infomark
from infomark.kernel.decisions import DecisionCode, FinishCode
from infomark.kernel.infomark import InfoMark
from infomark.kernel.profiles import PROFILES, Profile
from infomark.kernel.tools import ToolClass

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


# -- tool classes, decision and finish codes, ranks: members, never strings, outside kernel/ --
_VOCABULARIES: dict[str, frozenset[str]] = {
    "ToolClass": frozenset(c.value for c in ToolClass),
    "DecisionCode": frozenset(c.value for c in DecisionCode),
    "FinishCode": frozenset(c.value for c in FinishCode),
    "InfoMark": frozenset(m.label for m in InfoMark),  # the rank's spelling: Exact, Inferred …
}
_WORDS = frozenset().union(*_VOCABULARIES.values())

#: words a module compares that are not the vocabulary, though spelt like it: (module, word) ->
#: what the word is there. Keep it short; a new entry needs its reason.
NOT_VOCABULARY: dict[tuple[str, str], str] = {
    ("ledger/verify.py", "bypass"): "a journal event's type (LISTED), not the decision code",
    ("ledger/verify.py", "unannounced_mutation"): "a journal event's type (LISTED)",
    ("gates/policies/triggers.py", "read"): "a trigger's file-access kind (read/edited/written)",
    ("tools/eval/claude_code.py", "read"): "a host tool's name (Claude Code's Read), not a class",
    ("gates/decision.py", "bypass"): "Decision.to_dict()'s field names (bypass, dryrun)",
    ("gates/decision.py", "dryrun"): "Decision.to_dict()'s field names (bypass, dryrun)",
}


def _words(node: ast.AST) -> set[str]:
    """The vocabulary words ``node`` spells: a constant, or a literal collection's constants."""
    if isinstance(node, ast.Constant):
        return {node.value} & _WORDS if isinstance(node.value, str) else set()
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_words(e) for e in node.elts if isinstance(e, ast.Constant)))
    return set()


def _listed(words: set[str]) -> set[str]:
    """The words of each vocabulary ``words`` holds two or more of (a member list by hand)."""
    return set().union(*(words & v for v in _VOCABULARIES.values() if len(words & v) >= 2))


def _not_values(tree: ast.AST) -> set[int]:
    """Collections that name attributes or exports (``__slots__``, ``__all__``), not values, and
    the operands of comparisons (reported as compared, once)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in ("__all__", "__slots__") for t in targets):
                skip.add(id(node.value))
        elif isinstance(node, ast.Compare):
            skip.update(id(o) for o in (node.left, *node.comparators))
    return skip


def vocabulary_literals(
    source: str, where: str = "<src>", allowed: frozenset[str] = frozenset()
) -> list[str]:
    """Where ``source`` spells a tool class, a decision or finish code or a rank as a string: a
    comparison or ``case`` with one (or a collection holding one), a tuple, list, set or
    ``Literal[...]`` holding two or more of one vocabulary, a dict literal keyed by two or more.
    A lone word elsewhere (a dict key ``"ledger"`` of a wire form, the parser's ``ledger`` rule,
    a journal event written as ``("finished_blocked", …)``) is not reported; ``allowed``: words
    this module compares that mean something else (:data:`NOT_VOCABULARY`)."""
    tree = ast.parse(source)
    skip = _not_values(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            words = set().union(*(_words(o) for o in (node.left, *node.comparators)))
            kind = "compared"
        elif isinstance(node, ast.MatchValue):
            words, kind = _words(node.value), "matched"
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in skip:
            words, kind = _listed(_words(node)), "listed"
        elif isinstance(node, ast.Dict):
            keys = set().union(*(_words(k) for k in node.keys if k is not None))
            words, kind = _listed(keys), "keyed"
        else:
            continue
        if words - allowed:
            found.append((getattr(node, "lineno", 0), f"{kind} {sorted(words - allowed)}"))
    return [f"{where}:{line} {what}" for line, what in sorted(found)]


def test_no_vocabulary_word_is_compared_or_listed_outside_the_kernel() -> None:
    found = []
    for path in sorted(INFOMARK.rglob("*.py")):
        rel = path.relative_to(INFOMARK)
        if rel.parts[0] == "kernel":
            continue  # kernel/tools.py, decisions.py and infomark.py define the words
        allowed = frozenset(w for (m, w) in NOT_VOCABULARY if m == rel.as_posix())
        found += vocabulary_literals(path.read_text("utf-8"), str(rel), allowed)
    # compare or list members: ToolClass.MODIFY, DecisionCode.BYPASS, InfoMark.EXACT.label
    assert found == []


def test_every_exception_is_still_spelt_where_it_is_allowed() -> None:
    """An entry of NOT_VOCABULARY whose module no longer spells its word is stale: drop it."""
    stale = []
    for module, word in NOT_VOCABULARY:
        found = " ".join(vocabulary_literals((INFOMARK / module).read_text("utf-8"), module))
        if f"'{word}'" not in found:
            stale.append((module, word))
    assert stale == []


def test_the_vocabulary_checker_finds_a_planted_comparison_or_list() -> None:
    planted = """
if tool_class == "modify":
    pass
if decision.code != "grounded" and x:
    pass
if fin.code in ("finished_blocked", "allowed"):
    pass
ok = c.status == "Exact"
MUTATING = frozenset({"modify", "destructive"})
Name = Literal["read", "search", "web"]
STYLE = {"Exact": 1, "Inferred": 2}
match klass:
    case "execute":
        pass
"""
    assert [f.split(" ", 1)[1] for f in vocabulary_literals(planted)] == [
        "compared ['modify']",
        "compared ['grounded']",
        "compared ['allowed', 'finished_blocked']",
        "compared ['Exact']",
        "listed ['destructive', 'modify']",
        "listed ['read', 'search', 'web']",
        "keyed ['Exact', 'Inferred']",
        "matched ['execute']",
    ]
    unrelated = """
__slots__ = ("bypass", "revert", "scratch")
__all__ = ["execute", "search"]
events.append(("finished_blocked", {"gate": gate}))  # a journal event, named once
RULES = [("ledger", "ledger", 0, 6, "kdddcd")]  # the parser's ledger rule
out = {"ledger": gk.ledger().to_dict(), "gate": 1}  # a wire form's key
TOOLS = ("read", "write", "edit", "bash")  # host tool names: one class word only
ok = tool_class in (ToolClass.MODIFY, ToolClass.DESTRUCTIVE) and c.status == InfoMark.EXACT.label
"""
    assert vocabulary_literals(unrelated) == []
    assert vocabulary_literals('if row.type == "bypass": pass', allowed=frozenset({"bypass"})) == []
