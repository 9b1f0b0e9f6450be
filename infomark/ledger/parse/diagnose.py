"""Parser diagnostics: located problems, syntax errors and readable snippets.

Every failure of the block parser becomes a :class:`~infomark.ledger.blocks.Diagnostic`
with a 1-based line and column in the original message; this module builds them.
"""

from __future__ import annotations

from infomark.ledger.blocks import Diagnostic
from infomark.ledger.parse.locate import Candidate

__all__ = [
    "SNIPPET",
    "TOKEN_NAMES",
    "Problem",
    "internal_error",
    "short",
    "snippet",
    "syntax_diagnostic",
]

SNIPPET = 60
TOKEN_NAMES = {
    "LEDGER": "claim_ledger:",
    "STAMP": "a stamp keyword",
    "DIVERGENCE": "divergence_event:",
    "GATE": "gate:",
    "QUESTION": "question:",
    "KEY": "a key (name:)",
    "IKEY": "a key=value pair",
    "PLAIN": "a value",
    "DQ": "a double-quoted value",
    "SQ": "a single-quoted value",
    "BLOCK": "a | or > block value",
    "_COLON": "':'",
    "_OBJECT": "a {…} object",
    "_REASON": 'a reason (reason="…", — … or : …)',
    "_NL": "the end of the line",
    "_INDENT": "an indented line",
    "_DEDENT": "a less indented line",
    "_DASH": "a '- ' list item",
    "_LSQB": "'['",
    "_RSQB": "']'",
    "_LBRACE": "'{'",
    "_RBRACE": "'}'",
    "_COMMA": "','",
    "$END": "the end of the block",
}


def syntax_diagnostic(exc: Exception, candidate: Candidate) -> Diagnostic:
    token = getattr(exc, "token", None)
    line = getattr(token, "line", None) or getattr(exc, "line", None)
    column = getattr(token, "column", None) or getattr(exc, "column", None)
    if not isinstance(line, int) or not isinstance(column, int) or line < 1 or column < 1:
        line, column = candidate.line, candidate.column
    expected = sorted({TOKEN_NAMES.get(name, name) for name in getattr(exc, "expected", ())})
    what = _describe(token) if token is not None else "input"
    message = f"unexpected {what} in {candidate.keyword} block"
    if expected:
        message += "; expected " + ", ".join(expected)
    return Diagnostic(
        line=line,
        column=column,
        message=message,
        expected=expected,
        text=snippet(candidate, line, column),
        block=candidate.keyword,
    )


def _describe(token: object) -> str:
    kind = str(getattr(token, "type", ""))
    value = str(token)
    if kind in ("PLAIN", "DQ", "SQ", "BLOCK"):
        return f"value {short(value)!r}"
    if kind in ("KEY", "IKEY"):
        return f"key {short(value)!r}"
    name = TOKEN_NAMES.get(kind, kind or "input")
    for article in ("the ", "an ", "a "):
        if name.startswith(article):
            return name[len(article) :]
    return name


def snippet(candidate: Candidate, line: int, column: int) -> str:
    index = line - candidate.line
    if not 0 <= index < len(candidate.lines):
        return ""
    text = candidate.lines[index].text
    piece = text[column - 1 : column - 1 + SNIPPET].rstrip()
    return piece or text.strip()[:SNIPPET]


def short(value: str) -> str:
    return value if len(value) <= SNIPPET else value[: SNIPPET - 1] + "…"


def internal_error(line: int, column: int, exc: BaseException, keyword: str | None) -> Diagnostic:
    return Diagnostic(
        line=line,
        column=column,
        message=(
            f"internal parser error ({type(exc).__name__}: {short(str(exc))}); "
            "the block was not applied — please report this input"
        ),
        block=keyword,
    )


class Problem(Exception):
    """A located parse problem; becomes an error Diagnostic."""

    def __init__(self, line: int, column: int, message: str, expected: list[str], text: str):
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message
        self.expected = expected
        self.text = text

    def diagnostic(self, keyword: str) -> Diagnostic:
        return Diagnostic(
            line=max(self.line, 1),
            column=max(self.column, 1),
            message=self.message,
            expected=self.expected,
            text=self.text,
            block=keyword,
        )
