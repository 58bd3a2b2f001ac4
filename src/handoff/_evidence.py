"""Evidence of a person's decision: the ``presented`` digest (§9) and ``evidence.proof``.

``evidence.presented`` is ``sha-256:`` + lowercase hex of the JCS form of a *presentation*:
the item's identity, the terms at ``terms_rev`` and, for ``confirmed``, the proposal that was
confirmed (see docs/spec/handoff-extensions.md §9). Anyone holding the need record at that
revision recomputes it.

``evidence.proof`` is a detached JWS (RFC 7515 Appendix F, compact form ``header..signature``)
over the JCS form of the settlement with ``evidence.proof`` removed, signed with one of the
principal's own keys (``Ed25519`` per RFC 9864, or ``ES256``). The verifier finds the key in
the principal side's JWKS by its RFC 7638 thumbprint, which is the header's ``kid``; the
header may carry nothing else but ``alg`` and ``typ``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwa import ESAlgorithm
from joserfc.jwk import ECKey, OKPKey, import_key
from joserfc.jws import JWSRegistry

from ._canonical import canonical, signing_input
from .errors import HandoffError

__all__ = [
    "PROOF_ALGORITHMS",
    "PROOF_TYP",
    "KeySet",
    "ProofCheck",
    "attach_proof",
    "presentation",
    "public_jwks",
    "sign_proof",
    "verify_proof",
]

PROOF_ALGORITHMS: tuple[str, ...] = ("Ed25519", "ES256")
"""The JWS ``alg`` values a proof may use (RFC 9864 ``Ed25519``; RFC 7518 ``ES256``)."""

PROOF_TYP = "ph-proof+jws"
"""The ``typ`` header value of every ``evidence.proof``."""

_HEADER_MEMBERS = frozenset({"alg", "kid", "typ"})
_KTY_FOR_ALG = {"Ed25519": ("OKP", "Ed25519"), "ES256": ("EC", "P-256")}
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "k", "oth"})


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise HandoffError("evidence", f"{name} must be a non-empty string", reason="presentation")
    return value


def presentation(
    *,
    ext: str,
    project: str,
    key: str,
    terms_rev: int,
    terms: Mapping[str, Any],
    proposal: str | None = None,
) -> dict[str, Any]:
    """Return the presentation object whose JCS bytes ``evidence.presented`` digests.

    It names the item (``ext``, ``project``, ``key``) so that a digest cannot be moved to
    another item with equal terms, the revision and the terms shown at that revision, and,
    for a ``confirmed`` settlement, the ``proposal`` that was put to the person.
    """
    if isinstance(terms_rev, bool) or not isinstance(terms_rev, int) or terms_rev < 1:
        raise HandoffError(
            "evidence", "terms_rev of a presentation must be an integer >= 1", reason="presentation"
        )
    if not isinstance(terms, Mapping):
        raise HandoffError(
            "evidence", "the terms of a presentation must be an object", reason="presentation"
        )
    shown: dict[str, Any] = {
        "ph": "0.3",
        "ext": _text(ext, "ext"),
        "project": _text(project, "project"),
        "key": _text(key, "key"),
        "terms_rev": terms_rev,
        "terms": dict(terms),
    }
    if proposal is not None:
        shown["proposal"] = _text(proposal, "proposal")
    return shown


def _payload(record: Mapping[str, Any]) -> bytes:
    if not isinstance(record, Mapping):
        raise HandoffError("proof", "the signed record must be an object", reason="record")
    return signing_input(record)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text or any(c not in _B64_ALPHABET for c in text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    decoded = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(decoded) != text:
        raise ValueError("not canonical base64url")
    return decoded


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


class _DeterministicES256(ESAlgorithm):
    """ES256 whose signatures are deterministic (RFC 6979), so vectors are byte-stable."""

    def sign(self, msg: bytes, key: ECKey) -> bytes:
        op_key = key.get_op_key("sign")
        der = op_key.sign(msg, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        r, s = decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")


class _SigningRegistry(JWSRegistry):
    """A private joserfc registry: Ed25519 as registered, ES256 made deterministic."""

    algorithms: dict[str, Any] = {  # noqa: RUF012 - joserfc looks algorithms up here
        "Ed25519": JWSRegistry.algorithms["Ed25519"],
        "ES256": _DeterministicES256("ES256", "P-256", 256, True),
    }


def _import_jwk(jwk: Mapping[str, Any], where: str) -> ECKey | OKPKey:
    if not isinstance(jwk, Mapping):
        raise HandoffError("key", f"{where} is not a JWK object", reason="key_invalid")
    kty, crv = jwk.get("kty"), jwk.get("crv")
    if (kty, crv) not in (("OKP", "Ed25519"), ("EC", "P-256")):
        raise HandoffError(
            "key", f"{where} is neither an Ed25519 nor a P-256 key", reason="key_unsupported"
        )
    try:
        key = import_key(dict(jwk))
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise HandoffError(
            "key", f"{where} is not a usable JWK ({type(exc).__name__})", reason="key_invalid"
        ) from None
    if not isinstance(key, ECKey | OKPKey):  # pragma: no cover - excluded by the kty check
        raise HandoffError("key", f"{where} is not an EC or OKP key", reason="key_unsupported")
    return key


_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _ed25519_weak(x: str) -> bool:
    """Whether an Ed25519 public key is not a canonical point of large order.

    A key of small order (the identity and the other seven torsion points) lets anyone
    forge a signature that verifies for every message, so a JWKS holding one is refused.
    Decoding follows RFC 8032 §5.1.3; the point is multiplied by the cofactor 8.
    """
    try:
        raw = _unb64(x)
    except (ValueError, binascii.Error):
        return True
    if len(raw) != 32:
        return True
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    sign = raw[31] >> 7
    if y >= _P:
        return True
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x2 = u * pow(v, _P - 2, _P) % _P
    xr = pow(x2, (_P + 3) // 8, _P)
    if (xr * xr - x2) % _P != 0:
        xr = xr * _SQRT_M1 % _P
    if (xr * xr - x2) % _P != 0 or (xr == 0 and sign == 1):
        return True
    if xr % 2 != sign:
        xr = _P - xr
    px, py = xr, y
    for _ in range(3):  # [8]P by three doublings (twisted Edwards, a = -1)
        t = _D * px * px * py * py % _P
        px, py = (
            2 * px * py * pow(1 + t, _P - 2, _P) % _P,
            (py * py + px * px) * pow(1 - t, _P - 2, _P) % _P,
        )
    return px == 0 and py == 1


def _alg_for(key: ECKey | OKPKey) -> str:
    return "Ed25519" if isinstance(key, OKPKey) else "ES256"


def sign_proof(record: Mapping[str, Any], private_jwk: Mapping[str, Any]) -> str:
    """Return the detached JWS ``header..signature`` over ``record`` (``evidence.proof`` removed).

    ``private_jwk`` is the principal's own private key (Ed25519 or P-256). The header is
    ``{"alg", "kid", "typ"}`` with ``kid`` the key's RFC 7638 thumbprint. Both algorithms
    are deterministic, so the same record and key always give the same proof.
    """
    key = _import_jwk(private_jwk, "the signing key")
    if not key.is_private:
        raise HandoffError("key", "the signing key has no private part", reason="key_not_private")
    alg = _alg_for(key)
    header = {"alg": alg, "kid": key.thumbprint(), "typ": PROOF_TYP}
    payload = _payload(record)
    compact = jws.serialize_compact(
        header, payload, key, algorithms=[alg], registry=_SigningRegistry(algorithms=[alg])
    )
    head, _, signature = compact.split(".")
    return f"{head}..{signature}"


def attach_proof(record: Mapping[str, Any], private_jwk: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``record`` with ``evidence.proof`` set by :func:`sign_proof`.

    The proof covers the record as returned (with ``evidence.proof`` removed), so a record
    that had no ``evidence`` is signed with the ``evidence`` object that now carries it.
    """
    if not isinstance(record, Mapping):
        raise HandoffError("proof", "the signed record must be an object", reason="record")
    out = dict(record)
    evidence = out.get("evidence")
    # sign the record as it will be sent: an evidence object added here to carry the proof
    # is part of what the proof covers (it stays, empty, when the proof is removed)
    if not isinstance(evidence, Mapping | None):
        raise HandoffError("proof", "the record's evidence is not an object", reason="record")
    out["evidence"] = {k: v for k, v in dict(evidence or {}).items() if k != "proof"}
    out["evidence"]["proof"] = sign_proof(out, private_jwk)
    return out


