"""One person's Ed25519 key across Parley, Handoff and VXP, compared by raw public bytes.

Parley writes a public key ``ed25519:`` + base64url of its 32 raw bytes; Handoff and VXP
write it as a JWK ``{"kty": "OKP", "crv": "Ed25519", "x"}``. The profile never compares
the two spellings as text: both are reduced to the 32 raw bytes (docs/spec/bindings.md §2).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import parley
import vxp

from .errors import BindingError

__all__ = ["PersonKey", "jwk_of", "parley_key_of", "raw_key", "same_key"]


def _unsupported(message: str, reason: str) -> BindingError:
    return BindingError("binding_key_unsupported", message, reason=reason, link="principal")


def _own_key(message: str, reason: str) -> BindingError:
    """The caller's own key (a private key or seed it holds) is not usable: a usage error."""
    return BindingError("binding_argument_invalid", message, reason=reason, link="principal")


def raw_key(key: object) -> bytes:
    """Return the 32 raw public bytes of an Ed25519 key in either spelling.

    ``key`` is a Parley key text (``ed25519:…``) or a public JWK, as records carry it.
    Any other key is :class:`ppbind.BindingProtocolError` ``binding_key_unsupported`` (a
    P-256 or RSA JWK: ``not_ed25519``; a private member ``d``: ``private_member``; a bad
    encoding, a ``y`` member, a small-order or non-canonical point: ``bad_encoding``). JWK
    members other than ``kty``, ``crv`` and ``x`` (``kid``, ``alg``, ``use``) are ignored
    for identity.
    """
    if isinstance(key, Mapping):
        if key.get("kty") != "OKP" or key.get("crv") != "Ed25519":
            raise _unsupported(
                "the key is not an Ed25519 JWK (kty OKP, crv Ed25519)", "not_ed25519"
            )
        if "d" in key:
            raise _unsupported("a public key must not hold the private member d", "private_member")
        if "y" in key or not isinstance(key.get("x"), str):
            raise _unsupported("an Ed25519 JWK has a string x and no y", "bad_encoding")
        text = "ed25519:" + str(key["x"])
    elif isinstance(key, str):
        if not key.startswith("ed25519:"):
            raise _unsupported("the key is neither ed25519:… nor an Ed25519 JWK", "not_ed25519")
        text = key
    else:
        raise _unsupported("a key is an ed25519:… string or a JWK object", "not_ed25519")
    try:
        return parley.keys.parse_public_key(text)
    except parley.ParleyError as exc:
        raise _unsupported(f"the Ed25519 public key is not usable: {exc}", "bad_encoding") from exc


def parley_key_of(key: object) -> str:
    """Return the Parley spelling ``ed25519:…`` of an Ed25519 key given in either spelling."""
    return "ed25519:" + parley.wire.b64url_encode(raw_key(key))


def jwk_of(key: object) -> dict[str, str]:
    """Return the public JWK ``{"kty": "OKP", "crv": "Ed25519", "x"}`` of an Ed25519 key."""
    return {"kty": "OKP", "crv": "Ed25519", "x": parley.wire.b64url_encode(raw_key(key))}


def same_key(a: object, b: object) -> bool:
    """Whether two keys, in either spelling, are the same Ed25519 public key (raw bytes).

    A key that is not a usable Ed25519 key is never the same as anything.
    """
    try:
        return raw_key(a) == raw_key(b)
    except BindingError:
        return False


class PersonKey:
    """One person's Ed25519 key, usable in all three protocols that sign for her.

    It gives the :class:`parley.Key` that mints her grants, the private JWK that
    :func:`handoff.attach_proof` signs her settlements with (JWS ``alg`` ``Ed25519``), and
    :meth:`sign` for raw signatures (her VXP approval, JWS ``alg`` ``EdDSA``). The private
    half never appears in ``repr``. Keep it on the person's side, never with an agent.
    """

    __slots__ = ("_private", "parley")

    def __init__(self, private: Ed25519PrivateKey) -> None:
        if not isinstance(private, Ed25519PrivateKey):
            raise _own_key("a PersonKey wraps an Ed25519 private key", "key")
        self._private = private
        seed = private.private_bytes_raw()
        self.parley: parley.Key = parley.key_from_seed(seed)

    @classmethod
    def from_seed(cls, seed: bytes) -> PersonKey:
        """Return the key whose 32-byte Ed25519 seed is ``seed``.

        A seed that is not 32 bytes is :class:`ppbind.BindingUsageError`
        ``binding_argument_invalid`` (reason ``seed``): the key is the caller's own.
        """
        if not isinstance(seed, bytes) or len(seed) != 32:
            raise _own_key("an Ed25519 seed is exactly 32 bytes", "seed")
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def from_label(cls, label: str) -> PersonKey:
        """Return the key whose seed is SHA-256 of ``label`` (demos and vectors only)."""
        if not isinstance(label, str):
            raise _own_key("a key label is a string", "label")
        return cls.from_seed(hashlib.sha256(label.encode()).digest())

    @property
    def public(self) -> str:
        """Her public key, Parley spelling (``ed25519:…``)."""
        return self.parley.public

    @property
    def public_jwk(self) -> dict[str, str]:
        """Her public key as a JWK (no ``kid``/``alg``: identity is the raw bytes)."""
        return jwk_of(self.parley.public)

    def private_jwk(self) -> dict[str, Any]:
        """Her private JWK, for :func:`handoff.attach_proof` (never send it anywhere)."""
        d = base64.urlsafe_b64encode(self._private.private_bytes_raw()).rstrip(b"=").decode()
        return {**self.public_jwk, "d": d}

    @property
    def thumbprint(self) -> str:
        """The RFC 7638 thumbprint of her public JWK (what Handoff and VXP use as ``kid``)."""
        return vxp.key_thumbprint(self.public_jwk)

    def sign(self, data: bytes) -> bytes:
        """Return her raw Ed25519 signature over ``data``."""
        return self._private.sign(data)

    def __repr__(self) -> str:
        return f"PersonKey({self.public})"
