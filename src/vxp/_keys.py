"""Keys for VXP signatures: ES256 (P-256) and EdDSA (Ed25519), as joserfc keys or JWK dicts.

A JWK is read straight into ``cryptography`` keys (a joserfc key object is read through its
``cryptography`` keys); the RFC 7638 thumbprint hashes exactly the required members, as
joserfc's ``Key.thumbprint()`` does. Signing and verifying run on ``cryptography`` directly, so
that ES256 signatures can be deterministic (RFC 6979). Nothing is remembered between calls:
work that repeats (an issuer's keys) is done once in an object the caller holds
(:class:`IssuerKeys`, the ``Verifier``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey

from ._codec import b64url_decode, b64url_encode
from .errors import VxpError

__all__ = [
    "IssuerKeys",
    "KeyLike",
    "ResolvedKey",
    "all_valid",
    "first_invalid",
    "key_thumbprint",
    "resolve_key",
    "snapshot_jwk",
]


_P256_ORDER_BYTES = 32
_ED25519_P = 2**255 - 19
_P256_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
"""The P-256 field prime: a coordinate is an integer below it (SEC 1 §2.3.5)."""
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

    def signature_valid(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` over ``message`` verifies with this key: the private
        primitive every check of :mod:`vxp` runs, each of which returns its verified value
        or raises (a predicate, not a verification API)."""
        if len(signature) != 64:
            return False
        try:
            # by the resolved alg (resolve_key sets it from the key type), as all_valid
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


KeyLike = ECKey | OKPKey | ResolvedKey | Mapping[str, Any]
"""A signing or verification key: a joserfc ``ECKey`` (P-256) / ``OKPKey`` (Ed25519), a JWK,
or a key already resolved."""


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


def first_invalid(checks: Sequence[tuple[ResolvedKey, bytes, bytes]]) -> int | None:
    """The index of the first ``(key, message, signature)`` that does not verify (by
    :meth:`ResolvedKey.signature_valid`, the one rule), or ``None`` when every one does.

    The checks run back to back with nothing else in between, and the loop stops at the
    first failure: a forged signature costs no second pass.
    """
    for i, (key, message, signature) in enumerate(checks):
        if not key.signature_valid(message, signature):
            return i
    return None


def all_valid(checks: Sequence[tuple[ResolvedKey, bytes, bytes]]) -> bool:
    """Whether every ``(key, message, signature)`` verifies (see :func:`first_invalid`)."""
    return first_invalid(checks) is None


_MEMBERS = ("crv", "x", "y", "kty")  # the order joserfc exports them in (kept for vectors)
_P256 = ec.SECP256R1()


def _check_ed25519_public(public: ed25519.Ed25519PublicKey, where: str) -> None:
    """Refuse a non-canonical or small-order Ed25519 public key (RFC 8032 §5.1.3)."""
    y = int.from_bytes(public.public_bytes_raw(), "little") & ((1 << 255) - 1)
    if y >= _ED25519_P:
        raise VxpError("key_invalid", f"{where} is not a canonical Ed25519 point encoding")
    if y in _ED25519_SMALL_ORDER_Y:
        raise VxpError("key_invalid", f"{where} is an Ed25519 point of small order")


