"""evidence.presented (§9) and evidence.proof: detached JWS, Ed25519 and ES256, fail-closed."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jws
from joserfc.jwk import ECKey, OKPKey

import handoff

from .ext_fixtures import ec_key, ed_key, raised, registry, settlement

KEYS = {"Ed25519": ed_key(), "ES256": ec_key()}


def _signed(alg: str = "Ed25519") -> tuple[dict[str, Any], dict[str, Any]]:
    reg = registry()
    reg.add(raised())
    record = handoff.attach_proof(settlement(reg), KEYS[alg])
    return record, handoff.public_jwks(*KEYS.values())


@pytest.mark.parametrize("alg", ["Ed25519", "ES256"])
def test_sign_and_verify_both_algorithms(alg: str) -> None:
    record, jwks = _signed(alg)
    check = handoff.verify_proof(record, jwks)
    assert check.alg == alg
    assert check.kid == jwks["keys"][0 if alg == "Ed25519" else 1]["kid"]
    head, payload, _ = record["evidence"]["proof"].split(".")
    assert payload == ""  # RFC 7515 Appendix F: detached
    header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    assert header == {"alg": alg, "kid": check.kid, "typ": handoff.evidence.PROOF_TYP}


@pytest.mark.parametrize("alg", ["Ed25519", "ES256"])
def test_signatures_are_deterministic(alg: str) -> None:
    assert _signed(alg)[0] == _signed(alg)[0]


def test_a_randomised_es256_proof_made_by_joserfc_verifies() -> None:
    record, jwks = _signed("ES256")
    key = ECKey.import_key(KEYS["ES256"])
    header = {"alg": "ES256", "kid": key.thumbprint(), "typ": handoff.evidence.PROOF_TYP}
    compact = jws.serialize_compact(
        header, handoff.digests.signing_input(record), key, algorithms=["ES256"]
    )
    head, _, sig = compact.split(".")
    other = copy.deepcopy(record)
    other["evidence"]["proof"] = f"{head}..{sig}"
    assert handoff.verify_proof(other, jwks).alg == "ES256"


def test_proof_covers_jcs_of_record_without_proof() -> None:
    record, _ = _signed()
    key = OKPKey.import_key(handoff.public_jwks(KEYS["Ed25519"])["keys"][0])
    head, _, sig = record["evidence"]["proof"].split(".")
    payload = handoff.digests.signing_input(record)
    jws.deserialize_compact(f"{head}..{sig}", key, algorithms=["Ed25519"], payload=payload)


def test_wrong_key_is_refused() -> None:
    record, _ = _signed()
    with pytest.raises(handoff.HandoffError) as info:
        handoff.verify_proof(record, handoff.public_jwks(ed_key(7)))
    assert info.value.reason == "kid_unknown"


def test_missing_and_malformed_proofs() -> None:
    record, jwks = _signed()
    bare = copy.deepcopy(record)
    del bare["evidence"]["proof"]
    for value, reason in [
        (None, "proof_missing"),
        (42, "proof_malformed"),
        ("a.b", "proof_malformed"),
        ("!!..!!", "proof_malformed"),
    ]:
        candidate = copy.deepcopy(bare)
        if value is not None:
            candidate["evidence"]["proof"] = value
        with pytest.raises(handoff.HandoffError) as info:
            handoff.verify_proof(candidate, jwks)
        assert info.value.code == "proof"
        assert info.value.reason == reason


@pytest.mark.parametrize(
    "jwks",
    [None, [], {"keys": "x"}, {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "@@"}]}],
)
def test_bad_jwks_is_a_handoff_error(jwks: Any) -> None:
    record, _ = _signed()
    with pytest.raises(handoff.HandoffError) as info:
        handoff.verify_proof(record, jwks)
    assert info.value.reason in {"jwks_invalid", "kid_unknown"}


def test_rsa_and_unknown_keys_in_the_jwks_are_skipped() -> None:
    record, jwks = _signed()
    rsa = {"kty": "RSA", "n": "sXch", "e": "AQAB"}
    mixed = {"keys": [rsa, *jwks["keys"]]}
    with pytest.raises(handoff.HandoffError) as info:
        handoff.verify_proof(record, {"keys": [rsa]})
    assert info.value.reason == "kid_unknown"
    with pytest.raises(handoff.HandoffError) as info:
        handoff.verify_proof(record, {"keys": [{"kty": "oct", "k": "AAAA"}]})
    assert info.value.reason == "jwks_invalid"  # a secret key never belongs in a JWKS
    assert handoff.verify_proof(record, mixed).alg == "Ed25519"


def test_presentation_binds_the_item_and_revision() -> None:
    base = {
        "ext": "acts/0.3",
        "project": "web",
        "key": "k1",
        "terms_rev": 1,
        "terms": {"text": "x"},
    }
    digest = handoff.digests.presented_digest(handoff.evidence.presentation(**base))
    assert digest.startswith("sha-256:")
    assert len(digest) == 8 + 64
    for change in ({"key": "k2"}, {"terms_rev": 2}, {"project": "p2"}, {"ext": "decisions/0.3"}):
        assert (
            handoff.digests.presented_digest(handoff.evidence.presentation(**{**base, **change}))
            != digest
        )
    with_proposal = handoff.evidence.presentation(**base, proposal="c1")
    assert handoff.digests.presented_digest(with_proposal) != digest


@pytest.mark.parametrize("bad", [{"terms_rev": 0}, {"terms_rev": True}, {"key": ""}, {"terms": []}])
def test_presentation_rejects_bad_input(bad: dict[str, Any]) -> None:
    base = {
        "ext": "acts/0.3",
        "project": "web",
        "key": "k1",
        "terms_rev": 1,
        "terms": {"text": "x"},
    }
    with pytest.raises(handoff.HandoffError):
        handoff.evidence.presentation(**{**base, **bad})


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if prefix == ("evidence",) and key == "proof":
                continue
            found.append((*prefix, key))
            found += _paths(item, (*prefix, key))
    return found


SIGNED, JWKS = _signed()
LEAVES = _paths(SIGNED)


@settings(max_examples=60)
@given(
    path=st.sampled_from(LEAVES),
    new=st.one_of(st.text(max_size=8), st.integers(-5, 5), st.booleans(), st.none()),
    add=st.booleans(),
)
def test_any_change_to_the_settled_record_breaks_the_proof(
    path: tuple[Any, ...], new: Any, add: bool
) -> None:
    mutated = copy.deepcopy(SIGNED)
    node = mutated
    for part in path[:-1]:
        node = node[part]
    if add:
        node["x_added"] = new
    else:
        if node[path[-1]] == new and type(node[path[-1]]) is type(new):
            return
        node[path[-1]] = new
    with pytest.raises(handoff.HandoffError) as info:
        handoff.verify_proof(mutated, JWKS)
    assert info.value.code == "proof"


SMALL_ORDER = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.mark.parametrize("point", SMALL_ORDER)
def test_a_jwks_with_a_small_order_ed25519_key_is_refused(point: str) -> None:
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": _b64(bytes.fromhex(point))}
    record = raised()
    members = json.dumps(jwk, separators=(",", ":"), sort_keys=True).encode()
    kid = _b64(hashlib.sha256(members).digest())  # RFC 7638 thumbprint
    header = _b64(
        json.dumps({"alg": "Ed25519", "kid": kid, "typ": handoff.evidence.PROOF_TYP}).encode()
    )
    record["evidence"] = {"proof": f"{header}..{_b64(bytes.fromhex(point) + bytes(32))}"}
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.verify_proof(record, {"keys": [jwk]})
    assert caught.value.reason == "jwks_invalid"


def test_ordinary_ed25519_keys_still_verify_proofs() -> None:
    from .ext_fixtures import ed_key

    for seed in range(1, 40):
        key = ed_key(seed)
        signed = handoff.attach_proof(raised(), key)
        handoff.verify_proof(signed, handoff.public_jwks(key))
