"""How block keywords and mapping keys are recognised on a line (standard library only).

Models write keys in more ways than the canonical ``name:``. Accepted, for keys
and keywords alike: ``**name**:``, ``**name:**`` and ```` `name`: ````; block
keywords are matched in any case (``Claim_Ledger:``), and ``claim_ledger`` also
with a space or hyphen (``Claim ledger:``). ``question:`` is the exception: it
must be written exactly, because "Question:" opens many prose lines.

:func:`may_contain_blocks` (:mod:`infomark.ledger.sniff`, re-exported) is the
hot-path pre-check: linear, built on ``str.find``, and an over-approximation of everything
:mod:`infomark.ledger.parse.locate` can report (blocks, and the "looks like a ledger"
diagnostics).
"""

from __future__ import annotations

from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass
from infomark.ledger.sniff import may_contain_blocks

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "BLOCK_KEYWORDS",
    "LEDGER_HINT_KEYS",
    "KeyAt",
    "is_key",
    "key_at",
    "key_colon",
    "keyword_at",
    "loose_key",
    "may_contain_blocks",
]

BLOCK_KEYWORDS: tuple[str, ...] = (
    "claim_ledger",
    "oracle_stamp",
    "inference_stamp",
    "source_stamp",
    "divergence_event",
    "gate",
    "question",
)
"""The words that open a block when they start a line and are followed by ``:``."""

LEDGER_HINT_KEYS: frozenset[str] = frozenset(
    {"premises_for_plan", "open_questions", "done_when", "claims"}
)
"""Keys that only a claim ledger has: seen outside one, they mean a ledger without its keyword."""

_EXACT_ONLY = frozenset({"question"})
_DECORATIONS = ("**", "`")
# The names are checked with str methods, not regular expressions: a hook process parses
# one message, and compiling a pattern costs more than all its matches there. A run of
# characters is all in a class when ``str.strip`` of the class leaves nothing.
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_KEY_FIRST = frozenset(_LETTERS + "_")
_KEY_CHARS = _LETTERS + "0123456789_.-"  # a key: [A-Za-z_][A-Za-z0-9_.-]*
_NAME_FIRST = frozenset(_LETTERS)
_NAME_CHARS = _LETTERS + "0123456789_-"  # a name: one or two [A-Za-z][A-Za-z0-9_-]* words
_NAME_RE = lazy_compile(r"[A-Za-z][A-Za-z0-9_-]*(?: [A-Za-z][A-Za-z0-9_-]*)?")
_KEYWORD_FIRST = frozenset("".join(w[0] + w[0].upper() for w in BLOCK_KEYWORDS))
_LOOSE_PREFIX = frozenset("#>{\"'*` \t")
_LOOSE_SUFFIX = frozenset("\"'*`")


@dataclass(frozen=True, slots=True)
class KeyAt:
    """A key found on a line: its name (decorations removed) and where its parts are."""

    name: str
    start: int  # index of the name's first character
    colon: int  # index of the ':'
    after: int  # index just past the colon and any closing decoration


def key_at(line: str, start: int) -> KeyAt | None:
    """The mapping key that ``line[start:]`` begins with, decorated or not, else None.

    A key is ``[A-Za-z_][A-Za-z0-9_.-]*`` followed by ``:`` and then a space, a tab
    or the end of the line (YAML's rule, so ``sha256:abc`` is not a key), optionally
    wrapped as ``**key**:``, ``**key:**`` or ```` `key`: ````.
    """
    return _key(line, start, is_key, need_space=True)


def key_colon(line: str, start: int) -> int | None:
    """Index of the colon when ``line[start:]`` begins with a mapping key (see :func:`key_at`)."""
    found = key_at(line, start)
    return None if found is None else found.colon


def keyword_at(line: str, start: int, *, quoted: bool = False) -> tuple[str, KeyAt] | None:
    """The block keyword that ``line[start:]`` begins with (``gate:``, ``**Claim_Ledger:**`` …).

    With ``quoted``, a quoted keyword (``"claim_ledger":``, the YAML object form) counts too.
    """
    if start >= len(line):
        return None
    first = line[start]
    if quoted and first in "\"'":
        found = _quoted_key(line, start)
    elif first not in _KEYWORD_FIRST and first not in "*`":
        return None
    else:
        found = _key(line, start, _is_name, need_space=False)
    if found is None:
        return None
    keyword = _normalise(found.name)
    if keyword not in BLOCK_KEYWORDS:
        return None
    if keyword in _EXACT_ONLY and (found.name != keyword or line[start] in "*`"):
        return None
    if keyword != "claim_ledger" and (" " in found.name or "-" in found.name):
        return None
    return keyword, found


def loose_key(line: str, start: int) -> tuple[str, str, int] | None:
    """A key-like name however it is wrapped (heading marks, quotes, braces, bold), normalised.

    Returns the lower-case name with ``_`` for spaces and hyphens, the name as
    written, and the index just past it and its closing quotes or decorations.
    Used to recognise what *looks like* a ledger and explain why it is not one.
    """
    p = start
    while p < len(line) and line[p] in _LOOSE_PREFIX:
        p += 1
    match = _NAME_RE.match(line, p)
    if match is None:
        return None
    q = match.end()
    while q < len(line) and line[q] in _LOOSE_SUFFIX:
        q += 1
    return _normalise(match.group()), match.group(), q


# --------------------------------------------------------------------------- internals


def _normalise(name: str) -> str:
    return name.lower().replace(" ", "_").replace("-", "_")


def is_key(name: str) -> bool:
    """Is ``name`` a whole mapping key, ``[A-Za-z_][A-Za-z0-9_.-]*``?"""
    return name[:1] in _KEY_FIRST and not name.strip(_KEY_CHARS)


def _is_name(name: str) -> bool:
    """Is ``name`` a whole keyword-like name: one or two ``[A-Za-z][A-Za-z0-9_-]*`` words?"""
    first, space, second = name.partition(" ")
    if not (first[:1] in _NAME_FIRST and not first.strip(_NAME_CHARS)):
        return False
    return not space or (second[:1] in _NAME_FIRST and not second.strip(_NAME_CHARS))


def _key(
    line: str, start: int, is_name: Callable[[str], bool], *, need_space: bool
) -> KeyAt | None:
    """A name (``is_name``) at ``start``, maybe decorated, and its colon.

    A name's characters never include ``:``, ``*`` or `````, so the name is what lies
    between the decoration and the first colon (less a closing decoration): exactly what
    the longest match of its pattern there would be, when a colon follows that match.
    """
    deco = ""
    p = start
    for candidate in _DECORATIONS:
        if line.startswith(candidate, p):
            deco = candidate
            p += len(candidate)
            break
    colon = line.find(":", p)
    if colon == -1:
        return None
    name = line[p:colon]
    closed = False
    if deco and name.endswith(deco):
        name = name[: -len(deco)]
        closed = True
    if not is_name(name):
        return None
    after = colon + 1
    if deco and not closed:
        if not line.startswith(deco, after):
            return None
        after += len(deco)
    if need_space and after < len(line) and line[after] not in " \t":
        return None
    return KeyAt(name, p, colon, after)


def _quoted_key(line: str, start: int) -> KeyAt | None:
    close = line.find(line[start], start + 1)
    if close == -1 or not _is_name(line[start + 1 : close]):
        return None
    colon = close + 1
    while colon < len(line) and line[colon] in " \t":
        colon += 1
    if colon >= len(line) or line[colon] != ":":
        return None
    return KeyAt(line[start + 1 : close], start + 1, colon, colon + 1)
