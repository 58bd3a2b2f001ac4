"""Canonical JSON and SHA-256 of PXP, byte-compatible with the reference server (Behalf).

The reference hashes ``JSON.stringify`` output of a value whose object keys are sorted, with
no whitespace and with members whose value is ``undefined`` left out. In Python there is no
``undefined``: a member that is absent is simply not in the mapping, and ``None`` is JSON
``null`` (kept, as JavaScript keeps ``null``).

Exactly what JavaScript produces:

* object keys sorted by UTF-16 code units (``Array.prototype.sort`` on strings);
* strings escaped as ``JSON.stringify`` does: ``"`` ``\\`` and the short escapes
  ``\\b \\f \\n \\r \\t``, other control characters as lowercase ``\\u00xx``, everything
  else (including non-ASCII) written as UTF-8;
* numbers in ECMAScript ``Number::toString`` form (``1.0`` is ``1``, ``1e21`` is ``1e+21``);
  integers outside the safe range ``±(2**53-1)``, NaN and infinities are refused because
  the reference cannot represent them faithfully;
* a lone surrogate is written as a lowercase ``\\udxxx`` escape, as ``JSON.stringify``
  (ES2019) writes it; a high and a low surrogate side by side are one character, as in
  JavaScript. :func:`sha256_hex` of text hashes a lone surrogate as U+FFFD, as Node does.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import PxpError

__all__ = ["ZERO_HASH", "canonical", "canonical_bytes", "sha256_hex"]

ZERO_HASH = "0" * 64
"""The ``prev`` of the first ledger entry: 64 zeros."""

_MAX_SAFE = 2**53 - 1
_ENCODE_STRING: Any = json.encoder.encode_basestring

# The fast path is the documented encoder (C-accelerated inside ``encode``). The positional
# ``json.encoder.c_make_encoder`` object it replaced saved about a third of the encoder call
# alone but under 20% of verifying a ledger (bench/bench_pxp_canonical.py), so no CPython
# internal is used (DESIGN.md, "Speed without hidden state").
_fast = json.JSONEncoder(
    ensure_ascii=False,
    sort_keys=True,
    separators=(",", ":"),
    allow_nan=False,
    check_circular=False,  # a cycle recurses until RecursionError: _slow then refuses it
).encode


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_ESCAPES["\t"] = "\\t"
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _as_utf16(text: str) -> str:
    """``text`` as JavaScript reads it: a high and a low surrogate next to each other are
    one astral character; any other surrogate stays alone."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def _string(text: str, where: str) -> str:
    text = _NEEDS_ESCAPE.sub(_escape_char, _as_utf16(text))
    # JSON.stringify (ES2019) writes a lone surrogate as a lowercase \udxxx escape
    return '"' + _SURROGATE.sub(_escape_char, text) + '"'


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _number(value: float, where: str) -> str:
    if not math.isfinite(value):
        raise PxpError("canonical_invalid", f"{where} is {value!r}, which JSON cannot carry")
    if value == 0:
        return "0"
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp_text) if exp_text else 0)
    # normalise: value = 0.<digits> * 10**point once leading zeros are gone
    point -= len(whole + frac) - len((whole + frac).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    sign = "-" if value < 0 else ""
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    exp = f"e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def _slow(value: Any, where: str, depth: int) -> str:
    if depth > 64:
        raise PxpError("canonical_invalid", f"{where} is nested more than 64 levels deep")
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value, where)
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE:
            raise PxpError(
                "canonical_invalid",
                f"{where} is an integer outside the safe range ±(2**53-1)",
            )
        return str(value)
    if isinstance(value, float):
        return _number(value, where)
    if isinstance(value, Mapping):
        parts = []
        for key in value:
            if not isinstance(key, str):
                raise PxpError("canonical_invalid", f"{where} has a non-string key {key!r}")
        for key in sorted(value, key=_utf16_key):
            parts.append(_string(key, where) + ":" + _slow(value[key], f"{where}.{key}", depth + 1))
        return "{" + ",".join(parts) + "}"
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return (
            "["
            + ",".join(_slow(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
            + "]"
        )
    raise PxpError("canonical_invalid", f"{where} is a {type(value).__name__}, not JSON")


def canonical_string(text: str) -> str:
    """Return the canonical JSON of one string (a fast path of :func:`canonical`)."""
    if type(text) is str and text.isascii():
        result: str = _ENCODE_STRING(text)
        return result
    return canonical(text)


def canonical(value: Any) -> str:
    """Return the canonical JSON text of ``value`` as the PXP reference server writes it.

    Raises :class:`PxpError` (``canonical_invalid``) for anything JSON cannot carry
    faithfully: non-string keys, unsafe integers, NaN, infinities, lone surrogates, or
    objects of other types.
    """
    try:
        text = _fast(value)
    except (TypeError, ValueError, RecursionError):
        return _slow(value, "$", 0)
    try:
        plain = text.isascii() and _plain_json(value)
    except RecursionError:  # _slow refuses what is nested more than 64 levels deep
        plain = False
    if plain:
        return text
    return _slow(value, "$", 0)


def _plain_json(value: Any) -> bool:
    """Whether the fast encoder's output is already canonical for ``value``.

    True when every key is a ``str`` and every number an ``int`` in the safe range (no
    ``float``): then the C encoder and ``JSON.stringify`` agree byte for byte on ASCII text.
    """
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            t = type(item)
            if t is str or t is bool or item is None:
                continue
            if t is int:
                if not -_MAX_SAFE <= item <= _MAX_SAFE:
                    return False
                continue
            if not _plain_json(item):
                return False
        return True
    if kind is list or kind is tuple:
        return all(_plain_json(item) for item in value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_MAX_SAFE <= value <= _MAX_SAFE)
    return False


def canonical_bytes(value: Any) -> bytes:
    """Return :func:`canonical` of ``value`` encoded as UTF-8."""
    return canonical(value).encode("utf-8")


def sha256_hex(data: str | bytes) -> str:
    """Return the lowercase hex SHA-256 of ``data`` (a ``str`` is hashed as UTF-8)."""
    if isinstance(data, str):
        # as Node's hash.update(string): UTF-8, a lone surrogate becomes U+FFFD
        data = _SURROGATE.sub("\ufffd", _as_utf16(data)).encode("utf-8")
    return hashlib.sha256(data).hexdigest()
