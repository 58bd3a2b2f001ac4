"""The one-pass SD-JWT path: disclosures decoded and a payload processed without detours.

The functions here accept exactly what the general RFC 9901 path in ``_sdjwt`` accepts and
produce exactly its values, and they answer ``None`` for anything else: a malformed
disclosure, a repeated digest, a reserved or colliding name, a misplaced placeholder, a
deep nesting. The caller then runs the general path, which names the fault. They never
raise for bad input and never say more than "this one is fine" or "ask the general path".

A disclosure travels here as the tuple ``(encoded, salt, name, value)``; the caller turns
the ones a payload uses into :class:`~vxp.Disclosure` objects.
"""

from __future__ import annotations

import binascii
import hashlib
import re
from collections.abc import Sequence
from typing import Any

from ._codec import _FAST, _PADDING, _SCAN, _TO_URL, _UNUSED_BITS, _VALUE, DIGEST_PATTERN

__all__ = ["Raw", "decode_disclosures", "digest_index", "process_claims"]

Raw = tuple[str, str, str | None, Any]
"""A decoded disclosure: its base64url text, salt, claim name (``None`` in an array), value."""

_DIGESTS = re.compile(f"{DIGEST_PATTERN}(?:,{DIGEST_PATTERN})*")
"""Comma-joined canonical SHA-256 digests. With the joined length checked too, no member
can hide a comma of its own."""
_RESERVED = frozenset({"_sd", "..."})
_DEPTH = 63
"""Deepest container the fast path walks; anything deeper goes to the general path, which
applies the real limit (``MAX_DEPTH``)."""


class _BailError(Exception):
    """Internal: the general path must decide this token."""


def decode_disclosures(encoded: Sequence[str]) -> dict[str, Raw] | None:
    """Decode every disclosure strictly and index it by its SHA-256 digest (base64url).

    ``None`` when one is not strict unpadded base64url of a UTF-8 JSON array of two or
    three items with string salt (and name), or when two disclosures are the same text.
    """
    decoded: list[Raw] = []
    hashes: list[bytes] = []
    sha256, a2b, scan = hashlib.sha256, binascii.a2b_base64, _SCAN
    try:
        for text in encoded:
            rest = len(text) & 3
            if rest and (rest == 1 or _VALUE[text[-1]] & _UNUSED_BITS[rest]):
                return None
            raw = text.encode()
            # '+', '/' and '=' become '!', which strict mode refuses like any other stranger
            json_text = a2b(raw.translate(_FAST) + _PADDING[rest], strict_mode=True).decode()
            array, end = scan(json_text, 0)
            if end != len(json_text) or type(array) is not list:
                return None
            size = len(array)
            if size == 3:
                salt, name, value = array
                if type(name) is not str:
                    return None
            elif size == 2:
                salt, value = array
                name = None
            else:
                return None
            if type(salt) is not str:
                return None
            hashes.append(sha256(raw).digest() + b"\0")
            decoded.append((text, salt, name, value))
    except Exception:  # any stranger (a character outside the alphabet, bad UTF-8, bad JSON)
        return None
    return _index(decoded, hashes)


def digest_index(disclosures: Sequence[Any]) -> dict[str, Raw] | None:
    """Index disclosures already parsed by the general path (``Disclosure`` objects) by
    digest, as :func:`decode_disclosures` does; ``None`` when one is repeated."""
    sha256 = hashlib.sha256
    decoded: list[Raw] = []
    hashes: list[bytes] = []
    for d in disclosures:
        hashes.append(sha256(d.encoded.encode()).digest() + b"\0")
        decoded.append((d.encoded, d.salt, d.name, d.value))
    return _index(decoded, hashes)


def _index(decoded: list[Raw], hashes: list[bytes]) -> dict[str, Raw] | None:
    # a zero byte after each 32-byte digest makes 33 bytes, 44 base64 characters: the
    # digest's own 43, then "A"; one encoding call serves every disclosure
    texts = binascii.b2a_base64(b"".join(hashes), newline=False).translate(_TO_URL).decode()
    by_digest = {texts[i * 44 : i * 44 + 43]: raw for i, raw in enumerate(decoded)}
    if len(by_digest) != len(decoded):
        return None  # the same disclosure twice
    return by_digest