def snapshot_jwk(key: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Copy a JWK mapping exactly once into a plain dict of plain values.

    Everything derived from a JWK comes from this one copy: a mapping whose ``get``
    disagrees with its items, or another thread changing it in place, cannot make two
    reads of it describe two keys. A ``dict`` (or subclass) is read through ``dict.items``
    (never an overridden method), any other mapping through one ``items()`` call.
    """
    try:
        pairs = list(dict.items(key) if isinstance(key, dict) else key.items())
    except Exception as exc:  # a mapping that cannot even list its members
        raise VxpError("key_invalid", f"{where} cannot be read as a JWK object") from exc
    out: dict[str, Any] = {}
    for name, value in pairs:
        if type(name) is not str:
            raise VxpError("key_invalid", f"{where} has a member name that is not a string")
        out[name] = str.__str__(value) if isinstance(value, str) else value
    return out


def _coordinate(jwk: dict[str, Any], name: str, where: str) -> bytes:
    value = jwk.get(name)
    if not isinstance(value, str):
        raise VxpError("key_invalid", f"{where} has no {name} string")
    raw = b64url_decode(value, f"{where} member {name}", code="key_invalid")
    if len(raw) != 32:
        # RFC 7518 §6.2.1.2 and RFC 8037 §2: exactly 32 bytes. Any other spelling of the
        # same key would get another RFC 7638 thumbprint, so one key could pass for two.
        raise VxpError(
            "key_invalid", f"{where} is not the canonical encoding of its key (RFC 7518)"
        )
    return raw


def _from_jwk(jwk: dict[str, Any], where: str) -> ResolvedKey:
    """Resolve a snapshot JWK (public, or private with ``d``) straight on cryptography."""
    kty = jwk.get("kty")
    if kty not in ("EC", "OKP"):
        raise VxpError("key_unsupported", f"{where} has key type {kty!r}; only EC and OKP are used")
    crv = jwk.get("crv")
    try:
        if kty == "EC":
            if crv != "P-256":
                raise VxpError("key_unsupported", f"{where} is on {crv!r}, not P-256")
            x, y = _coordinate(jwk, "x", where), _coordinate(jwk, "y", where)
            x_int, y_int = int.from_bytes(x, "big"), int.from_bytes(y, "big")
            if x_int >= _P256_P or y_int >= _P256_P:
                # cryptography reduces a coordinate modulo p: x + p would be the same key
                # under another RFC 7638 thumbprint, so one key could pass for two
                raise VxpError(
                    "key_invalid", f"{where} has a coordinate that is not below the field prime"
                )
            public: Any = ec.EllipticCurvePublicNumbers(x_int, y_int, _P256).public_key()
            private: Any = None
            if "d" in jwk:
                d = _coordinate(jwk, "d", where)
                private = ec.derive_private_key(int.from_bytes(d, "big"), _P256)
                if private.public_key().public_numbers() != public.public_numbers():
                    raise VxpError("key_invalid", f"{where} has a d that is not its key's")
            canonical = {"crv": "P-256", "kty": "EC", "x": jwk["x"], "y": jwk["y"]}
            return _resolved("ES256", canonical, public, private)
        if crv != "Ed25519":
            raise VxpError("key_unsupported", f"{where} is {crv!r}, not Ed25519")
        if "y" in jwk:
            raise VxpError(
                "key_invalid", f"{where} is not the canonical encoding of its key (RFC 8037)"
            )
        public = ed25519.Ed25519PublicKey.from_public_bytes(_coordinate(jwk, "x", where))
        _check_ed25519_public(public, where)
        private = None
        if "d" in jwk:
            private = ed25519.Ed25519PrivateKey.from_private_bytes(_coordinate(jwk, "d", where))
            if private.public_key().public_bytes_raw() != public.public_bytes_raw():
                raise VxpError("key_invalid", f"{where} has a d that is not its key's")
        canonical = {"crv": "Ed25519", "kty": "OKP", "x": jwk["x"]}
        return _resolved("EdDSA", canonical, public, private)
    except VxpError:
        raise
    except (ValueError, TypeError, OverflowError) as exc:  # not a point of the curve, ...
        raise VxpError("key_invalid", f"{where} is not a valid {kty} JWK") from exc


def _resolved(alg: str, canonical: dict[str, str], public: Any, private: Any) -> ResolvedKey:
    """The key with its RFC 7638 thumbprint: SHA-256 of the JCS of exactly the required
    members (``canonical`` is already sorted and holds strings of the base64url alphabet
    only, so this is the JCS text)."""
    text = "{" + ",".join(f'"{k}":"{v}"' for k, v in canonical.items()) + "}"
    kid = b64url_encode(hashlib.sha256(text.encode("ascii")).digest())
    public_jwk = {k: canonical[k] for k in _MEMBERS if k in canonical}
    return ResolvedKey(alg, kid, public_jwk, public, private)


def _from_object(key: ECKey | OKPKey, where: str) -> ResolvedKey:
    """Resolve a joserfc key object from its cryptography keys (never its dict form)."""
    raw_private: Any = key.private_key if key.is_private else None
    raw_public: Any = key.public_key
    if isinstance(raw_public, ec.EllipticCurvePublicKey):
        if not isinstance(raw_public.curve, ec.SECP256R1):
            raise VxpError("key_unsupported", f"{where} is on {raw_public.curve.name}, not P-256")
        numbers = raw_public.public_numbers()
        canonical = {
            "crv": "P-256",
            "kty": "EC",
            "x": b64url_encode(numbers.x.to_bytes(32, "big")),
            "y": b64url_encode(numbers.y.to_bytes(32, "big")),
        }
        return _resolved("ES256", canonical, raw_public, raw_private)
    if isinstance(raw_public, ed25519.Ed25519PublicKey):
        _check_ed25519_public(raw_public, where)
        canonical = {
            "crv": "Ed25519",
            "kty": "OKP",
            "x": b64url_encode(raw_public.public_bytes_raw()),
        }
        return _resolved("EdDSA", canonical, raw_public, raw_private)
    raise VxpError("key_unsupported", f"{where} is {key.curve_name}, neither P-256 nor Ed25519")


def resolve_key(key: KeyLike, where: str = "key") -> ResolvedKey:
    """Parse ``key`` into a :class:`ResolvedKey` (nothing is remembered between calls).

    Only P-256 (``ES256``) and Ed25519 (``EdDSA``) keys are accepted; an Ed25519 key of
    small order or with a non-canonical encoding is refused (it would accept forgeries).
    A JWK mapping is copied once (:func:`snapshot_jwk`) and read from that copy only.
    """
    if isinstance(key, ResolvedKey):
        return key
    if isinstance(key, ECKey | OKPKey):
        try:
            return _from_object(key, where)
        except VxpError:
            raise
        except (ValueError, TypeError, AttributeError, JoseError) as exc:
            raise VxpError("key_invalid", f"{where} cannot be used as a key") from exc
    if not isinstance(key, Mapping):
        raise VxpError("key_unsupported", f"{where} is neither a joserfc key nor a JWK object")
    return _from_jwk(snapshot_jwk(key, where), where)


class IssuerKeys:
    """An issuer's SD-JWT verification keys, resolved once, held by the caller.

    Built from one key or a list of keys (joserfc keys or JWK mappings, each copied once
    into a snapshot); read-only afterwards. Pass it to :func:`vxp.verify_sd_jwt` to skip
    resolving the same keys on every call.
    """

    __slots__ = ("_by_kid", "_keys")
    _keys: tuple[ResolvedKey, ...]
    _by_kid: Mapping[str, ResolvedKey]

    def __init__(self, keys: KeyLike | Iterable[KeyLike] | IssuerKeys) -> None:
        if isinstance(keys, IssuerKeys):
            resolved: tuple[ResolvedKey, ...] = keys._keys
        elif isinstance(keys, Mapping | ECKey | OKPKey | ResolvedKey) or not isinstance(
            keys, Iterable
        ):
            resolved = (resolve_key(cast("KeyLike", keys), "issuer key"),)
        else:
            resolved = tuple(resolve_key(k, f"issuer key {i}") for i, k in enumerate(keys))
        by_kid: dict[str, ResolvedKey] = {}
        for key in resolved:
            by_kid.setdefault(key.kid, key)
        self._keys = resolved
        self._by_kid = MappingProxyType(by_kid)

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "_by_kid"):
            raise AttributeError("IssuerKeys is read-only")
        object.__setattr__(self, name, value)

    @property
    def kids(self) -> tuple[str, ...]:
        """The RFC 7638 thumbprints of the keys, in the order given."""
        return tuple(k.kid for k in self._keys)

    def pick(self, kid: object, alg: str) -> ResolvedKey:
        """The key a JWS header names by ``kid`` (or the only key when it names none), for
        ``alg``; raise ``issuer_key_unknown``, ``issuer_key_ambiguous`` or ``alg_key_mismatch``."""
        if kid is None:
            if len(self._keys) != 1:
                raise VxpError(
                    "issuer_key_ambiguous", "the JWT names no kid and several keys are trusted"
                )
            key = self._keys[0]
        else:
            found = self._by_kid.get(kid) if isinstance(kid, str) else None
            if found is None:
                raise VxpError("issuer_key_unknown", f"no trusted issuer key has kid {kid!r}")
            key = found
        if key.alg != alg:
            raise VxpError("alg_key_mismatch", f"alg {alg} does not fit the issuer's {key.alg} key")
        return key


def key_thumbprint(key: KeyLike) -> str:
    """Return the RFC 7638 SHA-256 thumbprint of ``key`` (the ``kid`` VXP uses)."""
    return resolve_key(key, "key").kid
