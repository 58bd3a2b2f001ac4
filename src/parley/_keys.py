"""Ed25519 keys as Parley writes them (SPEC.md section 6.1).

A public key is ``"ed25519:" + b64url(raw 32 bytes)``; a signature is ``b64url(64 bytes)``.
:class:`Key` holds a private key and never shows it: its ``repr`` and every error name
only the public key, it cannot be pickled or copied into text, and the seed is read only
by the key stores of this package.
"""

from __future__ import annotations

import binascii
import re
from typing import NoReturn

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ._b64 import b64url_decode, b64url_encode
from .errors import ParleyError

__all__ = [
    "PUBLIC_KEY_PREFIX",
    "Key",
    "generate_key",
    "key_from_seed",
    "parse_public_key",
    "verify_signature",
]

PUBLIC_KEY_PREFIX = "ed25519:"
"""The prefix of every Parley public key."""


class Key:
    """An Ed25519 signing key; ``public`` is its Parley public key text.

    Build one with :meth:`generate` or :meth:`from_seed`. The private half never appears in
    ``repr``, ``str``, errors or pickles.
    """

    __slots__ = ("_private", "public")

    def __init__(self, private: Ed25519PrivateKey) -> None:
        if not isinstance(private, Ed25519PrivateKey):
            raise ParleyError(
                "bad_argument", "a Key wraps an Ed25519 private key", reason="bad_key"
            )
        self._private = private
        raw = private.public_key().public_bytes_raw()
        self.public: str = PUBLIC_KEY_PREFIX + b64url_encode(raw)

    @classmethod
    def generate(cls) -> Key:
        """Return a fresh random key (from the operating system's generator)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> Key:
        """Return the key whose 32-byte Ed25519 seed (RFC 8032 private key) is ``seed``."""
        if not isinstance(seed, (bytes, bytearray)) or len(seed) != 32:
            raise ParleyError(
                "bad_argument", "an Ed25519 seed must be exactly 32 bytes", reason="bad_key"
            )
        return cls(Ed25519PrivateKey.from_private_bytes(bytes(seed)))

    def sign(self, data: bytes) -> str:
        """Return ``b64url(Ed25519 signature of data)``."""
        return b64url_encode(self._private.sign(_own_bytes(data, "a Key signs", "bad_key")))

    def __repr__(self) -> str:
        return f"Key(public={self.public!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Key) and other.public == self.public

    def __hash__(self) -> int:
        return hash(self.public)

    def __reduce__(self) -> NoReturn:
        raise ParleyError(
            "bad_argument",
            "a Key cannot be pickled; store it with a key store instead",
            reason="private_key",
        )


def _seed_of(key: Key) -> bytes:
    """Return the 32-byte seed of ``key`` (for this package's key stores only)."""
    return key._private.private_bytes_raw()


def generate_key() -> Key:
    """Return a fresh random :class:`Key`."""
    return Key.generate()


def key_from_seed(seed: bytes) -> Key:
    """Return the :class:`Key` of a 32-byte seed (deterministic; for vectors and key stores)."""
    return Key.from_seed(seed)


_FIELD_PRIME = 2**255 - 19
_SMALL_ORDER_Y = frozenset(
    {
        0,  # order 4
        1,  # the identity (order 1)
        _FIELD_PRIME - 1,  # order 2
        2707385501144840649318225287225658788936804267575313519463743609750303402022,  # order 8
        55188659117513257062467267217118295137698188065244968500265048394206261417927,  # order 8
    }
)


def _weak_point(raw: bytes) -> str | None:
    """Why the 32-byte encoding ``raw`` is unusable as a public key, or ``None``.

    OpenSSL (and so :mod:`cryptography`) verifies with the unbatched equation and accepts
    small-order keys: under the identity key, ``R = 01 00..00, S = 0`` "signs" every message.
    A grant held by such a key could be used by anyone who sees it, so these keys (and
    non-canonical spellings of a coordinate, ``y >= p``) are refused everywhere.
    """
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    if y >= _FIELD_PRIME:
        return "the public key is not a canonical Ed25519 point encoding"
    if y in _SMALL_ORDER_Y:
        return "the public key is a small-order Ed25519 point, for which signatures can be forged"
    return None


def _public_key_object(text: str) -> Ed25519PublicKey:
    """Load a public key (parsed on every call: a caller's keys are not remembered)."""
    raw = b64url_decode(text[len(PUBLIC_KEY_PREFIX) :], what="a public key")
    if len(raw) != 32:
        raise ParleyError("invalid_params", "an Ed25519 public key is 32 bytes", reason="bad_key")
    weak = _weak_point(raw)
    if weak is not None:
        raise ParleyError("invalid_params", weak, reason="bad_key")
    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:  # pragma: no cover - every 32-byte string loads in OpenSSL
        raise ParleyError(
            "invalid_params", "the public key is not a valid Ed25519 key", reason="bad_key"
        ) from None


def parse_public_key(text: object) -> bytes:
    """Return the raw 32 bytes of a public key written ``ed25519:<b64url>``.

    Raises :class:`ParleyError` (``invalid_params``/``bad_key``) for anything else.
    """
    if not isinstance(text, str) or not text.startswith(PUBLIC_KEY_PREFIX):
        raise ParleyError(
            "invalid_params",
            "a public key must be a string starting with 'ed25519:'",
            reason="bad_key",
        )
    try:
        return _public_key_object(text).public_bytes_raw()
    except ParleyError as exc:
        raise ParleyError("invalid_params", exc.message, reason="bad_key") from None


def verify_signature(public: object, data: object, signature: object) -> bytes:
    """Check that ``signature`` (b64url) is ``public``'s Ed25519 signature of ``data``.

    Returns ``data`` as :class:`bytes` (now known to be signed by ``public``); success is
    that it returns at all, so never test the result for truth (empty data verifies to
    ``b""``). The key and
    the signature are protocol data: a malformed or weak key raises
    :class:`~parley.ParleyProtocolError` ``unauthorized``/``bad_key``; a malformed signature,
    or one that does not verify, ``unauthorized``/``bad_signature``. ``data`` is the caller's
    own: anything but bytes-like is :class:`~parley.ParleyUsageError` ``bad_argument``.
    """
    message = _own_bytes(data, "verify_signature checks", "bad_argument")
    if not isinstance(public, str) or not public.startswith(PUBLIC_KEY_PREFIX):
        raise ParleyError(
            "unauthorized", "the public key is not an 'ed25519:' key", reason="bad_key"
        )
    try:
        key = _public_key_object(public)
    except ParleyError as exc:
        raise ParleyError("unauthorized", exc.message, reason="bad_key") from None
    if not _key_signed(key, message, signature):
        raise ParleyError(
            "unauthorized",
            "the signature is not the key's Ed25519 signature of the data",
            reason="bad_signature",
        )
    return message


def _own_bytes(data: object, what: str, reason: str) -> bytes:
    """The caller's bytes-like ``data`` as :class:`bytes`, or the usage error ``bad_argument``."""
    if type(data) is bytes:
        return data
    try:
        if isinstance(data, (bytearray, memoryview)):
            return bytes(data)
    except ValueError:  # a released memoryview
        pass
    raise ParleyError("bad_argument", f"{what} bytes, got {type(data).__name__}", reason=reason)


def _signature_ok(public: object, data: object, signature: object) -> bool:
    """Whether ``signature`` is ``public``'s signature of ``data``, fail-closed.

    The internal check of grant blocks and proofs, which turn ``False`` into their own
    reason: a malformed key or signature gives ``False``, never an exception.
    """
    if not isinstance(public, str) or not public.startswith(PUBLIC_KEY_PREFIX):
        return False
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return False
    try:
        key = _public_key_object(public)
    except ParleyError:
        return False
    return _key_signed(key, data if type(data) is bytes else bytes(data), signature)


def _key_signed(key: Ed25519PublicKey, data: bytes, signature: object) -> bool:
    """Whether ``signature`` is the strict b64url spelling of ``key``'s signature of ``data``."""
    # The strict base64url spelling of 64 bytes: 86 characters, the last with 4 zero bits
    # (what b64url_decode accepts for this length, checked here in one match).
    if not isinstance(signature, str) or _SIGNATURE_TEXT.fullmatch(signature) is None:
        return False
    raw = binascii.a2b_base64(signature.encode("ascii").translate(_TO_STANDARD) + b"==")
    try:
        key.verify(raw, data)
    except InvalidSignature:
        return False
    return True


_SIGNATURE_TEXT = re.compile(r"[A-Za-z0-9_-]{85}[AQgw]")
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
