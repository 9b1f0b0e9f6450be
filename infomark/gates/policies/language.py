"""Which natural language a text is written in: a small script and stop-word check.

Seed 002's G0 says "always think and respond in the user's input language"; a reply in
another language is evidence the process law is not running. The check runs inside the
host's hook process, so it is the standard library only and a few microseconds per message:

1. Code, paths, URLs and block syntax say nothing about the language and are removed first
   (fenced and inline code, ``claim_ledger`` / stamp lines, words with ``_ / . : = ( ) [ ]``).
2. The **script** of the letters decides for scripts one language family owns (Cyrillic,
   Greek, Arabic, Hebrew, Han, kana, Hangul, Devanagari, Thai): its label is the script.
3. Latin text is told apart by **stop words** (English, German, French, Spanish, Italian,
   Portuguese, Dutch): the language with the most hits wins if it has at least
   :data:`MIN_HITS` and 1.5 times the runner-up's.

Anything else (too short, a tie, mixed scripts) is ``None``: unsure, and the caller must not
act on it. docs/policies.md gives the measured accuracy (tests/gates/test_language.py).
"""

from __future__ import annotations

from infomark.kernel.lazyre import lazy_compile

__all__ = ["MIN_HITS", "MIN_LETTERS", "detect_language", "language_name"]

MIN_LETTERS = 12
"""Fewer letters than this (after removing code) is too little to judge."""
MIN_HITS = 3
"""A Latin-script language needs at least this many stop-word hits."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP: dict[str, frozenset[str]] = {
    "en": _words(
        "the and is are was were be been this that these those with for from not but have has "
        "had will would should can could it its of to in on at by an as or if then there "
        "which what when who you we they he she i my your our their do does did done"
    ),
    "de": _words(
        "der die das und ist sind war waren ein eine einen dem den des nicht mit für auf auch "
        "sich ich du wir ihr sie es zu von im wenn dann noch nur aber oder dass wie was hat "
        "haben wird werden kann bitte"
    ),
    "fr": _words(
        "le la les et est sont était un une des du de pas avec pour sur dans ce cette ces qui "
        "que je tu nous vous ils elle il ne mais ou si alors aussi très être avoir fait peut "
        "avant encore maintenant aussi"
    ),
    "es": _words(
        "el la los las y es son era un una unos del de no con para por en que se lo le su "
        "pero como más este esta estos yo tú nosotros ellos también muy ser hay puede está "
        "ahora todavía antes"
    ),
    "it": _words(
        "il lo la gli le e è sono era un una del della di non con per su in che si ma come "
        "più questo questa io tu noi voi loro anche molto essere avere ha può sta adesso "
        "ancora prima nel"
    ),
    "pt": _words(
        "o a os as e é são era um uma do da de não com para por em que se mas como mais este "
        "esta eu tu nós eles também muito ser ter tem pode está você agora ainda antes no na"
    ),
    "nl": _words(
        "de het een en is zijn was waren van niet met voor op ook zich ik jij wij jullie zij "
        "te in als dan nog maar of dat hoe wat heeft hebben wordt kan"
    ),
}

# a word English shares (``was``, ``is``, ``in``, ``no``) or a single letter (``a``, ``e``,
# ``o``: variables, list markers) says nothing about which Latin language a text is in
_SHARED = _STOP["en"] | {"no", "so"}  # built once, not once per word (~1 M instructions)
_STOP = {
    lang: frozenset(w for w in words if len(w) > 1 and (lang == "en" or w not in _SHARED))
    for lang, words in _STOP.items()
}

# (label, first code point, last code point): scripts one language family owns
_SCRIPTS: tuple[tuple[str, int, int], ...] = (
    ("cyrillic", 0x0400, 0x052F),
    ("greek", 0x0370, 0x03FF),
    ("hebrew", 0x0590, 0x05FF),
    ("arabic", 0x0600, 0x06FF),
    ("devanagari", 0x0900, 0x097F),
    ("thai", 0x0E00, 0x0E7F),
    ("hangul", 0xAC00, 0xD7AF),
    ("japanese", 0x3040, 0x30FF),
    ("han", 0x4E00, 0x9FFF),
)

_NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "cyrillic": "a Cyrillic-script language",
    "greek": "Greek",
    "hebrew": "Hebrew",
    "arabic": "an Arabic-script language",
    "devanagari": "a Devanagari-script language",
    "thai": "Thai",
    "hangul": "Korean",
    "japanese": "Japanese",
    "han": "Chinese",
}

_FENCE = lazy_compile(r"```.*?(?:```|\Z)", flags=16)  # re.DOTALL
_INLINE = lazy_compile(r"`[^`\n]*`")
_BLOCK_LINE = lazy_compile(
    r"(?m)^\s*(?:claim_ledger|claims|premises_for_plan|open_questions|oracle_stamp|"
    r"inference_stamp|source_stamp|divergence_event|gate|-\s*id|id|text|status|falsifier|"
    r"oracle|observe|expect)\s*:.*$"
)
_WORD = lazy_compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_CODEY = lazy_compile(r"\S*[_/\\.:=(){}\[\]<>#@$|]\S*")


def _letters_script(ch: str) -> str | None:
    cp = ord(ch)
    if cp < 0x0250:
        return "latin" if ch.isalpha() else None
    for label, lo, hi in _SCRIPTS:
        if lo <= cp <= hi:
            return label
    return None


def _prose(text: str) -> str:
    text = _FENCE.sub(" ", text)
    text = _INLINE.sub(" ", text)
    text = _BLOCK_LINE.sub(" ", text)
    return _CODEY.sub(" ", text)


def detect_language(text: str) -> str | None:
    """``"en"``, ``"de"`` … or a script label (``"cyrillic"``, ``"han"``); None when unsure."""
    prose = _prose(text[:20_000])
    counts: dict[str, int] = {}
    letters = 0
    for ch in prose:
        script = _letters_script(ch)
        if script is not None:
            counts[script] = counts.get(script, 0) + 1
            letters += 1
    if letters < MIN_LETTERS:
        return None
    if counts.get("japanese", 0) >= 0.1 * letters:  # kana with kanji: Japanese
        return "japanese"
    script, n = max(counts.items(), key=lambda kv: kv[1])
    if n < 0.6 * letters:
        return None  # mixed scripts: unsure
    if script != "latin":
        return script
    hits = dict.fromkeys(_STOP, 0)
    for word in _WORD.findall(prose.lower()):
        for lang, words in _STOP.items():
            if word in words:
                hits[lang] += 1
    ranked = sorted(hits.items(), key=lambda kv: -kv[1])
    (best, top), (_, second) = ranked[0], ranked[1]
    if top < MIN_HITS or 2 * top < 3 * second:  # at least 1.5 times the runner-up
        return None
    return best


def language_name(label: str) -> str:
    """A readable name for a label of :func:`detect_language`."""
    return _NAMES.get(label, label)
