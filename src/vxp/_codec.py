"""Strict encodings shared by the SD-JWT and Merkle modules: base64url, JSON, JCS, digests."""

from __future__ import annotations

import binascii
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import rfc8785

from .errors import VxpError

__all__ = [
    "b64url_decode",
    "b64url_encode",
    "canonical_json",
    "decode_canonical_hash",
    "decode_hash",
    "encode_hash",
    "parse_json",
    "plain_json",
]

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_VALUE = {c: i for i, c in enumerate(_ALPHABET)}
_UNUSED_BITS = {2: 0b1111, 3: 0b11}
_PADDING = {0: b"", 2: b"==", 3: b"="}
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_TO_URL = bytes.maketrans(b"+/", b"-_")
_FAST = bytes.maketrans(b"-_+/=", b"+/!!!")
_HASH_PREFIX = "sha-256:"
DIGEST_PATTERN = r"[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]"
"""The one canonical base64url text of a 32-byte digest: 43 characters, the last with
its two unused low bits clear (RFC 9901 digests as they are; VXP's behind ``sha-256:``)."""


def b64url_encode(data: bytes) -> str:
    """Return ``data`` as unpadded base64url (RFC 4648 §5, RFC 7515 §2).

    ``data`` is the caller's bytes: anything else is :class:`~vxp.VxpUsageError`
    ``argument_invalid``."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise VxpError("argument_invalid", "the data to encode is bytes")
    return binascii.b2a_base64(data, newline=False).translate(_TO_URL).rstrip(b"=").decode("ascii")


def b64url_decode(text: object, where: str, *, code: str = "malformed_base64url") -> bytes:
    """Decode strict unpadded base64url, or raise :class:`VxpError` ``code`` naming ``where``.

    Strict means: a string of the base64url alphabet only (no padding, whitespace or
    standard-alphabet characters), a length that is not 1 modulo 4, and zero unused
    trailing bits, so that every byte string has exactly one accepted encoding.
    """
    if type(text) is str:
        # Fast path: '+', '/' and '=' become '!', which strict mode refuses like any other
        # character outside the alphabet; every refusal is re-examined below for its message.
        rest = len(text) & 3
        if rest != 1:
            try:
                data = binascii.a2b_base64(
                    text.encode("ascii").translate(_FAST) + _PADDING[rest], strict_mode=True
                )
            except (binascii.Error, UnicodeEncodeError, ValueError):
                pass
            else:
                if not rest or not _VALUE[text[-1]] & _UNUSED_BITS[rest]:
                    return data
    if not isinstance(text, str):
        raise VxpError(code, f"{where} is not a base64url string")
    outside = f"{where} holds a character outside the unpadded base64url alphabet"
    if "+" in text or "/" in text or "=" in text:
        raise VxpError(code, outside)
    rest = len(text) % 4
    if rest == 1:
        raise VxpError(code, f"{where} has an impossible base64url length")
    try:
        # strict_mode refuses every byte outside the (translated) alphabet, whitespace included
        data = binascii.a2b_base64(
            text.encode("ascii").translate(_TO_STANDARD) + _PADDING[rest], strict_mode=True
        )
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise VxpError(code, outside) from exc
    if rest and _VALUE[text[-1]] & _UNUSED_BITS[rest]:
        raise VxpError(code, f"{where} has non-zero trailing bits in its last base64url character")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return out


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _ConstantError(Exception):
    pass


def _no_constant(name: str) -> Any:
    raise _ConstantError(name)


def _finite_float(text: str) -> float:
    # 1e400 would silently become inf: JSON (and JCS) numbers are finite doubles
    value = float(text)
    if not math.isfinite(value):
        raise _ConstantError(text)
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite_float
)


def parse_json(data: bytes, where: str, *, code: str = "malformed_json") -> Any:
    """Parse UTF-8 JSON strictly: no duplicate member names, no NaN/Infinity (nor a number
    too large for a double, such as ``1e400``), no BOM."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VxpError(code, f"{where} is not UTF-8") from exc
    if text.startswith("\ufeff"):
        raise VxpError(code, f"{where} starts with a byte order mark")
    try:
        return _DECODER.decode(text)
    except _DuplicateKeyError as exc:
        raise VxpError(code, f"{where} repeats the member name {exc.key!r}") from exc
    except _ConstantError as exc:
        raise VxpError(
            code, f"{where} uses NaN, Infinity or a number beyond the range of a double"
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise VxpError(code, f"{where} is not valid JSON") from exc


def canonical_json(value: Any, where: str = "value") -> bytes:
    """Return the RFC 8785 (JCS) bytes of ``value``; raise :class:`VxpError` if it has none."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError, RecursionError) as exc:
        raise VxpError("not_canonicalizable", f"{where} cannot be written as JCS JSON") from exc


def encode_hash(digest: bytes) -> str:
    """Return a SHA-256 digest in VXP's textual form ``sha-256:<base64url>``.

    ``digest`` is the caller's 32 bytes: anything else is :class:`~vxp.VxpUsageError`
    ``argument_invalid``."""
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise VxpError("argument_invalid", "a SHA-256 digest to encode is 32 bytes")
    return _HASH_PREFIX + b64url_encode(digest)


def decode_hash(text: object, where: str = "hash") -> bytes:
    """Parse ``sha-256:<base64url>`` into its 32 digest bytes (strictly)."""
    raw = decode_canonical_hash(text) if type(text) is str else None
    if raw is not None:
        return raw
    if not isinstance(text, str) or not text.startswith(_HASH_PREFIX):
        raise VxpError("malformed_hash", f"{where} is not a 'sha-256:' prefixed digest")
    raw = b64url_decode(text[len(_HASH_PREFIX) :], where, code="malformed_hash")
    if len(raw) != 32:
        raise VxpError("malformed_hash", f"{where} does not hold 32 bytes")
    return raw


def decode_canonical_hash(text: str) -> bytes | None:
    """:func:`decode_hash` of a string, or ``None`` where it would raise (and then names
    the fault)."""
    if len(text) != 51 or text[:8] != _HASH_PREFIX or _VALUE.get(text[-1], 1) & 3:
        return None  # the last character must have its two unused bits clear
    try:
        return binascii.a2b_base64(text[8:].encode().translate(_FAST) + b"=", strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def sha256(data: bytes) -> bytes:
    """Return SHA-256 of ``data``."""
    return hashlib.sha256(data).digest()


_PLAIN_STR = frozenset({str})


def plain_json(value: object, too_deep: VxpError, depth: int = 0) -> Any:
    """A copy of JSON-like input made of plain built-in values, read exactly once.

    A ``dict`` (or subclass) is read through ``dict.items``, another mapping through one
    ``items()`` call, a list through ``list.__iter__``; strings, integers and floats of a
    subclass become the plain value (their own methods are never called again), booleans
    and ``None`` stay. Anything else is kept as it is, for the caller's checks to refuse.
    So a mapping that answers two reads differently, a string whose ``split`` lies, or
    another thread changing the input meanwhile cannot make what is checked differ from
    what is used. Deeper than 32 levels raises ``too_deep``.
    """
    if depth > 32:
        raise VxpError(too_deep.code, too_deep.message, reason=too_deep.reason)
    kind = type(value)
    if kind is str or kind is bool or kind is int or kind is float or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):  # (bool cannot be subclassed: never reached)
        return value
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, dict):
        pairs = list(dict.items(value))
    elif isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list):
        items = list(list.__iter__(value))
        if set(map(type, items)) <= _PLAIN_STR:  # a list of plain strings (log proofs)
            return items
        return [plain_json(v, too_deep, depth + 1) for v in items]
    else:
        return value
    return {
        plain_json(k, too_deep, depth + 1): plain_json(v, too_deep, depth + 1) for k, v in pairs
    }
