"""Strict base64url without padding (RFC 4648 section 5), as SPEC.md section 6.1 uses it.

Python's :func:`base64.urlsafe_b64decode` accepts padding, silently drops characters outside
the alphabet and ignores non-zero trailing bits, so two different strings can decode to the
same bytes. A signature or key that can be re-spelled is a malleability bug, so decoding here
accepts exactly one spelling per byte string.
"""

from __future__ import annotations

import base64
import binascii
import re

from .errors import ParleyError

__all__ = ["b64url_decode", "b64url_encode"]

_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")
_LAST_FOR_2 = frozenset("AQgw")  # 2 final chars carry 8 data bits; the last 4 bits must be 0
_LAST_FOR_3 = frozenset("AEIMQUYcgkosw048")  # 3 final chars carry 16; the last 2 must be 0
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_PADDING = (b"", b"", b"==", b"=")


def b64url_encode(data: bytes) -> str:
    """Return ``data`` as base64url text without padding."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ParleyError(
            "bad_argument",
            f"base64url encodes bytes, got {type(data).__name__}",
            reason="bad_base64url",
        )
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode("ascii")


def b64url_decode(text: object, *, what: str = "value") -> bytes:
    """Decode canonical base64url ``text`` (no padding, no stray characters, zero trailing bits).

    Raises :class:`ParleyError` (``bad_frame``/``bad_base64url``) naming ``what`` otherwise.
    """
    if type(text) is str and "+" not in text and "/" not in text and "=" not in text:
        # The fast path: the strict standard decoder refuses every character outside its
        # alphabet (and, with '+', '/' and '=' excluded above, outside ours) and every
        # impossible length; the trailing bits are checked here. Anything it refuses is
        # refused again below, which names what is wrong.
        rest = len(text) % 4
        if (rest != 2 or text[-1] in _LAST_FOR_2) and (rest != 3 or text[-1] in _LAST_FOR_3):
            try:
                data = text.encode("ascii").translate(_TO_STANDARD) + _PADDING[rest]
                return binascii.a2b_base64(data, strict_mode=True)
            except (UnicodeEncodeError, binascii.Error):
                pass
    if not isinstance(text, str):
        raise ParleyError(
            "bad_frame",
            f"{what} must be a base64url string, got {type(text).__name__}",
            reason="bad_base64url",
        )
    if _ALPHABET.fullmatch(text) is None:
        raise ParleyError(
            "bad_frame",
            f"{what} holds a character outside the unpadded base64url alphabet",
            reason="bad_base64url",
        )
    rest = len(text) % 4
    if rest == 1:
        raise ParleyError(
            "bad_frame", f"{what} has an impossible base64url length", reason="bad_base64url"
        )
    if (rest == 2 and text[-1] not in _LAST_FOR_2) or (rest == 3 and text[-1] not in _LAST_FOR_3):
        raise ParleyError(
            "bad_frame",
            f"{what} has non-zero trailing bits, so it is not the canonical spelling",
            reason="bad_base64url",
        )
    # Every character was checked above, so the standard decoder sees only its own alphabet.
    return binascii.a2b_base64(text.encode("ascii").translate(_TO_STANDARD) + _PADDING[rest])
