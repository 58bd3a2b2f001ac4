"""Upstream SD-JWT material: RFC 9901 (draft-22) examples and sd-jwt-python test cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from joserfc import jws

import vxp

ROOT = Path(__file__).resolve().parents[2] / "vectors" / "third_party" / "sd-jwt"
KEYS = json.loads((ROOT / "keys.json").read_text())
ISSUER = KEYS["issuer_public"]
EXAMPLES = json.loads((ROOT / "rfc9901_draft22_compact_examples.json").read_text())["examples"]
JSON_EXAMPLES = json.loads((ROOT / "rfc9901_draft22_json_serialization_examples.json").read_text())
NOW = 1748537243
TESTCASES = sorted(
    p
    for p in (ROOT / "sd-jwt-python-testcases").iterdir()
    if (p / "sd_jwt_presentation.txt").exists()
)
REGENERATED = sorted(
    p
    for p in (ROOT / "draft22-examples-regenerated").iterdir()
    if (p / "sd_jwt_presentation.txt").exists()
)


def _policy(example: dict[str, Any]) -> vxp.KeyBinding | None:
    kb = example["key_binding"]
    return None if kb is None else vxp.KeyBinding(kb["expected_aud"], kb["expected_nonce"])


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["id"] for e in EXAMPLES])
def test_rfc_example_verifies(example: dict[str, Any]) -> None:
    result = vxp.verify_sd_jwt(
        example["sd_jwt"], ISSUER, typ=example["typ"], now=NOW, key_binding=_policy(example)
    )
    assert result.claims == example["processed_payload"]
    assert len(result.disclosures) == example["n_disclosures"]
    if example["key_binding"]:
        assert result.key_binding == example["key_binding"]["kb_jwt_payload"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["id"] for e in EXAMPLES])
def test_rfc_example_issuer_jwt_agrees_with_joserfc(example: dict[str, Any]) -> None:
    """joserfc, the oracle, accepts the same issuer-signed JWT our fast path accepts."""
    issuer_jwt = example["sd_jwt"].split("~")[0]
    obj = jws.deserialize_compact(issuer_jwt, vxp_key(), algorithms=["ES256"])
    assert obj.headers()["alg"] == "ES256"


def vxp_key() -> Any:
    from joserfc.jwk import ECKey

    return ECKey.import_key(ISSUER)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["id"] for e in EXAMPLES])
def test_rfc_example_mutations_are_rejected(example: dict[str, Any]) -> None:
    token: str = example["sd_jwt"]
    policy = _policy(example)
    cut = token[: token.rindex("~") + 1]
    bad = [
        cut[:-1] if policy is None else cut,  # no trailing ~, or a stripped KB-JWT
        token.replace("~", "~" + token.split("~")[1] + "~", 1),  # a repeated disclosure
        token[:40] + ("A" if token[40] != "A" else "B") + token[41:],  # a changed header
    ]
    for candidate in bad:
        with pytest.raises(vxp.VxpError):
            vxp.verify_sd_jwt(candidate, ISSUER, typ=example["typ"], now=NOW, key_binding=policy)
    if "exp" in example["processed_payload"]:
        late = example["processed_payload"]["exp"]
        with pytest.raises(vxp.VxpError, match="token_expired"):
            vxp.verify_sd_jwt(token, ISSUER, typ=example["typ"], now=late, key_binding=policy)
    with pytest.raises(vxp.VxpError, match="typ_mismatch"):
        vxp.verify_sd_jwt(token, ISSUER, typ="vxp-stmt+sd-jwt", now=NOW, key_binding=policy)


def test_rfc_json_serialization_examples_as_compact() -> None:
    """§8.2 flattened examples carry the same JWS and disclosures; joined in compact form
    (the form §8.1 says sd_hash covers) they verify with the same processing."""
    checked = 0
    for example in JSON_EXAMPLES["examples"]:
        if "signatures" in example:
            continue
        header = example["header"]
        compact = ".".join([example["protected"], example["payload"], example["signature"]])
        token = compact + "~" + "".join(d + "~" for d in header["disclosures"])
        policy = None
        if "kb_jwt" in header:
            token += header["kb_jwt"]
            policy = vxp.KeyBinding("https://verifier.example.org", "1234567890", max_age=10**9)
        result = vxp.verify_sd_jwt(token, ISSUER, typ="example+sd-jwt", now=NOW, key_binding=policy)
        assert result.claims["iss"] == "https://issuer.example.com"
        checked += 1
    assert checked == 2


def test_rfc_json_general_example_each_signature_as_compact() -> None:
    """§8.3: one payload, two signatures (the second by issuer-key-2); each signature,
    joined with the disclosures of the first, verifies under its own key."""
    (general,) = [e for e in JSON_EXAMPLES["examples"] if "signatures" in e]
    first, second = general["signatures"]
    disclosures = "".join(d + "~" for d in first["header"]["disclosures"])
    key2 = {
        k: v
        for k, v in next(v for k, v in KEYS.items() if k.startswith("issuer_key_2")).items()
        if k != "d"
    }
    policy = vxp.KeyBinding("https://verifier.example.org", "1234567890", max_age=10**9)
    for sig, key in ((first, ISSUER), (second, key2)):
        compact = ".".join([sig["protected"], general["payload"], sig["signature"]])
        result = vxp.verify_sd_jwt(compact + "~" + disclosures, key, typ="example+sd-jwt", now=NOW)
        assert set(result.claims) >= {"iss", "given_name", "family_name"}
        other = ISSUER if key is key2 else key2
        with pytest.raises(vxp.VxpError, match="signature_invalid"):
            vxp.verify_sd_jwt(compact + "~" + disclosures, other, typ="example+sd-jwt", now=NOW)
    kb = first["header"]["kb_jwt"]
    compact = ".".join([first["protected"], general["payload"], first["signature"]])
    bound = vxp.verify_sd_jwt(
        compact + "~" + disclosures + kb, ISSUER, typ="example+sd-jwt", now=NOW, key_binding=policy
    )
    assert bound.key_binding is not None


def _kb_of(case: Path) -> tuple[vxp.KeyBinding | None, int]:
    kb_file = case / "kb_jwt_payload.json"
    if not kb_file.exists():
        return None, 1683000001
    kb = json.loads(kb_file.read_text())
    return vxp.KeyBinding(kb["aud"], kb["nonce"]), kb["iat"]


@pytest.mark.parametrize("case", TESTCASES, ids=[p.name for p in TESTCASES])
def test_sd_jwt_python_testcase(case: Path) -> None:
    presentation = (case / "sd_jwt_presentation.txt").read_text().strip()
    expected = json.loads((case / "verified_contents.json").read_text())
    policy, now = _kb_of(case)
    if case.name == "header_mod":
        # Its header carries an integer kid (42); RFC 7515 §4.1.4 makes kid a string.
        with pytest.raises(vxp.VxpError, match="kid_invalid"):
            vxp.verify_sd_jwt(
                presentation, ISSUER, typ="example+sd-jwt", now=now, key_binding=policy
            )
        return
    result = vxp.verify_sd_jwt(
        presentation, ISSUER, typ="example+sd-jwt", now=now, key_binding=policy
    )
    assert result.claims == expected


@pytest.mark.parametrize("case", TESTCASES, ids=[p.name for p in TESTCASES])
def test_sd_jwt_python_issuance_fully_disclosed(case: Path) -> None:
    """The issuance form (every disclosure) verifies and each presentation is a subset."""
    issuance = (case / "sd_jwt_issuance.txt").read_text().strip()
    if case.name == "header_mod":
        pytest.skip("integer kid, refused above")
    result = vxp.verify_sd_jwt(issuance, ISSUER, typ="example+sd-jwt", now=1683000001)
    user_claims = json.loads((case / "user_claims.json").read_text())
    for name, value in user_claims.items():
        assert result.claims[name] == value


@pytest.mark.parametrize("case", REGENERATED, ids=[p.name for p in REGENERATED])
def test_draft22_regenerated_example(case: Path) -> None:
    # The draft's artifacts are wrapped at 68 columns for the RFC text.
    presentation = "".join((case / "sd_jwt_presentation.txt").read_text().split())
    expected = json.loads((case / "verified_contents.json").read_text())
    policy, now = _kb_of(case)
    typ = json.loads(vxp.codec.b64url_decode(presentation.split(".")[0], "header"))["typ"]
    result = vxp.verify_sd_jwt(presentation, ISSUER, typ=typ, now=now, key_binding=policy)
    assert result.claims == expected
