"""JavaScript string rules the reference server applies to what proxies and principals send.

The reference (Behalf) trims with ``String.prototype.trim`` and measures and cuts strings in
UTF-16 code units. Python's ``str.strip`` and ``len`` differ from both (``strip`` keeps
U+FEFF and removes U+001C-U+001F; ``len`` counts code points), so the few places that must
give the reference's bytes use these three functions.
"""

from __future__ import annotations

import re

__all__ = ["js_len", "js_prefix", "js_trim"]

# ECMAScript WhiteSpace (TAB, VT, FF, SP, NBSP, ZWNBSP and every Zs) and LineTerminator.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_TRIM = re.compile(f"^[{_JS_SPACE}]+|[{_JS_SPACE}]+$")


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript does it."""
    return _TRIM.sub("", text)


def js_len(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (a character above U+FFFF counts 2)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_prefix(text: str, units: int) -> str:
    """``text.slice(0, units)`` as JavaScript cuts it (in UTF-16 code units; a surrogate pair
    cut in two leaves a lone surrogate, as in the reference)."""
    raw = text.encode("utf-16-le", "surrogatepass")[: 2 * units]
    return raw.decode("utf-16-le", "surrogatepass")
