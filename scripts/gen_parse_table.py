"""Regenerate ``infomark/ledger/parse/table.py`` from ``infomark/ledger/parse/blocks.lark``.

lark builds the LALR(1) tables of the grammar here, at development time; the parser at run
time (``infomark/ledger/parse/lalr.py``) is a standard-library driver over the generated
tables, so a hook process never imports lark. Run after any change to ``blocks.lark``:

    .venv/bin/python scripts/gen_parse_table.py          # rewrite the module
    .venv/bin/python scripts/gen_parse_table.py --check  # exit 1 if it is stale

``tests/ledger/test_parse_lalr.py`` runs ``--check`` and compares the driver with lark's own
parser on generated token streams.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "infomark" / "ledger" / "parse" / "blocks.lark"
TARGET = ROOT / "infomark" / "ledger" / "parse" / "table.py"

# kinds of a rule's symbols, as the driver reads them
KEEP, DROP, CHILD, INLINE = "k", "d", "c", "i"


def build() -> Any:
    from lark import Lark, Token
    from lark.lexer import Lexer, LexerState

    class Replay(Lexer):
        __future_interface__ = 2

        def __init__(self, lexer_conf: object) -> None:
            pass

        def lex(self, lexer_state: LexerState, parser_state: object) -> Iterator[Token]:
            return iter(lexer_state.text)  # type: ignore[arg-type]

    return Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer=Replay,
        propagate_positions=True,
        strict=True,
    )


def _kind(sym: Any) -> str:
    if sym.is_term:
        return DROP if sym.filter_out else KEEP
    return INLINE if sym.name.startswith("_") else CHILD


# how the driver reduces by a rule (see infomark/ledger/parse/lalr.py)
BUILD, INLINED, HELPER = 0, 1, 2


def _rule_row(rule: Any, kinds: str) -> str:
    """``(build name, origin, mode, size, plan)``: the driver's view of one rule.

    ``plan`` is None when every symbol is kept as it is (no filtered terminal, no inlined
    helper), else the kinds of the symbols.
    """
    origin = rule.origin.name
    kept = [k for k in kinds if k != DROP]
    if origin.startswith("_"):
        mode = HELPER
    elif rule.options.expand1 and not rule.alias and INLINE in kinds:
        raise SystemExit(f"{rule}: a ?rule that inlines a helper (the driver does not do that)")
    elif rule.options.expand1 and not rule.alias and len(kept) == 1:
        mode = INLINED
    else:
        mode = BUILD
    plan = "None" if set(kinds) <= {KEEP, CHILD} else _q(kinds)
    return f"({_q(rule.alias or origin)}, {_q(origin)}, {mode}, {len(kinds)}, {plan})"


def _q(name: object) -> str:
    """A name as a double-quoted literal (the tables are not reformatted)."""
    text = str(name)
    assert text.isprintable() and '"' not in text and "\\" not in text, text
    return f'"{text}"'


def _check_shape(rules: list[Any]) -> None:
    """What the driver assumes of the grammar, checked here where the tables are made.

    No rule is empty (the driver slices ``size`` items off its stack), and a ``?rule``
    that keeps one symbol always ends in a rule that builds a node, never in a bare
    terminal (so an inlined item is a node, whose span the inlining widens).
    """
    for rule in rules:
        assert rule.expansion, f"{rule}: an empty rule"
    yields_token: set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in rules:
            kept = [s for s in rule.expansion if _kind(s) != DROP]
            if not rule.options.expand1 or rule.alias or len(kept) != 1:
                continue
            sym = kept[0]
            token = sym.is_term or sym.name in yields_token
            if token and rule.origin.name not in yields_token:
                yields_token.add(rule.origin.name)
                changed = True
    assert not yields_token, f"?rules that can reduce to a bare token: {sorted(yields_token)}"


def render() -> str:
    import lark

    parser = build()
    inner = parser.parser.parser.parser
    table = inner.parse_table
    rules = list(parser.rules)
    index = {rule: i for i, rule in enumerate(rules)}
    for rule in rules:
        assert not rule.options.keep_all_tokens and not rule.options.empty_indices, rule
    _check_shape(rules)
    rule_lines = []
    for rule in rules:
        kinds = "".join(_kind(s) for s in rule.expansion)
        text = " ".join(s.name for s in rule.expansion)
        q = "?" if rule.options.expand1 else ""
        alias = f" -> {rule.alias}" if rule.alias else ""
        rule_lines.append(
            f"    {_rule_row(rule, kinds)},  # {q}{rule.origin.name}: {text}{alias}\n"
        )
    # lark numbers states in the order of sets of objects (it differs from run to run):
    # number them canonically, breadth first from the start state, symbols in sorted order
    start, end = table.start_states["start"], table.end_states["start"]
    order = [start]
    number = {start: 0}
    for state in order:
        for symbol in sorted(table.states[state]):
            action, arg = table.states[state][symbol]
            if action.name == "Shift" and arg not in number:
                number[arg] = len(order)
                order.append(arg)
    assert len(order) == len(table.states) and end in number
    state_lines = []
    for state in order:
        actions = table.states[state]
        parts = []
        for symbol in sorted(actions):
            action, arg = actions[symbol]
            target = number[arg] if action.name == "Shift" else ~index[arg]
            parts.append(f"{_q(symbol)}: {target}")
        state_lines.append(f"    {{{', '.join(parts)}}},\n")
    digest = hashlib.sha256(GRAMMAR.read_bytes()).hexdigest()
    text = (
        "# ruff: noqa: E501  (generated data: one state per line)\n"
        '"""LALR(1) tables of ``blocks.lark``: generated by ``scripts/gen_parse_table.py``.\n\n'
        "Do not edit: regenerate after changing the grammar (a test checks this file is current).\n"
        "``RULES[i]``: (the name its node is built by, the rule it reduces to, mode, number of\n"
        "symbols, plan); mode 0 builds a node, 1 inlines its one kept child (a ``?``-rule),\n"
        "2 is a helper rule (``x+``, ``x*``) whose children join its parent's; plan is None\n"
        "when every symbol is kept, else one kind per symbol (k: kept terminal, d: filtered\n"
        "terminal, c: rule, i: inlined helper rule). ``STATES[s]``: symbol → a state to shift\n"
        "or go to (>= 0), or ``~i``: reduce by ``RULES[i]``. Literals, so that loading them is\n"
        "unmarshalling constants, with no decoding at run time.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        f"GRAMMAR_SHA256 = {digest!r}\n"
        f"LARK_VERSION = {lark.__version__!r}\n"
        "START_STATE = 0\n"
        f"END_STATE = {number[end]}\n\n"
        "# fmt: off\n"
        "RULES: tuple[tuple[str, str, int, int, str | None], ...] = (\n"
        + "".join(rule_lines)
        + ")\n\n"
        "STATES: tuple[dict[str, int], ...] = (\n" + "".join(state_lines) + ")\n"
        "# fmt: on\n"
    )
    return _ruff_format(text)


def _ruff_format(text: str) -> str:
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run(
        [str(ruff), "format", "--stdin-filename", str(TARGET), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return done.stdout


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale: run scripts/gen_parse_table.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
