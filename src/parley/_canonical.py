"""Canonical JSON of SPEC.md section 10, the byte form that Parley hashes and signs.

Objects have their keys sorted by code point and no whitespace; strings escape only ``"``,
``\\``, the named controls and the other C0 controls (lowercase ``\\u00XX``), everything else
is literal UTF-8; numbers are safe integers only. For the values it accepts this equals RFC
8785 (JCS), whose key order (UTF-16 code units) agrees with code point order for the ASCII
keys the specification recommends and differs only for keys outside the Basic Multilingual
Plane; **Ours:** we sort by code point as section 10 says.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ._b64 import b64url_encode
from .errors import ParleyError

__all__ = ["MAX_SAFE_INTEGER", "canonical", "canonical_bytes", "proposal_hash", "sha256_b64url"]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer allowed in hashed or signed data (and its negation the smallest)."""

_NAMED = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = {chr(c): _NAMED.get(chr(c), f"\\u{c:04x}") for c in range(0x20)} | _NAMED
_MAX_DEPTH = 256


def _fail(message: str, reason: str) -> ParleyError:
    return ParleyError("invalid_params", message, reason=reason)


def _string(text: str, where: str) -> str:
    out = []
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            raise _fail(f"{where} holds a lone surrogate, which has no UTF-8 form", "not_canonical")
        out.append(_ESCAPES.get(char, char))
    return '"' + "".join(out) + '"'


def _encode(value: Any, where: str, depth: int, out: list[str]) -> None:
    if depth > _MAX_DEPTH:
        raise _fail(f"{where} nests deeper than {_MAX_DEPTH} levels", "not_canonical")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif type(value) is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise _fail(f"{where} is an integer beyond 2^53-1 in magnitude", "unsafe_integer")
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_string(value, where))
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise _fail(f"{where} has a non-string key {key!r}", "not_canonical")
        out.append("{")
        for index, key in enumerate(sorted(value)):
            if index:
                out.append(",")
            out.append(_string(key, f"{where} key"))
            out.append(":")
            _encode(value[key], f"{where}.{key}", depth + 1, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, f"{where}[{index}]", depth + 1, out)
        out.append("]")
    elif isinstance(value, float):
        raise _fail(
            f"{where} is a non-integer number ({value!r}); hashed and signed data allows "
            "only safe integers",
            "not_integer",
        )
    else:
        raise _fail(f"{where} is a {type(value).__name__}, which is not JSON", "not_canonical")


_SURROGATE = re.compile("[\ud800-\udfff]")
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is plain canonical-safe JSON (fast check; details come from _encode)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER  # type: ignore[no-any-return]
    if depth >= _MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not _plain(item, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:  # noqa: SIM110 - a plain loop is faster on this hot path
            if not _plain(item, depth + 1):
                return False
        return True
    return False


def canonical(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (SPEC.md section 10).

    Raises :class:`ParleyError` (``invalid_params``) for floats, NaN, integers beyond
    2^53-1, lone surrogates, non-string keys and anything that is not JSON.

    >>> canonical({"b": 1, "a": [True, None, "x"]})
    '{"a":[true,null,"x"],"b":1}'
    """
    if _plain(value):
        # Python's encoder with sorted keys writes exactly section 10 for plain values:
        # code point key order, the same escapes, literal UTF-8. Lone surrogates pass
        # through it, so they are looked for in the result.
        text = _ENCODER.encode(value)
        if _SURROGATE.search(text) is None:
            return text
    out: list[str] = []
    _encode(value, "$", 0, out)  # raises with the place of the problem
    return "".join(out)


def canonical_bytes(value: Any) -> bytes:
    """Return ``utf8(canonical(value))``, the bytes that are hashed and signed."""
    return canonical(value).encode("utf-8")


def sha256_b64url(data: bytes) -> str:
    """Return ``b64url(sha256(data))``."""
    return b64url_encode(hashlib.sha256(data).digest())


def proposal_hash(proposal: Any) -> str:
    """Return a proposal's hash (SPEC.md section 5.1).

    ``b64url(sha256(canonical(proposal without "hash" and "data")))``: everything a human is
    shown is bound; ``data`` is not (it may hold floats). Raises :class:`ParleyError`
    (``invalid_params``) for a proposal that is not an object or whose hashed fields hold
    anything but canonical JSON.
    """
    if not isinstance(proposal, dict):
        raise ParleyError(
            "invalid_params",
            f"a proposal must be a JSON object, got {type(proposal).__name__}",
            reason="bad_proposal",
        )
    hashed = {k: v for k, v in proposal.items() if k not in ("hash", "data")}
    return sha256_b64url(canonical_bytes(hashed))
