"""SD-JWT (RFC 9901), docs/spec/vxp.md §3: issuing, presenting, verifying (header, key,
digests, ``_sd_alg`` only at the top, times, key binding with its ``exp``/``nbf``/``iat``),
strictness and attacks, with crafted issuer-signed payloads of any shape."""

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
from tests.vxp import forge

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
    expected = {**CLAIMS, "cnf": {"jwk": HOLDER.as_dict(private=False)}}
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
    return body + forge.jws_json(hdr, claims, key)


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
    bare = forge.jws_json({"alg": "ES256", "typ": TYP}, {"a": 1}, ISSUER)
    assert vxp.verify_sd_jwt(bare + "~", ISSUER, typ=TYP, now=NOW).claims == {"a": 1}
    with pytest.raises(vxp.VxpError, match="issuer_key_ambiguous"):
        vxp.verify_sd_jwt(bare + "~", [other, ISSUER], typ=TYP, now=NOW)
    # A kid that names an Ed25519 key while the header says ES256.
    ed = OKPKey.generate_key("Ed25519")
    mixed = forge.jws_json({"alg": "ES256", "kid": ed.thumbprint(), "typ": TYP}, {}, ISSUER)
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
    signed = forge.jws_json({"alg": "ES256", "typ": TYP}, {"d": deep}, ISSUER)
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


# ---- §3.3 key binding: the KB-JWT's own exp, nbf and iat


def _kb_token(extra: dict[str, Any]) -> tuple[str, ECKey]:
    issuer = vxp.demo_key("kb-issuer")
    holder = vxp.demo_key("kb-holder")
    sd = vxp.issue_sd_jwt({"iss": "x", "n": vxp.Sd(1)}, issuer, typ=TYP, holder_key=holder)
    body = vxp.present_sd_jwt(sd, disclose=None)
    sd_hash = vxp.codec.b64url_encode(hashlib.sha256(body.encode()).digest())
    payload = {"aud": "v", "nonce": "n", "iat": 1000, "sd_hash": sd_hash, **extra}
    return body + forge.jws_json({"alg": "ES256", "typ": "kb+jwt"}, payload, holder), issuer


@pytest.mark.parametrize(
    ("extra", "now", "leeway", "code"),
    [
        ({"exp": 1000}, 1000, 0, "kb_token_expired"),
        ({"exp": 999}, 1000, 0, "kb_token_expired"),
        ({"exp": 999}, 1000, 2, None),
        ({"nbf": 1001}, 1000, 0, "kb_token_not_yet_valid"),
        ({"nbf": 1005}, 1000, 5, None),
        ({"exp": "never"}, 1000, 0, "kb_claim_invalid"),
        ({"nbf": True}, 1000, 0, "kb_claim_invalid"),
        ({"exp": 2000, "nbf": 500}, 1000, 0, None),
    ],
)
def test_kb_jwt_exp_and_nbf_are_enforced(
    extra: dict[str, Any], now: int, leeway: int, code: str | None
) -> None:
    """§3.3: a KB-JWT's ``exp`` and ``nbf`` hold at ``now`` (± the policy's leeway)."""
    token, issuer = _kb_token(extra)
    policy = vxp.KeyBinding(aud="v", nonce="n", leeway=leeway)
    if code is None:
        assert vxp.verify_sd_jwt(token, issuer, typ=TYP, now=now, key_binding=policy).key_binding
    else:
        with pytest.raises(vxp.VxpError) as err:
            vxp.verify_sd_jwt(token, issuer, typ=TYP, now=now, key_binding=policy)
        assert err.value.code == code


