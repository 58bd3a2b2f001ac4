"""Signature fast path against Wycheproof; RFC 8037 thumbprint and EdDSA JWS; the strict
JSON reader against the JCS test suite's inputs.

Private imports: ``vxp._keys.resolve_key`` gives the private key object whose
``signature_valid`` is the fast path every verification runs; it is held here to its
oracles, the Wycheproof ECDSA and EdDSA vectors and RFC 8037 §A. ``vxp._jws.parse_compact``
and ``vxp._codec.parse_json`` are the strict JWS and JSON readers under every public
verification, held to the upstream inputs directly (no public call takes a bare JWS or
JSON text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from joserfc import jws
from joserfc.jwk import ECKey

import vxp
from vxp._jws import parse_compact
from vxp._keys import resolve_key

ROOT = Path(__file__).resolve().parents[2] / "vectors" / "third_party"


def _cases(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    data = json.loads((ROOT / "wycheproof" / name).read_text())
    return [(_group_jwk(g), t) for g in data["testGroups"] for t in g["tests"]]


def _group_jwk(group: dict[str, Any]) -> dict[str, Any]:
    if "publicKeyJwk" in group:
        return dict(group["publicKeyJwk"])
    pub = group["publicKey"]
    if "pk" in pub:
        return {
            "kty": "OKP",
            "crv": "Ed25519",
            "x": vxp.codec.b64url_encode(bytes.fromhex(pub["pk"])),
        }
    coord = {c: vxp.codec.b64url_encode(int(pub[f"w{c}"], 16).to_bytes(32, "big")) for c in "xy"}
    return {"kty": "EC", "crv": "P-256", **coord}


ECDSA = _cases("ecdsa_secp256r1_sha256_p1363_test.json")
ED25519 = _cases("ed25519_test.json")


def _jwk(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k in ("kty", "crv", "x", "y")}


def test_counts() -> None:
    assert len(ECDSA) == 262
    assert len(ED25519) == 151


@pytest.mark.parametrize(("jwk", "case"), ECDSA, ids=[f"ecdsa-{t['tcId']}" for _, t in ECDSA])
def test_es256_fast_path_matches_wycheproof(jwk: dict[str, Any], case: dict[str, Any]) -> None:
    key = resolve_key(_jwk(jwk))
    ok = key.signature_valid(bytes.fromhex(case["msg"]), bytes.fromhex(case["sig"]))
    assert ok == (case["result"] == "valid"), case["comment"]


@pytest.mark.parametrize(("jwk", "case"), ED25519, ids=[f"ed25519-{t['tcId']}" for _, t in ED25519])
def test_eddsa_fast_path_matches_wycheproof(jwk: dict[str, Any], case: dict[str, Any]) -> None:
    key = resolve_key(_jwk(jwk))
    ok = key.signature_valid(bytes.fromhex(case["msg"]), bytes.fromhex(case["sig"]))
    assert ok == (case["result"] == "valid"), case["comment"]


RFC8037 = json.loads((ROOT / "jose" / "rfc8037_appendix_a.json").read_text())


def test_rfc8037_thumbprint() -> None:
    assert vxp.key_thumbprint(RFC8037["A.2_public_jwk"]) == RFC8037["A.3_thumbprint_sha256_b64url"]
    assert vxp.key_thumbprint(RFC8037["A.1_private_jwk"]) == RFC8037["A.3_thumbprint_sha256_b64url"]


def test_rfc8037_jws_verifies_and_is_reproduced() -> None:
    token = RFC8037["A.4_jws_compact"]
    head, payload, _ = token.split(".")
    key = resolve_key(RFC8037["A.1_private_jwk"])
    assert vxp.codec.b64url_encode(key.sign(f"{head}.{payload}".encode())) == token.split(".")[2]
    sig = vxp.codec.b64url_decode(token.split(".")[2], "sig")
    assert resolve_key(RFC8037["A.2_public_jwk"]).signature_valid(f"{head}.{payload}".encode(), sig)


def test_fast_path_agrees_with_joserfc_on_random_tokens() -> None:
    """joserfc is the oracle for the cryptography fast path, valid and invalid."""
    key = ECKey.generate_key("P-256")
    token = vxp.issue_sd_jwt({"a": 1}, key, typ="t").jws
    mine = resolve_key(key)
    for i in range(len(token)):
        if token[i] == ".":
            continue
        for repl in "AQg_":
            if repl == token[i]:
                continue
            bad = token[:i] + repl + token[i + 1 :]
            try:
                parsed = parse_compact(bad, "JWT")
                ours = mine.signature_valid(parsed.signing_input, parsed.signature)
            except vxp.VxpError:
                ours = False
            try:
                jws.deserialize_compact(bad, key, algorithms=["ES256"])
                theirs = True
            except Exception:
                theirs = False
            assert not ours, (i, repl)
            # joserfc decodes base64 leniently (it may ignore trailing bits); never the reverse.
            assert ours <= theirs
    assert jws.deserialize_compact(token, key, algorithms=["ES256"])


JCS = ROOT / "jcs"
JCS_CASES = sorted(p.stem for p in (JCS / "input").glob("*.json"))


@pytest.mark.parametrize("name", JCS_CASES)
def test_jcs_upstream(name: str) -> None:
    from vxp._codec import parse_json

    value = parse_json((JCS / "input" / f"{name}.json").read_bytes(), name)
    expected = (JCS / "output" / f"{name}.json").read_bytes()
    assert vxp.codec.canonical_json(value) == expected
    assert vxp.codec.canonical_json(value) == bytes.fromhex(
        (JCS / "outhex" / f"{name}.txt").read_text()
    )
