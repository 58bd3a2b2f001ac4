"""SD-JWT (RFC 9901): issuing, presenting, verifying, strictness and attacks."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jws
from joserfc.jwk import ECKey, OKPKey

import vxp
from vxp._jws import sign_compact
from vxp._keys import resolve_key

TYP = "vxp-stmt+sd-jwt"
NOW = 1_780_000_000
ISSUER = ECKey.generate_key("P-256")
HOLDER = ECKey.generate_key("P-256")
POLICY = vxp.KeyBinding(aud="https://verifier.example", nonce="nonce-1")

CLAIMS = {
    "iss": "https://issuer.example",
    "iat": NOW - 10,
    "exp": NOW + 3600,
    "given_name": "Ada",
    "address": {"street": "1 Main St", "city": "Anytown"},
    "nationalities": ["ES", "PT"],
}
PATHS = [["given_name"], ["address"], ["address", "street"], ["nationalities", 1]]


class Counter:
    """A deterministic random source: SHA-256 of a counter."""

    def __init__(self, label: str = "salts") -> None:
        self.label = label
        self.n = 0
        self.draws: list[int] = []

    def __call__(self, size: int) -> bytes:
        self.n += 1
        self.draws.append(size)
        return hashlib.sha256(f"{self.label}{self.n}".encode()).digest()[:size]


def _issue(decoys: int = 1, holder: Any = HOLDER, **kw: Any) -> vxp.SdJwt:
    claims = vxp.sdjwt.mark_disclosable(CLAIMS, PATHS)
    return vxp.issue_sd_jwt(
        claims, ISSUER, typ=TYP, rng=Counter(), decoys=decoys, holder_key=holder, **kw
    )


def _verify(token: str, **kw: Any) -> vxp.VerifiedSdJwt:
    kw.setdefault("typ", TYP)
    kw.setdefault("now", NOW)
    return vxp.verify_sd_jwt(token, ISSUER, **kw)


def _bound(disclose: list[list[str | int]] | None = None) -> str:
    return vxp.present_sd_jwt(
        _issue(), disclose=disclose, holder_key=HOLDER, aud=POLICY.aud, nonce=POLICY.nonce, iat=NOW
    )


def _payload(token: str) -> dict[str, Any]:
    return json.loads(vxp.codec.b64url_decode(token.split(".")[1], "payload"))


# ---------------------------------------------------------------------------- issuing


def test_roundtrip_all_disclosed() -> None:
    token = _issue()
    result = _verify(token.serialize())
    expected = {**CLAIMS, "cnf": {"jwk": resolve_key(HOLDER).public_jwk}}
    assert result.claims == expected
    assert result.kid == ISSUER.thumbprint()
    assert len(result.disclosures) == 4


def test_header_payload_and_determinism() -> None:
    token = _issue()
    header = json.loads(vxp.codec.b64url_decode(token.jws.split(".")[0], "header"))
    assert header == {"alg": "ES256", "kid": ISSUER.thumbprint(), "typ": TYP}
    payload_bytes = vxp.codec.b64url_decode(token.jws.split(".")[1], "payload")
    assert rfc8785.dumps(json.loads(payload_bytes)) == payload_bytes
    payload = json.loads(payload_bytes)
    assert payload["_sd_alg"] == "sha-256"
    assert payload["_sd"] == sorted(payload["_sd"])
    assert len(payload["_sd"]) == 2 + 1  # given_name, address, one decoy
    assert len(payload["nationalities"]) == 3  # ES, one hidden element, one decoy
    assert _issue().serialize() == token.serialize()  # RFC 6979 + the same random source
    # joserfc, the oracle, verifies our signature.
    assert jws.deserialize_compact(token.jws, ISSUER, algorithms=["ES256"]).payload == payload_bytes
    randomized = vxp.issue_sd_jwt(CLAIMS, ISSUER, typ=TYP, rng=Counter(), deterministic=False)
    assert (
        randomized.jws
        != vxp.issue_sd_jwt(CLAIMS, ISSUER, typ=TYP, rng=Counter(), deterministic=False).jws
    )
    _verify(randomized.serialize())


def test_random_source_order_and_salts() -> None:
    rng = Counter()
    token = vxp.issue_sd_jwt(
        vxp.sdjwt.mark_disclosable(CLAIMS, PATHS), ISSUER, typ=TYP, rng=rng, decoys=2
    )
    # 4 salts + 2 decoys for the top object, 2 for address's _sd, 2 for the array.
    assert rng.draws == [16] * 10
    salts = {d.salt for d in token.disclosures}
    assert len(salts) == 4
    assert all(len(vxp.codec.b64url_decode(s, "salt")) == 16 for s in salts)
    names = [d.name for d in token.disclosures]
    # inner values before their containing claim; member names in JCS order
    assert names == ["street", "address", "given_name", None]


def test_ed25519_issuer_needs_eddsa_in_allow_list() -> None:
    key = OKPKey.generate_key("Ed25519")
    token = vxp.issue_sd_jwt({"a": vxp.Sd(1)}, key, typ=TYP, rng=Counter()).serialize()
    with pytest.raises(vxp.VxpError, match="alg_not_allowed"):
        vxp.verify_sd_jwt(token, key, typ=TYP, now=NOW)
    assert vxp.verify_sd_jwt(token, key, typ=TYP, now=NOW, algorithms=["EdDSA"]).claims == {"a": 1}


@pytest.mark.parametrize(
    ("claims", "code"),
    [
        ({"_sd": []}, "claim_name_reserved"),
        ({"a": {"...": 1}}, "claim_name_reserved"),
        ({"_sd_alg": "sha-256"}, "claim_name_reserved"),
        ({"a": vxp.Sd(vxp.Sd(1))}, "sd_misplaced"),
        ({"a": float("nan")}, "not_canonicalizable"),
        ({"a": {1: 2}}, "claims_invalid"),
        ([], "claims_invalid"),
    ],
)
def test_issuer_refuses(claims: Any, code: str) -> None:
    with pytest.raises(vxp.VxpError) as info:
        vxp.issue_sd_jwt(claims, ISSUER, typ=TYP, rng=Counter())
    assert info.value.code == code


def test_issuer_refuses_bad_parameters() -> None:
    with pytest.raises(vxp.VxpError, match="random_source_invalid"):
        vxp.issue_sd_jwt({"a": vxp.Sd(1)}, ISSUER, typ=TYP, rng=lambda n: b"short")
    with pytest.raises(vxp.VxpError, match="decoys_invalid"):
        vxp.issue_sd_jwt({}, ISSUER, typ=TYP, decoys=-1)
    with pytest.raises(vxp.VxpError, match="key_not_private"):
        vxp.issue_sd_jwt({}, ISSUER.as_dict(private=False), typ=TYP)
    with pytest.raises(vxp.VxpError, match="typ_invalid"):
        vxp.issue_sd_jwt({}, ISSUER, typ="")
    with pytest.raises(vxp.VxpError, match="key_unsupported"):
        vxp.issue_sd_jwt({}, ECKey.generate_key("P-384"), typ=TYP)
    with pytest.raises(vxp.VxpError, match="claims_invalid"):
        vxp.issue_sd_jwt({"cnf": {}}, ISSUER, typ=TYP, holder_key=HOLDER)
    for paths in ([["nope"]], [[]], [["address"], ["address"]], [["nationalities", 5]]):
        with pytest.raises(vxp.VxpError, match="sd_path_invalid"):
            vxp.sdjwt.mark_disclosable(CLAIMS, paths)


# ---------------------------------------------------------------------------- presenting


def test_presentation_subsets() -> None:
    token = _issue()
    only_street = vxp.present_sd_jwt(token, disclose=[["address", "street"]])
    claims = _verify(only_street).claims
    assert claims["address"] == {"street": "1 Main St", "city": "Anytown"}
    assert "given_name" not in claims
    assert claims["nationalities"] == ["ES"]
    nothing = _verify(vxp.present_sd_jwt(token, disclose=[])).claims
    assert set(nothing) == {"iss", "iat", "exp", "nationalities", "cnf"}
    address_only = _verify(vxp.present_sd_jwt(token.serialize(), disclose=[["address"]])).claims
    assert address_only["address"]["street"] == "1 Main St"  # inside the chosen subtree
    assert _verify(vxp.present_sd_jwt(token, disclose=[["nationalities", 1]])).claims[
        "nationalities"
    ] == ["ES", "PT"]
    with pytest.raises(vxp.VxpError, match="disclose_path_unknown"):
        vxp.present_sd_jwt(token, disclose=[["iss"]])


def test_key_binding_roundtrip() -> None:
    token = _bound([["given_name"]])
    result = _verify(token, key_binding=POLICY)
    assert result.claims["given_name"] == "Ada"
    assert result.key_binding is not None
    assert set(result.key_binding) == {"iat", "aud", "nonce", "sd_hash"}
    kb_header = json.loads(vxp.codec.b64url_decode(token.split("~")[-1].split(".")[0], "kb header"))
    assert kb_header == {"alg": "ES256", "typ": "kb+jwt"}
    # joserfc verifies the KB-JWT with the cnf key.
    jws.deserialize_compact(token.split("~")[-1], HOLDER, algorithms=["ES256"])


def test_holder_errors() -> None:
    token = _issue()
    with pytest.raises(vxp.VxpError, match="holder_key_mismatch"):
        vxp.present_sd_jwt(token, holder_key=ISSUER, aud="a", nonce="n", iat=1)
    with pytest.raises(vxp.VxpError, match="kb_cnf_missing"):
        vxp.present_sd_jwt(_issue(holder=None), holder_key=HOLDER, aud="a", nonce="n", iat=1)
    with pytest.raises(vxp.VxpError, match="holder_key_missing"):
        vxp.present_sd_jwt(token, nonce="n")
    with pytest.raises(vxp.VxpError, match="kb_claims_invalid"):
        vxp.present_sd_jwt(token, holder_key=HOLDER, aud="a", nonce="n", iat=None)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda t: t[: t.rindex("~") + 1], "kb_jwt_missing"),
        (lambda t: t.split("~")[0] + "~" + t.split("~")[-1], "kb_sd_hash_mismatch"),
    ],
)
def test_key_binding_tampering(change: Any, code: str) -> None:
    with pytest.raises(vxp.VxpError) as info:
        _verify(change(_bound()), key_binding=POLICY)
    assert info.value.code == code


@pytest.mark.parametrize(
    ("policy", "now", "code"),
    [
        (vxp.KeyBinding("https://verifier.example", "other"), NOW, "kb_nonce_mismatch"),
        (vxp.KeyBinding("https://else.example", "nonce-1"), NOW, "kb_aud_mismatch"),
        (POLICY, NOW + 301, "kb_iat_invalid"),
        (POLICY, NOW - 1, "kb_iat_invalid"),
        (vxp.KeyBinding("https://verifier.example", "nonce-1", leeway=5), NOW - 5, None),
        (None, NOW, "kb_jwt_unexpected"),
    ],
)
def test_key_binding_policy(policy: vxp.KeyBinding | None, now: int, code: str | None) -> None:
    token = _bound()
    if code is None:
        _verify(token, key_binding=policy, now=now)
        return
    with pytest.raises(vxp.VxpError) as info:
        _verify(token, key_binding=policy, now=now)
    assert info.value.code == code


def _kb(header: dict[str, Any] | None = None, key: Any = HOLDER, **payload: Any) -> str:
    body = vxp.present_sd_jwt(_issue(), disclose=[])
    sd_hash = vxp.codec.b64url_encode(hashlib.sha256(body.encode()).digest())
    claims = {"aud": POLICY.aud, "nonce": POLICY.nonce, "iat": NOW, "sd_hash": sd_hash, **payload}
    hdr = {"alg": "ES256", "typ": "kb+jwt", **(header or {})}
    return body + sign_compact(hdr, claims, resolve_key(key), deterministic=True)


@pytest.mark.parametrize(
    ("token", "code"),
    [
        (_kb({"typ": "JWT"}), "kb_typ_invalid"),
        (_kb({"alg": "none"}), "kb_alg_none"),
        (_kb({"alg": "EdDSA"}), "kb_alg_not_allowed"),
        (_kb({"crit": ["b64"]}), "kb_crit_unsupported"),
        (_kb(key=ISSUER), "kb_signature_invalid"),
        (_kb(iat="now"), "kb_iat_invalid"),
        (_kb(iat=True), "kb_iat_invalid"),
        (_kb(sd_hash="x"), "kb_sd_hash_mismatch"),
        (_kb(nonce=None), "kb_nonce_mismatch"),
        (_kb(aud=[POLICY.aud]), "kb_aud_mismatch"),
    ],
)
def test_bad_kb_jwts(token: str, code: str) -> None:
    with pytest.raises(vxp.VxpError) as info:
        _verify(token, key_binding=POLICY)
    assert info.value.code == code


# ---------------------------------------------------------------------------- verifying


def test_time_checks() -> None:
    token = _issue().serialize()
    with pytest.raises(vxp.VxpError, match="token_expired"):
        _verify(token, now=CLAIMS["exp"])
    _verify(token, now=CLAIMS["exp"] - 1)
    _verify(token, now=CLAIMS["exp"], leeway=1)
    with pytest.raises(vxp.VxpError, match="token_issued_in_future"):
        _verify(token, now=CLAIMS["iat"] - 1)
    nbf = vxp.issue_sd_jwt({"nbf": NOW + 5}, ISSUER, typ=TYP).serialize()
    with pytest.raises(vxp.VxpError, match="token_not_yet_valid"):
        _verify(nbf)
    _verify(nbf, now=NOW + 5)
    with pytest.raises(vxp.VxpError, match="exp_missing"):
        _verify(nbf, now=NOW + 5, require_exp=True)
    with pytest.raises(vxp.VxpError, match="now_invalid"):
        _verify(token, now=None)


def test_issuer_key_selection() -> None:
    token = _issue().serialize()
    other = ECKey.generate_key("P-256")
    assert vxp.verify_sd_jwt(token, [other, ISSUER], typ=TYP, now=NOW).kid == ISSUER.thumbprint()
    with pytest.raises(vxp.VxpError, match="issuer_key_unknown"):
        vxp.verify_sd_jwt(token, [other], typ=TYP, now=NOW)
    # No kid: exactly one trusted key, never a guess among several.
    bare = sign_compact(
        {"alg": "ES256", "typ": TYP}, {"a": 1}, resolve_key(ISSUER), deterministic=True
    )
    assert vxp.verify_sd_jwt(bare + "~", ISSUER, typ=TYP, now=NOW).claims == {"a": 1}
    with pytest.raises(vxp.VxpError, match="issuer_key_ambiguous"):
        vxp.verify_sd_jwt(bare + "~", [other, ISSUER], typ=TYP, now=NOW)
    # A kid that names an Ed25519 key while the header says ES256.
    ed = OKPKey.generate_key("Ed25519")
    mixed = sign_compact(
        {"alg": "ES256", "kid": ed.thumbprint(), "typ": TYP},
        {},
        resolve_key(ISSUER),
        deterministic=True,
    )
    with pytest.raises(vxp.VxpError, match="alg_key_mismatch"):
        vxp.verify_sd_jwt(mixed + "~", [ed], typ=TYP, now=NOW, algorithms=["ES256", "EdDSA"])


@pytest.mark.parametrize("algorithms", [[], ["none"], ["ES256", "none"], ["HS256"], "ES256", None])
def test_allow_list_must_be_explicit_and_implemented(algorithms: Any) -> None:
    with pytest.raises(vxp.VxpError, match="algorithms_invalid"):
        _verify(_issue().serialize(), algorithms=algorithms)


def test_typ_none_skips_the_typ_check_only() -> None:
    token = _issue().serialize()
    assert _verify(token, typ=None).claims["iss"] == CLAIMS["iss"]
    with pytest.raises(vxp.VxpError, match="typ_mismatch"):
        _verify(token, typ="dc+sd-jwt")


@pytest.mark.parametrize(
    "value",
    [None, 5, b"bytes", "", "~", "a.b.c~", "..~", "~~", "é~", "eyJ9.eyJ9.AA~", ["x"]],
)
def test_garbage_raises_only_vxp_error(value: Any) -> None:
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(value, ISSUER, typ=TYP, now=NOW)


@pytest.mark.parametrize(
    "keys", [None, 5, "key", {"kty": "RSA"}, {"kty": "EC", "crv": "P-256"}, [None]]
)
def test_bad_keys_raise_only_vxp_error(keys: Any) -> None:
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(_issue().serialize(), keys, typ=TYP, now=NOW)


def test_disclosure_parsing_is_strict() -> None:
    good = vxp.sdjwt.Disclosure.create("c2FsdA", "name", "Ada")
    assert vxp.sdjwt.Disclosure.parse(good.encoded) == good
    for bad in (good.encoded + "=", good.encoded + " ", "+" + good.encoded[1:], "", "A"):
        with pytest.raises(vxp.VxpError, match="disclosure_malformed"):
            vxp.sdjwt.Disclosure.parse(bad)
    # the same JSON text with non-zero trailing bits in its last character
    last = good.encoded[-1]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    if len(good.encoded) % 4 in (2, 3):
        twin = good.encoded[:-1] + alphabet[alphabet.index(last) | 1]
        if twin != good.encoded:
            with pytest.raises(vxp.VxpError, match="disclosure_malformed"):
                vxp.sdjwt.Disclosure.parse(twin)


# ---------------------------------------------------------------------------- properties

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~="


def _rejects(token: str) -> bool:
    try:
        _verify(token, key_binding=POLICY)
    except vxp.VxpError:
        return True
    return False


BOUND = _bound([["address", "street"], ["nationalities", 1]])


def test_every_position_of_a_bound_presentation_is_protected() -> None:
    """Exhaustively: changing any one character anywhere (JWT, disclosure, KB-JWT) fails."""
    assert not _rejects(BOUND)
    for i, char in enumerate(BOUND):
        replacement = "A" if char != "A" else "B"
        assert _rejects(BOUND[:i] + replacement + BOUND[i + 1 :]), i


@settings(max_examples=300)
@given(st.data())
def test_any_single_change_is_rejected(data: st.DataObject) -> None:
    i = data.draw(st.integers(min_value=0, max_value=len(BOUND) - 1))
    char = data.draw(st.sampled_from(ALPHABET).filter(lambda c: c != BOUND[i]))
    assert _rejects(BOUND[:i] + char + BOUND[i + 1 :])


@settings(max_examples=100)
@given(st.data())
def test_any_deletion_or_insertion_is_rejected(data: st.DataObject) -> None:
    i = data.draw(st.integers(min_value=0, max_value=len(BOUND) - 1))
    char = data.draw(st.sampled_from(ALPHABET))
    assert _rejects(BOUND[:i] + BOUND[i + 1 :])
    assert _rejects(BOUND[:i] + char + BOUND[i:])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


# reserved names, and time claims (whose values the verifier checks)
RESERVED_OR_TIMED = ("_sd", "...", "_sd_alg", "exp", "nbf", "iat")


def _has_reserved(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in ("_sd", "...", "_sd_alg") or _has_reserved(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_reserved(v) for v in value)
    return False


@settings(max_examples=60)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=6).filter(lambda k: k not in RESERVED_OR_TIMED),
        json_values,
        min_size=1,
        max_size=5,
    ),
    st.data(),
)
def test_random_claims_roundtrip(claims: dict[str, Any], data: st.DataObject) -> None:
    hide = data.draw(st.lists(st.sampled_from(sorted(claims)), unique=True))
    marked = vxp.sdjwt.mark_disclosable(claims, [[k] for k in hide])
    if any(_has_reserved(claims[k]) for k in claims):
        with pytest.raises(vxp.VxpError, match="claim_name_reserved"):
            vxp.issue_sd_jwt(marked, ISSUER, typ=TYP, rng=Counter(), decoys=1)
        return
    token = vxp.issue_sd_jwt(marked, ISSUER, typ=TYP, rng=Counter(), decoys=1)
    assert _verify(token.serialize()).claims == claims
    shown = vxp.present_sd_jwt(token, disclose=[])
    assert set(_verify(shown).claims) == set(claims) - set(hide)


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_fuzz_text_never_leaks_other_errors(text: str) -> None:
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(text, ISSUER, typ=TYP, now=NOW)


def test_depth_and_parameter_limits() -> None:
    deep: Any = "x"
    for _ in range(100):
        deep = {"a": deep}
    with pytest.raises(vxp.VxpError, match="claims_too_deep"):
        vxp.issue_sd_jwt({"d": deep}, ISSUER, typ=TYP)
    signed = sign_compact(
        {"alg": "ES256", "typ": TYP}, {"d": deep}, resolve_key(ISSUER), deterministic=True
    )
    with pytest.raises(vxp.VxpError, match="claims_too_deep"):
        _verify(signed + "~")
    with pytest.raises(vxp.VxpError, match="now_invalid"):
        _verify(_issue().serialize(), now=float("nan"))
    with pytest.raises(vxp.VxpError, match="leeway_invalid"):
        _verify(_issue().serialize(), leeway=-5)
    with pytest.raises(vxp.VxpError, match="key_binding_invalid"):
        vxp.KeyBinding("a", "n", max_age=-1)
    with pytest.raises(vxp.VxpError, match="key_binding_invalid"):
        vxp.KeyBinding("a", None)  # type: ignore[arg-type]


@pytest.mark.parametrize("paths", [5, "given_name", [5], [["a", None]], [[True]], {"a": 1}])
def test_bad_paths_raise_only_vxp_error(paths: Any) -> None:
    with pytest.raises(vxp.VxpError, match="sd_path_invalid"):
        vxp.sdjwt.mark_disclosable(CLAIMS, paths)
    with pytest.raises(vxp.VxpError, match="sd_path_invalid"):
        vxp.present_sd_jwt(_issue(), disclose=paths)


@settings(max_examples=300)
@given(st.binary(max_size=40), st.text(max_size=12))
def test_base64url_is_one_to_one(data: bytes, noise: str) -> None:
    text = vxp.codec.b64url_encode(data)
    assert vxp.codec.b64url_decode(text, "x") == data
    for candidate in (text + noise, noise + text, text + "=", text.replace("-", "+")):
        if candidate == text:
            continue
        try:
            decoded = vxp.codec.b64url_decode(candidate, "x")
        except vxp.VxpError:
            continue
        # anything else that decodes is itself the canonical text of what it decodes to
        assert vxp.codec.b64url_encode(decoded) == candidate