def process_claims(
    payload: dict[str, Any], by_digest: dict[str, Raw], *, depth: int = 0
) -> tuple[dict[str, Any], list[Raw]] | None:
    """Replace digests by their disclosures (RFC 9901 §7.1 step 3) in a signed payload.

    ``payload`` is parsed JSON whose top-level ``_sd_alg``, if present, is ``"sha-256"``.
    Returns ``(claims, used)``: the processed claims (``_sd``, ``_sd_alg`` and decoy
    placeholders removed) and the disclosures in the order the general path meets them;
    ``None`` when the general path must decide (any fault, or a disclosure left unused).

    With ``depth`` > 0, ``payload`` is an object at that depth inside a payload (the caller
    knows that nothing outside it holds selective disclosure): it is processed as the
    general path processes it there.
    """
    walk = _Walk(by_digest)
    try:
        claims = walk.obj(payload, depth, depth == 0)
    except (_BailError, RecursionError):
        return None
    used, digests, decoys = walk.used, walk.digests, walk.decoys
    if len(used) != len(by_digest) or len(set(digests)) != len(digests):
        return None
    if decoys:
        joined = ",".join(decoys)
        if len(joined) != 44 * len(decoys) - 1 or _DIGESTS.fullmatch(joined) is None:
            return None
    return claims, used


class _Walk:
    """One walk over a payload: the disclosures met, and every digest (to check after)."""

    __slots__ = ("decoys", "digests", "get", "used")

    def __init__(self, by_digest: dict[str, Raw]) -> None:
        self.used: list[Raw] = []
        self.digests: list[str] = []  # every digest met, to prove each appears once
        self.decoys: list[str] = []  # digests of no disclosure, to prove they are well formed
        self.get = by_digest.get

    def meet(self, digest: object) -> Raw | None:
        """Note a digest met in the payload: its disclosure, or ``None`` for a decoy."""
        if type(digest) is not str:
            raise _BailError
        self.digests.append(digest)
        found = self.get(digest)
        if found is None:
            self.decoys.append(digest)
        else:
            self.used.append(found)
        return found

    def obj(self, node: dict[str, Any], depth: int, top: bool) -> dict[str, Any]:
        if "..." in node or depth > _DEPTH:
            raise _BailError
        out: dict[str, Any] = {}
        for name, value in node.items():
            kind = type(value)
            if kind is dict:
                out[name] = self.obj(value, depth + 1, False)
            elif kind is list:
                if name != "_sd":
                    out[name] = self.arr(value, depth + 1)
            else:
                out[name] = value
        if top:
            out.pop("_sd_alg", None)  # the caller has checked it is "sha-256"
        if "_sd" in node:
            sd = node["_sd"]
            if type(sd) is not list:
                raise _BailError
            for digest in sd:
                found = self.meet(digest)
                if found is None:
                    continue  # a decoy
                claim = found[2]
                if claim is None or claim in _RESERVED or claim in out:
                    raise _BailError
                if top and claim == "_sd_alg":
                    raise _BailError
                out[claim] = self.disclosed(found[3], depth + 1)
        return out

    def disclosed(self, value: Any, depth: int) -> Any:
        """A disclosed value, processed (it may hold digests of its own)."""
        kind = type(value)
        if kind is dict:
            return self.obj(value, depth, False)
        if kind is list:
            return self.arr(value, depth)
        return value

    def arr(self, node: list[Any], depth: int) -> list[Any]:
        if depth > _DEPTH:
            raise _BailError
        out: list[Any] = []
        for item in node:
            kind = type(item)
            if kind is dict:
                if "..." in item:
                    if len(item) != 1:
                        raise _BailError
                    found = self.meet(item["..."])
                    if found is None:
                        continue  # a decoy
                    if found[2] is not None:
                        raise _BailError
                    out.append(self.disclosed(found[3], depth + 1))
                else:
                    out.append(self.obj(item, depth + 1, False))
            elif kind is list:
                out.append(self.arr(item, depth + 1))
            else:
                out.append(item)
        return out