def test_kb_iat_too_large_for_a_double_is_refused_not_leaked() -> None:
    """§1, §3.3: an ``iat`` beyond a double is malformed JSON for the KB-JWT: kb_iat_invalid."""
    body = vxp.present_sd_jwt(
        vxp.issue_sd_jwt({"iss": "i"}, ISSUER, typ=TYP, holder_key=HOLDER), disclose=[]
    )
    sd_hash = vxp.codec.b64url_encode(hashlib.sha256(body.encode()).digest())
    for iat in (b"1" + b"0" * 400, b"-1" + b"0" * 400):
        payload = (
            b'{"aud": "https://verifier.example", "nonce": "nonce-1", "iat": '
            + iat
            + b', "sd_hash": "'
            + sd_hash.encode()
            + b'"}'
        )
        token = body + forge.jws(b'{"alg":"ES256","typ":"kb+jwt"}', payload, HOLDER)
        with pytest.raises(vxp.VxpError) as info:
            vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, key_binding=POLICY)
        assert info.value.code == "kb_iat_invalid"


def test_huge_clock_and_window_parameters_raise_vxp_error() -> None:
    """§3.3: ``now``, ``leeway``, ``max_age`` beyond range are the caller's usage errors."""
    token = vxp.issue_sd_jwt({"iss": "i", "exp": NOW + 1.5}, ISSUER, typ=TYP).serialize()
    with pytest.raises(vxp.VxpError, match="now_invalid"):
        vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=10**400)
    with pytest.raises(vxp.VxpError, match="leeway_invalid"):
        vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, leeway=10**400)
    for name in ("max_age", "leeway"):
        with pytest.raises(vxp.VxpError, match="key_binding_invalid"):
            vxp.KeyBinding(aud="a", nonce="n", **{name: 10**400})
    assert vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, leeway=2**32).claims["iss"] == "i"


# ---- §3.3 header and digests: the algorithm allow-list, _sd_alg at the top only


@pytest.mark.parametrize("algorithms", [[["ES256"]], [{"a": 1}], [1], ["ES256", None]])
def test_unhashable_or_non_text_algorithms_raise_vxp_error(algorithms: Any) -> None:
    """§3.3: an allow-list naming anything but algorithm names is algorithms_invalid."""
    token = vxp.issue_sd_jwt({"iss": "i"}, ISSUER, typ=TYP).serialize()
    with pytest.raises(vxp.VxpError) as info:
        vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, algorithms=algorithms)
    assert info.value.code == "algorithms_invalid"


@pytest.mark.parametrize("jws", [None, 42, b"a.b.c", ["a", "b", "c"]])
def test_an_issuer_jwt_that_is_not_text_is_malformed(jws: Any) -> None:
    """§3.3: the issuer-signed JWT of an SD-JWT is text, or malformed_jwt."""
    with pytest.raises(vxp.VxpError, match="malformed_jwt"):
        vxp.present_sd_jwt(vxp.SdJwt(jws, ()), disclose=[])


def _nested_signed(
    payload: dict[str, Any], disclosures: tuple[vxp.sdjwt.Disclosure, ...] = ()
) -> str:
    key = vxp.demo_key("nested")
    header = {"alg": "ES256", "kid": vxp.key_thumbprint(key), "typ": TYP}
    return vxp.SdJwt(forge.jws_json(header, payload, key), disclosures).serialize()


@pytest.mark.parametrize(
    "payload",
    [
        {"_sd_alg": "sha-256", "a": {"_sd_alg": "sha-256"}},
        {"a": {"b": {"_sd_alg": "sha-256"}}},
        {"_sd_alg": "sha-256", "list": [{"_sd_alg": "sha-256"}]},
    ],
)
def test_nested_sd_alg_is_refused(payload: dict[str, Any]) -> None:
    """§3.3 (RFC 9901 §4.1.1): ``_sd_alg`` anywhere but the top level is sd_alg_misplaced."""
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(_nested_signed(payload), vxp.demo_key("nested"), typ=TYP, now=0)
    assert err.value.code == "sd_alg_misplaced"


def test_nested_sd_alg_inside_a_disclosure_is_refused() -> None:
    """§3.3: nor inside a disclosed value, nor as a disclosed claim name."""
    inner = vxp.sdjwt.Disclosure.create("salt", "x", {"_sd_alg": "sha-256"})
    payload = {"_sd_alg": "sha-256", "_sd": [inner.digest()]}
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(_nested_signed(payload, (inner,)), vxp.demo_key("nested"), typ=TYP, now=0)
    assert err.value.code == "sd_alg_misplaced"
    named = vxp.sdjwt.Disclosure.create("salt", "_sd_alg", "sha-256")
    payload = {"_sd_alg": "sha-256", "a": {"_sd": [named.digest()]}}
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(_nested_signed(payload, (named,)), vxp.demo_key("nested"), typ=TYP, now=0)
    assert err.value.code in ("sd_alg_misplaced", "claim_name_reserved")


