"""Interoperability with the PyPI ``sd-jwt`` package (draft-07), a test-only peer.

Tokens it issues and presents verify with ours; tokens we issue and present verify with its
verifier. Where its draft-era verifier accepts what RFC 9901 §7 rejects, we check that ours
rejects (and that the peer really accepts, so the difference stays documented).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from joserfc.jwk import ECKey

import vxp

sd_jwt = pytest.importorskip("sd_jwt")
from jwcrypto.jwk import JWK  # noqa: E402
from sd_jwt.common import SDObj  # noqa: E402
from sd_jwt.holder import SDJWTHolder  # noqa: E402
from sd_jwt.issuer import SDJWTIssuer  # noqa: E402
from sd_jwt.verifier import SDJWTVerifier  # noqa: E402

TYP = "example+sd-jwt"
NOW = 1_780_000_000


def _peer_claims() -> dict[Any, Any]:
    return {
        "iss": "https://issuer.example",
        "exp": 4_000_000_000,
        SDObj("given_name"): "Ada",
        "nationalities": [SDObj("ES"), "PT", SDObj("FR")],
        SDObj("address"): {SDObj("street"): "1 Main St", "city": "Anytown"},
    }


EXPECTED = {
    "iss": "https://issuer.example",
    "exp": 4_000_000_000,
    "given_name": "Ada",
    "nationalities": ["ES", "PT", "FR"],
    "address": {"street": "1 Main St", "city": "Anytown"},
}


def _peer_keys() -> tuple[Any, Any, dict[str, Any]]:
    issuer = JWK.generate(kty="EC", crv="P-256")
    holder = JWK.generate(kty="EC", crv="P-256")
    return issuer, holder, json.loads(issuer.export_public())


@pytest.mark.parametrize("decoys", [False, True])
def test_peer_issuance_verifies_with_ours(decoys: bool) -> None:
    issuer, holder, public = _peer_keys()
    issued = SDJWTIssuer(_peer_claims(), issuer, holder_key=holder, add_decoy_claims=decoys)
    result = vxp.verify_sd_jwt(issued.sd_jwt_issuance, public, typ=TYP, now=NOW)
    claims = dict(result.claims)
    assert claims.pop("cnf")["jwk"] == json.loads(holder.export_public())
    assert claims == EXPECTED


def test_peer_presentation_with_key_binding_verifies_with_ours() -> None:
    issuer, holder, public = _peer_keys()
    issued = SDJWTIssuer(_peer_claims(), issuer, holder_key=holder)
    peer = SDJWTHolder(issued.sd_jwt_issuance)
    peer.create_presentation(
        {"given_name": True, "address": {"street": True}}, nonce="n-1", aud="v", holder_key=holder
    )
    presentation = peer.sd_jwt_presentation
    kb_payload = json.loads(
        vxp.codec.b64url_decode(presentation.split("~")[-1].split(".")[1], "kb")
    )
    result = vxp.verify_sd_jwt(
        presentation,
        public,
        typ=TYP,
        now=kb_payload["iat"],  # the peer stamps the KB-JWT with its own clock
        key_binding=vxp.KeyBinding("v", "n-1"),
    )
    assert result.claims["address"] == {"street": "1 Main St", "city": "Anytown"}
    assert result.claims["nationalities"] == ["PT"]
    with pytest.raises(vxp.VxpError, match="kb_nonce_mismatch"):
        vxp.verify_sd_jwt(
            presentation,
            public,
            typ=TYP,
            now=kb_payload["iat"],
            key_binding=vxp.KeyBinding("v", "x"),
        )


def _ours() -> tuple[ECKey, ECKey, vxp.SdJwt]:
    issuer = ECKey.generate_key("P-256")
    holder = ECKey.generate_key("P-256")
    claims = vxp.sdjwt.mark_disclosable(
        {k if isinstance(k, str) else k.value: v for k, v in EXPECTED.items()},
        [["given_name"], ["address"], ["address", "street"], ["nationalities", 0]],
    )
    return issuer, holder, vxp.issue_sd_jwt(claims, issuer, typ=TYP, decoys=2, holder_key=holder)


def _peer_verifier(token: str, issuer: ECKey, **kw: Any) -> dict[str, Any]:
    key = JWK.from_json(json.dumps(issuer.as_dict(private=False)))
    payload: dict[str, Any] = SDJWTVerifier(
        token, lambda _iss, _hdr: key, **kw
    ).get_verified_payload()
    return payload


def test_our_issuance_verifies_with_peer() -> None:
    issuer, _holder, token = _ours()
    claims = _peer_verifier(token.serialize(), issuer)
    claims.pop("cnf")
    assert claims == EXPECTED


def test_our_key_bound_presentation_verifies_with_peer() -> None:
    issuer, holder, token = _ours()
    presentation = vxp.present_sd_jwt(
        token, disclose=[["address", "street"]], holder_key=holder, aud="v", nonce="n-1", iat=NOW
    )
    claims = _peer_verifier(presentation, issuer, expected_aud="v", expected_nonce="n-1")
    assert claims["address"] == {"street": "1 Main St", "city": "Anytown"}
    assert "given_name" not in claims


def test_where_the_peer_is_laxer_ours_rejects() -> None:
    """The draft-07 verifier accepts these; RFC 9901 §7.1 (and we) reject them."""
    issuer, _holder, token = _ours()
    stray = vxp.sdjwt.Disclosure.create("c2FsdA", "nickname", "Eve").encoded
    unreferenced = token.serialize() + stray + "~"
    expired = token.serialize()
    _peer_verifier(unreferenced, issuer)  # accepted by the peer
    with pytest.raises(vxp.VxpError, match="disclosure_unreferenced"):
        vxp.verify_sd_jwt(unreferenced, issuer, typ=TYP, now=NOW)
    _peer_verifier(expired, issuer)  # the peer does not check exp
    with pytest.raises(vxp.VxpError, match="token_expired"):
        vxp.verify_sd_jwt(expired, issuer, typ=TYP, now=4_000_000_000)
