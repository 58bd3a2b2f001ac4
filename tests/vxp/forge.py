"""Forged JWS for tests: any header and payload bytes, signed with a real key.

An attacker who holds (or is) the issuer signs whatever bytes it likes: JSON that is not
JCS, numbers beyond a double, members a verifier must refuse. These helpers sign such bytes
with ``cryptography`` directly (ES256 as raw ``r || s``, RFC 7518 §3.4; EdDSA), so the
checks after the signature run. :func:`log_user_approval` logs a user-signed approval the
builder would refuse to make.

Private imports: ``vxp._statements.sign_user_approval`` signs a user's approval of any
revision value with a real user key (the forged approvals the verifier must refuse: a
revision of another JSON type, a key respelled, an issuer key posing as the user's); a user
has no reason to call it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc.jwk import ECKey, OKPKey

import vxp
from vxp._statements import sign_user_approval
from vxp.codec import b64url_encode, canonical_json
from vxp.statements import jwt_digest


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


def log_user_approval(
    builder: vxp.OperationBuilder,
    user_key: Any,
    *,
    now: datetime,
    signed_revision: Any = None,
    user_jwk: Callable[[dict[str, Any]], dict[str, Any]] = dict,
) -> None:
    """Log (``unsafe_append``) a ``user_signed`` approval of the builder's latest terms
    revision, signed by ``user_key`` over ``signed_revision`` (default: that revision),
    with ``user_jwk`` applied to the user's public JWK the statement carries."""
    state = builder.state
    assert state.latest is not None
    assert state.request is not None
    revision = state.latest.revision
    jwk, token = sign_user_approval(
        user_key,
        state.request["request_digest"],
        revision if signed_revision is None else signed_revision,
        state.latest.terms_digest,
        jwt_digest(builder.statements[state.latest.seq].split("~", 1)[0]),
    )
    body = {
        "method": "user_signed",
        "revision": revision,
        "terms_digest": state.latest.terms_digest,
        "user_key": user_jwk(jwk),
        "user_signature": token,
    }
    builder.unsafe_append("user_approval", body, now=now)