def public_jwks(*private_jwks: Mapping[str, Any]) -> dict[str, Any]:
    """Return a JWKS of the public halves of ``private_jwks``, each with ``kid`` = thumbprint."""
    keys = []
    for index, jwk in enumerate(private_jwks):
        key = _import_jwk(jwk, f"key {index}")
        public = dict(key.as_dict(private=False))
        public["kid"] = key.thumbprint()
        public["alg"] = _alg_for(key)
        keys.append({k: public[k] for k in sorted(public)})
    return {"keys": keys}


@dataclass(frozen=True)
class ProofCheck:
    """A proof that verified: the key's thumbprint (``kid``) and the algorithm used."""

    kid: str
    alg: str


def _fail(reason: str, message: str) -> HandoffError:
    """A ``proof`` error: the proof (data from the settlement's author) does not verify."""
    return HandoffError("proof", message, reason=reason)


def _bad_jwks(message: str) -> HandoffError:
    """A ``key`` error: the principal side's JWKS (the verifier's own trust) is unusable."""
    return HandoffError("key", message, reason="jwks_invalid")


class KeySet:
    """The principal's public keys, parsed and checked once, found by RFC 7638 thumbprint.

    Build it from the principal side's JWKS and pass it to :func:`verify_proof` instead of
    the JWKS, so that many proofs are checked without parsing the keys again; the caller
    owns it (no memory is kept anywhere else). A JWKS that is invalid gives a set whose
    every use raises the same ``key``/``jwks_invalid`` usage error.
    """

    __slots__ = ("_error", "_keys")

    def __init__(self, jwks: Mapping[str, Any]) -> None:
        """Parse ``jwks`` (``{"keys": [...]}``); errors surface when the set is used."""
        self._keys: dict[str, ECKey | OKPKey] = {}
        self._error: HandoffError | None = None
        try:
            self._keys = _keys_by_thumbprint(jwks)
        except HandoffError as exc:
            self._error = exc

    def keys(self) -> dict[str, ECKey | OKPKey]:
        """The keys by thumbprint; raises the JWKS's error when it was invalid."""
        if self._error is not None:
            raise HandoffError(self._error.code, self._error.message, reason=self._error.reason)
        return self._keys