def test_top_level_sd_alg_still_accepted() -> None:
    """§3.3: ``_sd_alg`` at the top level is read and removed."""
    claims = vxp.verify_sd_jwt(
        _nested_signed({"_sd_alg": "sha-256", "a": {"b": 1}}),
        vxp.demo_key("nested"),
        typ=TYP,
        now=0,
    ).claims
    assert claims == {"a": {"b": 1}}


def test_disclosure_digest_refuses_unknown_algorithm() -> None:
    """§3.3: only the supported hash names a digest (sd_alg_unsupported)."""
    d = vxp.sdjwt.Disclosure.create("salt", "name", "value")
    with pytest.raises(vxp.VxpError, match="sd_alg_unsupported"):
        d.digest("sha-512")


def test_mark_disclosable_refuses_claims_too_deep_to_copy() -> None:
    """§3.1: claims nest at most 64 levels (claims_too_deep, never a RecursionError)."""
    claims: dict[str, Any] = {}
    node = claims
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(vxp.VxpError, match="claims_too_deep"):
        vxp.sdjwt.mark_disclosable(claims, [["a"]])


# ---- §3.3 crafted issuer-signed payloads of any shape

_DIGEST_POOL = st.sampled_from(["A" * 43, "x", "", 7, None, "A" * 42 + "B"])
_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.text(max_size=5), _DIGEST_POOL
)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["_sd", "...", "_sd_alg", "a", "exp", "cnf", "iat"]), inner, max_size=3
        ),
    ),
    max_leaves=12,
)


def _has_placeholder(value: Any, top: bool = False) -> bool:
    if isinstance(value, dict):
        if "_sd" in value or "..." in value or (top and "_sd_alg" in value):
            return True
        return any(_has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_placeholder(v) for v in value)
    return False


@settings(max_examples=150, deadline=None)
@given(
    payload=st.dictionaries(st.sampled_from(["_sd", "a", "b", "...", "cnf", "exp"]), _json),
    items=st.lists(st.lists(_json, min_size=0, max_size=4), max_size=4),
    refs=st.lists(st.tuples(st.sampled_from(["_sd", "array", "nested"]), st.integers(0, 5))),
)
def test_crafted_signed_payloads_raise_only_vxp_error(
    payload: dict[str, Any], items: list[list[Any]], refs: list[tuple[str, int]]
) -> None:
    """§3.3: an issuer-signed payload of any shape, with digests of real disclosures wired
    in: a VxpError or a token whose every disclosure was used once, no placeholder left."""
    b64 = vxp.codec.b64url_encode
    disclosures = [b64(json.dumps(item).encode()) for item in items]
    digests = [b64(hashlib.sha256(d.encode()).digest()) for d in disclosures]
    for where, i in refs:
        if not digests:
            break
        digest = digests[i % len(digests)]
        if where == "_sd":
            payload.setdefault("_sd", [])
            if isinstance(payload["_sd"], list):
                payload["_sd"].append(digest)
        elif where == "array":
            payload.setdefault("arr", [])
            if isinstance(payload["arr"], list):
                payload["arr"].append({"...": digest})
        else:
            payload["obj"] = {"_sd": [digest], "x": [{"...": digest}]}
    header = json.dumps({"alg": "ES256", "typ": TYP}).encode()
    jws = forge.jws(header, json.dumps(payload).encode(), ISSUER)
    token = jws + "~" + "".join(d + "~" for d in disclosures)
    try:
        result = vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW)
    except vxp.VxpError:
        return
    assert len(result.disclosures) == len(disclosures)
    assert not _has_placeholder(result.claims, top=True)
