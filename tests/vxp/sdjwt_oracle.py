"""A plain RFC 9901 §7.1 reference for the tests: what an SD-JWT's processed claims are.

Written independently of ``vxp._sdjwt`` (stdlib ``base64`` and ``json`` only) and as
plainly as possible, to hold the package's single walker to: :func:`claims_of` answers
``None`` for any token the RFC refuses and the processed claims otherwise. It checks
neither the header nor the signature (the tests sign what they build) and never names a
fault; the package's own tests hold its precise codes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

MAX_DEPTH = 64
_RESERVED = ("_sd", "...")


class _RefusedError(Exception):
    pass


def _b64(text: str) -> bytes:
    if not text or any(c not in _ALPHABET for c in text) or len(text) % 4 == 1:
        raise _RefusedError
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if base64.urlsafe_b64encode(raw).decode().rstrip("=") != text:
        raise _RefusedError  # not the one canonical spelling (unused bits set)
    return raw


_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _RefusedError  # a repeated member name
    return out


def _constant(_: str) -> Any:
    raise _RefusedError  # NaN, Infinity


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _RefusedError
    return value


def _json(raw: bytes) -> Any:
    text = raw.decode("utf-8")
    if text.startswith("\ufeff"):
        raise _RefusedError
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)


def _is_digest(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 43:
        return False
    try:
        return len(_b64(value)) == 32
    except (_RefusedError, ValueError):
        return False


class _Walk:
    def __init__(self, disclosures: dict[str, list[Any]]) -> None:
        self.disclosures = disclosures
        self.seen: set[str] = set()
        self.used: set[str] = set()

    def digest(self, value: object) -> list[Any] | None:
        if not _is_digest(value):
            raise _RefusedError
        assert isinstance(value, str)
        if value in self.seen:
            raise _RefusedError
        self.seen.add(value)
        found = self.disclosures.get(value)
        if found is not None:
            self.used.add(value)
        return found

    def value(self, node: Any, depth: int, top: bool = False, disclosed: bool = False) -> Any:
        # a container (or a disclosed value) deeper than the limit is refused
        if depth > MAX_DEPTH and (disclosed or isinstance(node, dict | list)):
            raise _RefusedError
        if isinstance(node, dict):
            return self.obj(node, depth, top)
        if isinstance(node, list):
            return self.arr(node, depth)
        return node

    def obj(self, node: dict[str, Any], depth: int, top: bool) -> dict[str, Any]:
        if "..." in node or (not top and "_sd_alg" in node):
            raise _RefusedError
        out = {
            k: self.value(v, depth + 1)
            for k, v in node.items()
            if k != "_sd" and not (top and k == "_sd_alg")
        }
        sd = node.get("_sd", [])
        if not isinstance(sd, list):
            raise _RefusedError
        for digest in sd:
            found = self.digest(digest)
            if found is None:
                continue  # a decoy
            if len(found) != 3:
                raise _RefusedError
            name = found[1]
            if name in _RESERVED or name == "_sd_alg" or name in out:
                raise _RefusedError
            out[name] = self.value(found[2], depth + 1, disclosed=True)
        return out

    def arr(self, node: list[Any], depth: int) -> list[Any]:
        out = []
        for item in node:
            if isinstance(item, dict) and "..." in item:
                if len(item) != 1:
                    raise _RefusedError
                found = self.digest(item["..."])
                if found is None:
                    continue
                if len(found) != 2:
                    raise _RefusedError
                out.append(self.value(found[1], depth + 1, disclosed=True))
            else:
                out.append(self.value(item, depth + 1))
        return out


def claims_of(token: str, now: float) -> dict[str, Any] | None:
    """The processed claims of a compact SD-JWT without key binding (signature assumed
    valid), with ``exp``/``nbf``/``iat`` checked at ``now``; ``None`` if RFC 9901 refuses it."""
    try:
        return _claims_of(token, now)
    except (_RefusedError, ValueError, UnicodeDecodeError, RecursionError):
        return None


def _claims_of(token: str, now: float) -> dict[str, Any]:
    if not token.isascii() or not token.endswith("~"):
        raise _RefusedError
    jws, *encoded, _ = token.split("~")
    segments = jws.split(".")
    if len(segments) != 3:
        raise _RefusedError
    payload = _json(_b64(segments[1]))
    if not isinstance(payload, dict):
        raise _RefusedError
    if payload.get("_sd_alg", "sha-256") != "sha-256":
        raise _RefusedError
    disclosures: dict[str, list[Any]] = {}
    for text in encoded:
        array = _json(_b64(text))
        if not isinstance(array, list) or len(array) not in (2, 3):
            raise _RefusedError
        if not isinstance(array[0], str) or (len(array) == 3 and not isinstance(array[1], str)):
            raise _RefusedError
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        key = digest.decode().rstrip("=")
        if key in disclosures:
            raise _RefusedError
        disclosures[key] = array
    walk = _Walk(disclosures)
    claims = walk.value(payload, 0, top=True)
    if walk.used != set(disclosures):
        raise _RefusedError
    for name in ("exp", "nbf", "iat"):
        value = claims.get(name)
        if name in claims and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise _RefusedError
    if "exp" in claims and now >= claims["exp"]:
        raise _RefusedError
    if "nbf" in claims and now < claims["nbf"]:
        raise _RefusedError
    if "iat" in claims and now < claims["iat"]:
        raise _RefusedError
    assert isinstance(claims, dict)
    return claims
