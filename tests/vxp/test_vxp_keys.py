"""VXP building blocks §2 keys: one canonical spelling per key (one key cannot pass for two)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

import vxp
from vxp import demo_operation
from vxp._keys import resolve_key
from vxp.codec import b64url_encode
from vxp.trust import load_trust


def _failure(verdict: vxp.Verdict) -> tuple[str, str | None]:
    assert verdict.valid is False
    assert verdict.failure is not None
    return verdict.failure["code"], verdict.failure.get("reason")


_P = 2**256 - 2**224 + 2**192 + 2**96 - 1


_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B


def _small_point() -> tuple[int, int]:
    x = 1
    while True:
        rhs = (x**3 - 3 * x + _B) % _P
        y = pow(rhs, (_P + 1) // 4, _P)
        if y * y % _P == rhs:
            return x, y
        x += 1


def _ec_jwk(x: int, y: int) -> dict[str, Any]:
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(x.to_bytes(32, "big")),
        "y": b64url_encode(y.to_bytes(32, "big")),
    }


def test_p256_coordinate_at_or_above_p_is_refused() -> None:
    x, y = _small_point()
    assert x == 5
    canonical = resolve_key(_ec_jwk(x, y))
    for respelled in (_ec_jwk(x + _P, y), _ec_jwk(x, y + _P) if y + _P < 2**256 else None):
        if respelled is None:
            continue
        with pytest.raises(vxp.VxpError) as info:
            resolve_key(respelled)
        assert info.value.code == "key_invalid"
        with pytest.raises(vxp.VxpError) as info:
            vxp.IssuerKeys([respelled])
        assert info.value.code == "key_invalid"
    jwks = {"keys": [{**_ec_jwk(x + _P, y), "kid": canonical.kid}]}
    with pytest.raises(vxp.VxpError) as info:
        load_trust(
            {
                "issuer": "https://c.example",
                "vxp_proof": {
                    "version": 1,
                    "profile": "issuer",
                    "jwks_uri": "https://c.example/j",
                    "keys": [],
                    "custody": {"company_key": "company_held"},
                    "log": {"origin": "o", "kid": canonical.kid, "witnesses": [], "quorum": 1},
                },
            },
            jwks,
        )
    assert (info.value.code, info.value.reason) == ("metadata_invalid", "jwks")


def test_verifier_refuses_a_jwks_with_a_respelled_p256_key() -> None:
    op = demo_operation("succeeded")
    x, y = _small_point()
    jwks = copy.deepcopy(op.jwks)
    respelled = _ec_jwk(x + _P, y)
    members = json.dumps(respelled, sort_keys=True, separators=(",", ":")).encode()
    kid = b64url_encode(hashlib.sha256(members).digest())  # its RFC 7638 thumbprint
    jwks["keys"].append({**respelled, "kid": kid})
    with pytest.raises(vxp.VxpError) as info:
        vxp.Verifier(op.metadata, jwks)
    assert (info.value.code, info.value.reason) == ("metadata_invalid", "jwks")
    verdict = vxp.verify(op.package, op.metadata, jwks, now=op.now)
    assert _failure(verdict) == ("metadata_invalid", "jwks")


# ---- §5.1 (ours): whose key it is decides the kind of error

BAD_KEYS: dict[str, dict[str, Any]] = {
    "off-curve": _ec_jwk(1, 1),
    "rsa": {"kty": "RSA", "n": "AQAB", "e": "AQAB"},
    "no-y": {"kty": "EC", "crv": "P-256", "x": b64url_encode(bytes(32))},
    "p-384": {**_ec_jwk(1, 1), "crv": "P-384"},
}
HOLDER = vxp.demo_key("keys holder")
ISSUER = vxp.demo_key("keys issuer")


def _with_cnf(jwk: dict[str, Any]) -> vxp.SdJwt:
    return vxp.issue_sd_jwt({"iss": "i", "cnf": {"jwk": jwk}}, ISSUER, typ="t")


@pytest.mark.parametrize("bad", list(BAD_KEYS.values()), ids=list(BAD_KEYS))
def test_an_unusable_key_in_a_peers_data_is_a_protocol_error(bad: dict[str, Any]) -> None:
    """docs/spec/vxp.md §5.1: a key that arrives inside protocol data (a JWKS, a token's
    ``cnf``, a DPoP header) is the peer's: unusable, it is a VxpProtocolError."""
    op = demo_operation("succeeded")
    jwks = {"keys": [*op.jwks["keys"], {**bad, "kid": "k"}]}
    with pytest.raises(vxp.VxpProtocolError) as info:
        vxp.Verifier(op.metadata, jwks)
    assert info.value.code == "metadata_invalid"
    assert _failure(vxp.verify(op.package, op.metadata, jwks, now=op.now))[0] == "metadata_invalid"
    with pytest.raises(vxp.VxpProtocolError) as info:
        vxp.present_sd_jwt(_with_cnf(bad), holder_key=HOLDER, aud="a", nonce="n", iat=0)
    assert info.value.code == "kb_cnf_invalid"
    good = vxp.issue_sd_jwt({"iss": "i"}, ISSUER, typ="t", holder_key=HOLDER)
    kb = vxp.present_sd_jwt(good, holder_key=HOLDER, aud="a", nonce="n", iat=0).rsplit("~", 1)[1]
    with pytest.raises(vxp.VxpProtocolError) as info:
        vxp.verify_sd_jwt(
            vxp.present_sd_jwt(_with_cnf(bad), disclose=[]) + kb,
            ISSUER,
            typ="t",
            now=0,
            key_binding=vxp.KeyBinding(aud="a", nonce="n"),
        )
    assert info.value.code == "kb_cnf_invalid"


@pytest.mark.parametrize("bad", list(BAD_KEYS.values()), ids=list(BAD_KEYS))
def test_an_unusable_key_the_caller_passes_is_a_usage_error(bad: dict[str, Any]) -> None:
    """docs/spec/vxp.md §5.1: a key the caller passes as an argument is the caller's, even
    when the caller copied it from a peer: unusable, it is a VxpUsageError."""
    payload = vxp.statements.approval_payload(*[vxp.statements.digest_of(1)] * 2, 1, "x")
    calls = [
        lambda: vxp.key_thumbprint(bad),
        lambda: vxp.build_jwks([bad]),
        lambda: vxp.IssuerKeys([bad]),
        lambda: vxp.verify_sd_jwt(
            vxp.issue_sd_jwt({}, ISSUER, typ="t").serialize(), bad, typ="t", now=0
        ),
        lambda: vxp.issue_sd_jwt({}, ISSUER, typ="t", holder_key=bad),
        lambda: vxp.statements.approval_signing_input(bad, payload),
        lambda: vxp.MerkleLog("o").checkpoint(bad),
    ]
    for call in calls:
        with pytest.raises(vxp.VxpUsageError) as info:
            call()
        assert info.value.code in ("key_invalid", "key_unsupported")