def _keys_by_thumbprint(jwks: Mapping[str, Any]) -> dict[str, ECKey | OKPKey]:
    if not isinstance(jwks, Mapping):
        raise _bad_jwks("the principal side's JWKS must be an object with a keys array")
    try:
        plain = json.loads(canonical(dict(jwks)))
    except HandoffError:
        raise _bad_jwks("the principal side's JWKS is not JSON") from None
    return _parse_jwks(plain)


def _parse_jwks(jwks: Mapping[str, Any]) -> dict[str, ECKey | OKPKey]:
    if not isinstance(jwks.get("keys"), list):
        raise _bad_jwks("the principal side's JWKS must be an object with a keys array")
    found: dict[str, ECKey | OKPKey] = {}
    for index, jwk in enumerate(jwks["keys"]):
        if isinstance(jwk, Mapping) and _PRIVATE_MEMBERS & set(jwk):
            raise _bad_jwks(f"key {index} of the JWKS carries private key material")
        if not isinstance(jwk, Mapping) or (jwk.get("kty"), jwk.get("crv")) not in (
            ("OKP", "Ed25519"),
            ("EC", "P-256"),
        ):
            continue  # keys of other types can never verify a proof; they are skipped
        try:
            key = _import_jwk(jwk, f"key {index} of the JWKS")
        except HandoffError:
            raise _bad_jwks(f"key {index} of the JWKS is not a usable key") from None
        if isinstance(key, OKPKey) and _ed25519_weak(str(jwk.get("x", ""))):
            raise _bad_jwks(f"key {index} of the JWKS is a small-order Ed25519 point")
        thumb = key.thumbprint()
        declared = jwk.get("kid")
        if declared is not None and declared != thumb:
            raise _bad_jwks(f"key {index} of the JWKS has a kid that is not its thumbprint")
        declared_alg = jwk.get("alg")
        if declared_alg is not None and declared_alg != _alg_for(key):
            raise _bad_jwks(f"key {index} of the JWKS declares an alg it cannot use")
        found[thumb] = key
    return found


