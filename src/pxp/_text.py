"""The one text normaliser every matching rule of the room and the brief uses.

A must_never clause, a card clause a stated claim cites, an assumption a later claim
repeats and a clause a brief says a term rests on are all compared through
:func:`normalize`, so a rule cannot be bypassed by writing the same words differently
(full-width letters, a zero-width space, a soft hyphen, a bidi control, a hyphen or an
underscore for a space, a Cyrillic letter that looks Latin).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["compact", "contains_words", "hidden_characters", "normalize"]

# look-alike letters of other scripts mapped to the Latin letter they imitate (after
# NFKC and casefold); a small fixed table of the usual homoglyphs, ours
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "һ": "h",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "к": "k",
        "ӏ": "l",
        "м": "m",
        "о": "o",
        "р": "p",
        "с": "c",
        "ѕ": "s",
        "т": "t",
        "у": "y",
        "х": "x",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ɡ": "g",
        # Greek
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        # dotless i, long s
        "ı": "i",
        "ſ": "s",
    }
)
_SPACE = re.compile(r"\s+")


def _category_char(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat == "Cf" or cat == "Mn":
        # format characters (ZWSP, soft hyphen, bidi controls) and combining marks vanish
        return ""
    if cat[0] in ("P", "S", "Z", "C"):
        # punctuation, symbols, separators, controls: a word boundary
        return " "
    return ch


def normalize(text: str) -> str:
    """Return ``text`` as the matching rules compare it.

    NFKC, casefold, NFKD so accents split off, then: format characters (category Cf)
    and combining marks removed, look-alike Cyrillic/Greek letters mapped to Latin,
    punctuation, symbols, hyphens, underscores, separators and controls turned into a
    space, runs of space collapsed and the ends trimmed. Two texts that read the same
    normalise the same; the result holds only letters, digits and single spaces.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = unicodedata.normalize("NFKD", folded)
    out = "".join(_category_char(ch) for ch in folded)
    out = out.translate(_CONFUSABLES).replace("_", " ")
    return _SPACE.sub(" ", out).strip()


def compact(text: str) -> str:
    """:func:`normalize` with every space removed ("s h i p abroad" -> "shipabroad")."""
    return normalize(text).replace(" ", "")


def contains_words(outer: str, inner: str) -> bool:
    """Whether normalised ``inner`` occurs in normalised ``outer`` as whole words."""
    a, b = normalize(outer), normalize(inner)
    if not a or not b:
        return False
    return f" {b} " in f" {a} "


def hidden_characters(text: str) -> bool:
    """Whether ``text`` holds a format or control character (ZWSP, soft hyphen, bidi
    controls, NUL ...), which reads as nothing on a page; tab and newline do not count."""
    return any(unicodedata.category(ch) in ("Cf", "Cc") and ch not in "\t\n\r" for ch in text)
