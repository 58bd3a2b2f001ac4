"""Forged JWS for tests: any header and payload bytes, signed with a real key.

An attacker who holds (or is) the issuer signs whatever bytes it likes: JSON that is not
JCS, numbers beyond a double, members a verifier must refuse. These helpers sign such bytes
with ``cryptography`` directly (ES256 as raw ``r || s``, RFC 7518 §3.4; EdDSA), so the
checks after the signature run; nothing of :mod:`vxp` is used to build them.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc.jwk import ECKey, OKPKey

from vxp.codec import b64url_encode, canonical_json


def sign(key: ECKey | OKPKey, data: bytes) -> bytes:
    """The raw JWS signature of ``data`` by ``key`` (ES256 ``r || s``, or Ed25519)."""
    private = key.private_key
    if isinstance(private, ec.EllipticCurvePrivateKey):
        r, s = decode_dss_signature(private.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return bytes(private.sign(data))


def jws(header: bytes, payload: bytes, key: ECKey | OKPKey) -> str:
    """A compact JWS over exactly these ``header`` and ``payload`` bytes."""
    signing_input = b64url_encode(header) + "." + b64url_encode(payload)
    return signing_input + "." + b64url_encode(sign(key, signing_input.encode("ascii")))


def jws_json(header: dict[str, Any], payload: dict[str, Any], key: ECKey | OKPKey) -> str:
    """A compact JWS over the JCS text of ``header`` and ``payload`` (whatever they say)."""
    return jws(canonical_json(header), canonical_json(payload), key)