def verify_proof(
    record: Mapping[str, Any],
    jwks: Mapping[str, Any] | KeySet,
    *,
    algorithms: Sequence[str] = PROOF_ALGORITHMS,
) -> ProofCheck:
    """Verify ``record``'s ``evidence.proof`` against the principal side's ``jwks``.

    ``jwks`` is the JWKS object, or a :class:`KeySet` built from it once for many proofs.

    Returns the :class:`ProofCheck` of a proof that verified. Fail-closed: raises
    :class:`~handoff.HandoffProtocolError` with code ``proof`` and a reason
    (``proof_missing``, ``proof_malformed``, ``header_invalid``, ``alg_not_allowed``,
    ``kid_unknown``, ``key_mismatch``, ``bad_signature``) on any problem with the proof,
    and :class:`~handoff.HandoffUsageError` ``key``/``jwks_invalid`` when ``jwks`` itself
    is unusable.
    """
    if not isinstance(record, Mapping):
        raise _fail("record", "the record must be an object")
    evidence = record.get("evidence")
    proof = evidence.get("proof") if isinstance(evidence, Mapping) else None
    if proof is None:
        raise _fail("proof_missing", "the settlement carries no evidence.proof")
    if not isinstance(proof, str):
        raise _fail("proof_malformed", "evidence.proof is not a string")
    parts = proof.split(".")
    if len(parts) != 3 or parts[1] != "":
        raise _fail(
            "proof_malformed", "evidence.proof is not a detached compact JWS (header..signature)"
        )
    head, _, signature = parts
    try:
        header = json.loads(_unb64(head).decode("utf-8"))
        signature_bytes = _unb64(signature)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise _fail(
            "proof_malformed", "evidence.proof has a segment that is not base64url JSON"
        ) from None
    if not isinstance(header, dict) or set(header) != _HEADER_MEMBERS:
        raise _fail("header_invalid", "the proof header must hold exactly alg, kid and typ")
    if header["typ"] != PROOF_TYP:
        raise _fail("header_invalid", f"the proof header typ is not {PROOF_TYP!r}")
    alg, kid = header["alg"], header["kid"]
    allowed = [a for a in algorithms if a in PROOF_ALGORITHMS]
    if alg not in allowed:
        raise _fail("alg_not_allowed", f"the proof algorithm {str(alg)[:20]!r} is not allowed")
    keys = jwks.keys() if isinstance(jwks, KeySet) else _keys_by_thumbprint(jwks)
    if not isinstance(kid, str) or kid not in keys:
        raise _fail("kid_unknown", "the proof's kid names no key of the principal side's JWKS")
    key = keys[kid]
    if _KTY_FOR_ALG[alg] != (key.key_type, key.as_dict(private=False).get("crv")):
        raise _fail("key_mismatch", f"the key named by kid cannot verify {alg}")
    if len(signature_bytes) != 64:
        raise _fail("bad_signature", "the proof signature does not verify")
    payload = _payload(record)
    try:
        jws.deserialize_compact(proof, key, algorithms=[alg], payload=payload)
    except JoseError:
        raise _fail("bad_signature", "the proof signature does not verify") from None
    except (ValueError, TypeError):
        raise _fail("bad_signature", "the proof signature does not verify") from None
    return ProofCheck(kid=kid, alg=alg)
