"""Keys for VXP signatures: ES256 (P-256) and EdDSA (Ed25519), as joserfc keys or JWK dicts.

joserfc parses and exports keys and computes RFC 7638 thumbprints (``Key.thumbprint()``);
signing and verifying run on ``cryptography`` directly, so that ES256 signatures can be
deterministic (RFC 6979) and verification has no per-call key parsing.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey

from ._codec import b64url_encode
from ._errors import VxpError

__all__ = ["KeyLike", "ResolvedKey", "key_thumbprint", "resolve_key", "verify_all"]

KeyLike = ECKey | OKPKey | Mapping[str, Any]
"""A signing or verification key: a joserfc ``ECKey`` (P-256) / ``OKPKey`` (Ed25519) or a JWK."""

_P256_ORDER_BYTES = 32
_ED25519_P = 2**255 - 19
# y of the eight points of small order (the 8-torsion): (0, 1), (0, -1), (±sqrt(-1), 0) and
# four points of order 8. A public key there verifies forged signatures (R = identity,
# S = 0) for a large share of messages, and OpenSSL does not refuse such keys.
_ED25519_Y8 = 0x7A03AC9277FDC74EC6CC392CFA53202A0F67100D760B3CBA4FD84D3D706A17C7
_ED25519_SMALL_ORDER_Y = frozenset({0, 1, _ED25519_P - 1, _ED25519_Y8, _ED25519_P - _ED25519_Y8})
_SIG_ES256 = ec.ECDSA(hashes.SHA256())
_SIG_ES256_DET = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)


@dataclass(frozen=True)
class ResolvedKey:
    """A parsed key: its algorithm, RFC 7638 thumbprint, public JWK and cryptography objects."""

    alg: str
    kid: str
    public_jwk: dict[str, Any]
    public: ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey
    private: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | None

    def sign(self, message: bytes, *, deterministic: bool = True) -> bytes:
        """Sign ``message``: raw ``r || s`` for ES256 (RFC 7518 §3.4), 64 bytes for EdDSA."""
        if self.private is None:
            raise VxpError("key_not_private", "signing needs a private key")
        if isinstance(self.private, ed25519.Ed25519PrivateKey):
            return self.private.sign(message)
        der = self.private.sign(message, _SIG_ES256_DET if deterministic else _SIG_ES256)
        r, s = decode_dss_signature(der)
        return r.to_bytes(_P256_ORDER_BYTES, "big") + s.to_bytes(_P256_ORDER_BYTES, "big")

    def verify(self, message: bytes, signature: bytes) -> bool:
        """Return whether ``signature`` over ``message`` verifies with this key."""
        if len(signature) != 64:
            return False
        try:
            # by the resolved alg (resolve_key sets it from the key type), as verify_all
            # does; a key whose type is not its alg's fails with a TypeError: refused
            if self.alg == "ES256":
                self.public.verify(_der(signature), message, _SIG_ES256)  # type: ignore[call-arg]
            elif self.alg == "EdDSA":
                self.public.verify(signature, message)  # type: ignore[call-arg]
            else:
                return False
        except (InvalidSignature, ValueError, TypeError):
            return False
        return True


def _der(signature: bytes) -> bytes:
    """The DER ``ECDSA-Sig-Value`` of a raw 64-byte ``r || s`` P-256 signature (RFC 7518
    §3.4): two minimal INTEGERs, each with a zero byte before a set high bit."""
    r = signature[:32].lstrip(b"\0") or b"\0"
    s = signature[32:].lstrip(b"\0") or b"\0"
    if r[0] & 0x80:
        r = b"\0" + r
    if s[0] & 0x80:
        s = b"\0" + s
    return b"".join((bytes((0x30, len(r) + len(s) + 4, 2, len(r))), r, bytes((2, len(s))), s))


def verify_all(checks: Sequence[tuple[ResolvedKey, bytes, bytes]]) -> bool:
    """Whether every ``(key, message, signature)`` verifies, as :meth:`ResolvedKey.verify`.

    The ES256 checks run back to back straight on ``cryptography``, with nothing else in
    between: far kinder to the CPU caches than one check between other work each.
    """
    ready = [
        (key.public, _der(signature), message)
        for key, message, signature in checks
        # (resolve_key gives ES256 to P-256 keys only: cheaper than an ABC isinstance)
        if key.alg == "ES256" and len(signature) == 64
    ]
    if len(ready) != len(checks):
        return all(key.verify(message, signature) for key, message, signature in checks)
    try:
        for public, der, message in ready:
            public.verify(der, message, _SIG_ES256)  # type: ignore[call-arg]
    except (InvalidSignature, ValueError, TypeError):  # TypeError: not an EC key after all
        return False
    return True


# Public JWK objects (as dicts) seen recently, by their key members: a verifier sees the
# same issuer and holder keys again and again. Only public keys, so nothing secret is kept.
_JWK_CACHE: dict[tuple[Any, ...], ResolvedKey] = {}
_ABSENT = object()
_JWK_CACHE_SIZE = 1024
_CACHE: dict[int, tuple[weakref.ref[ECKey | OKPKey], ResolvedKey]] = {}


def _import(key: KeyLike, where: str) -> ECKey | OKPKey:
    if isinstance(key, ECKey | OKPKey):
        return key
    if not isinstance(key, Mapping):
        raise VxpError("key_unsupported", f"{where} is neither a joserfc key nor a JWK object")
    kty = key.get("kty")
    try:
        if kty == "EC":
            return ECKey.import_key(dict(key))
        if kty == "OKP":
            return OKPKey.import_key(dict(key))
    except (ValueError, TypeError, KeyError, AttributeError, JoseError) as exc:
        raise VxpError("key_invalid", f"{where} is not a valid {kty} JWK") from exc
    raise VxpError("key_unsupported", f"{where} has key type {kty!r}; only EC and OKP are used")


def _check_ed25519_public(public: ed25519.Ed25519PublicKey, where: str) -> None:
    """Refuse a non-canonical or small-order Ed25519 public key (RFC 8032 §5.1.3)."""
    y = int.from_bytes(public.public_bytes_raw(), "little") & ((1 << 255) - 1)
    if y >= _ED25519_P:
        raise VxpError("key_invalid", f"{where} is not a canonical Ed25519 point encoding")
    if y in _ED25519_SMALL_ORDER_Y:
        raise VxpError("key_invalid", f"{where} is an Ed25519 point of small order")


def _known_key(key: object) -> ResolvedKey | None:
    """The :func:`resolve_key` result already made for this very key object, if any."""
    cached = _CACHE.get(id(key))
    if cached is not None and cached[0]() is key:
        return cached[1]
    return None


def resolve_key(key: KeyLike, where: str = "key") -> ResolvedKey:
    """Parse ``key`` once (cached per joserfc key object) into a :class:`ResolvedKey`.

    Only P-256 (``ES256``) and Ed25519 (``EdDSA``) keys are accepted; an Ed25519 key of
    small order or with a non-canonical encoding is refused (it would accept forgeries).
    """
    known = _known_key(key)
    if known is not None:
        return known
    public_id: tuple[Any, ...] | None = None
    if isinstance(key, Mapping) and key.keys() <= _MEMBERS:
        # Only a JWK of exactly the public members, each a short string, is remembered:
        # any other member must go through the import's own checks every time, and
        # nothing large is ever kept.
        # (an absent member is told apart from a null one, which the import refuses)
        members = tuple(key.get(m, _ABSENT) for m in ("kty", "crv", "x", "y"))
        if all(m is _ABSENT or (type(m) is str and len(m) <= 43) for m in members):
            public_id = members
            hit = _JWK_CACHE.get(public_id)
            if hit is not None:
                return hit
    jkey = _import(key, where)
    known = _known_key(jkey)
    if known is not None:
        return known
    try:
        if isinstance(jkey, ECKey):
            if jkey.curve_name != "P-256":
                raise VxpError("key_unsupported", f"{where} is on {jkey.curve_name}, not P-256")
            alg = "ES256"
            public: Any = jkey.public_key
            private: Any = jkey.private_key if jkey.is_private else None
            numbers = public.public_numbers()
            canonical = {
                "x": b64url_encode(numbers.x.to_bytes(32, "big")),
                "y": b64url_encode(numbers.y.to_bytes(32, "big")),
            }
        else:
            if jkey.curve_name != "Ed25519":
                raise VxpError("key_unsupported", f"{where} is {jkey.curve_name}, not Ed25519")
            alg = "EdDSA"
            public = jkey.public_key
            _check_ed25519_public(public, where)
            private = jkey.private_key if jkey.is_private else None
            canonical = {"x": b64url_encode(public.public_bytes_raw())}
        public_jwk = {k: v for k, v in jkey.as_dict(private=False).items() if k in _MEMBERS}
        if any(public_jwk.get(name) != text for name, text in canonical.items()) or (
            alg == "EdDSA" and "y" in public_jwk
        ):
            # RFC 7518 §6.2.1.2 and RFC 8037 §2: coordinates are exactly 32 bytes. Any other
            # spelling of the same key would get another RFC 7638 thumbprint, so one key
            # could pass for two (an issuer key posing as a user's, one key for two roles).
            raise VxpError(
                "key_invalid", f"{where} is not the canonical encoding of its key (RFC 7518)"
            )
        resolved = ResolvedKey(alg, jkey.thumbprint(), public_jwk, public, private)
    except VxpError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, JoseError) as exc:
        raise VxpError("key_invalid", f"{where} cannot be used as a key") from exc
    if isinstance(key, ECKey | OKPKey):
        ident = id(jkey)

        def forget(_ref: object) -> None:
            _CACHE.pop(ident, None)

        _CACHE[ident] = (weakref.ref(jkey, forget), resolved)
    if public_id is not None:
        if len(_JWK_CACHE) >= _JWK_CACHE_SIZE:
            _JWK_CACHE.clear()  # (popping the oldest races between threads; clear does not)
        _JWK_CACHE[public_id] = resolved
    return resolved


_MEMBERS = frozenset({"kty", "crv", "x", "y"})


def key_thumbprint(key: KeyLike) -> str:
    """Return the RFC 7638 SHA-256 thumbprint of ``key`` (the ``kid`` VXP uses)."""
    return resolve_key(key, "key").kid
