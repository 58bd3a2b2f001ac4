"""VXP building blocks §2 keys (docs/spec/vxp.md): one canonical spelling per key (one key
cannot pass for two), a caller's key read once as a snapshot, no Ed25519 key of small order,
ES256 signatures as raw ``r || s``, no P-256 point off the curve; and §5.1, whose key it
is decides the kind of error."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import threading
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from joserfc.jwk import ECKey, OKPKey

import vxp
from tests.vxp import forge
from vxp import demo_operation
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
    canonical_kid = vxp.key_thumbprint(_ec_jwk(x, y))
    for respelled in (_ec_jwk(x + _P, y), _ec_jwk(x, y + _P) if y + _P < 2**256 else None):
        if respelled is None:
            continue
        with pytest.raises(vxp.VxpError) as info:
            vxp.key_thumbprint(respelled)
        assert info.value.code == "key_invalid"
        with pytest.raises(vxp.VxpError) as info:
            vxp.IssuerKeys([respelled])
        assert info.value.code == "key_invalid"
    jwks = {"keys": [{**_ec_jwk(x + _P, y), "kid": canonical_kid}]}
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
                    "log": {"origin": "o", "kid": canonical_kid, "witnesses": [], "quorum": 1},
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


# ---- §2 (ours): a JWK mapping is read once, as a snapshot


def _two_keys() -> tuple[dict[str, Any], dict[str, Any], ECKey]:
    key_a = vxp.demo_key("finding1-a")
    key_b = vxp.demo_key("finding1-b")
    return key_a.as_dict(private=False), key_b.as_dict(private=False), key_b


class _LyingJwk(dict):  # type: ignore[type-arg]
    """A JWK whose ``get`` answers with another key's members than its items."""

    def __init__(self, items: dict[str, Any], lie: dict[str, Any]) -> None:
        super().__init__(items)
        self._lie = lie

    def get(self, name: Any, default: Any = None) -> Any:
        return self._lie.get(name, default)


def test_lying_mapping_never_files_one_key_under_another() -> None:
    """§2: whatever a lying mapping answers, one key never passes for another."""
    jwk_a, jwk_b, key_b = _two_keys()
    token_b = vxp.issue_sd_jwt({"iss": "x"}, key_b, typ="t").serialize()
    lying = _LyingJwk(jwk_b, jwk_a)  # get() says A, items say B
    with contextlib.suppress(vxp.VxpError):
        vxp.verify_sd_jwt(token_b, lying, typ="t", now=0)
    # whatever the lying mapping did, key A never accepts B's signature afterwards
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(token_b, dict(jwk_a), typ="t", now=0)
    assert err.value.code in ("issuer_key_unknown", "signature_invalid")
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(token_b, vxp.IssuerKeys([dict(jwk_a)]), typ="t", now=0)


def test_lying_mapping_is_read_once_as_a_snapshot() -> None:
    """§2: everything derived from a JWK comes from one snapshot of its items."""
    jwk_a, jwk_b, key_b = _two_keys()
    keys = vxp.IssuerKeys([_LyingJwk(jwk_b, jwk_a)])
    assert keys.kids == (vxp.key_thumbprint(jwk_b),)
    token_b = vxp.issue_sd_jwt({"iss": "x"}, key_b, typ="t").serialize()
    assert vxp.verify_sd_jwt(token_b, keys, typ="t", now=0).claims == {"iss": "x"}


def test_thread_mutating_a_jwk_in_place_poisons_nothing() -> None:
    """§2: another thread changing a JWK in place cannot make key A accept B's token."""
    jwk_a, jwk_b, key_b = _two_keys()
    token_b = vxp.issue_sd_jwt({"iss": "x"}, key_b, typ="t").serialize()
    shared = dict(jwk_a)
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            shared.update(jwk_b)
            shared.update(jwk_a)

    thread = threading.Thread(target=flip)
    thread.start()
    try:
        for _ in range(300):
            with contextlib.suppress(vxp.VxpError):
                vxp.verify_sd_jwt(token_b, shared, typ="t", now=0)
    finally:
        stop.set()
        thread.join()
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(token_b, dict(jwk_a), typ="t", now=0)


@pytest.mark.parametrize(
    "jwk",
    [
        {"kty": "EC", "crv": "P-256", "x": ["a"], "y": "b"},
        {"kty": "EC", "crv": {"n": 1}, "x": "a", "y": "b"},
        {"kty": ["OKP"], "crv": "Ed25519", "x": "a"},
    ],
)
def test_unhashable_jwk_members_raise_vxp_error(jwk: dict[str, Any]) -> None:
    """§2: a JWK of any shape is refused with a VxpError, never a TypeError."""
    with pytest.raises(vxp.VxpError):
        vxp.key_thumbprint(jwk)


# ---- §2 (ours): no Ed25519 key of small order, no non-canonical encoding

_P25519 = 2**255 - 19
_SMALL_ORDER = [
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
]
_NON_CANONICAL = [
    (_P25519).to_bytes(32, "little").hex(),  # y = p, i.e. 0
    (_P25519 + 1).to_bytes(32, "little").hex(),  # y = p + 1, i.e. 1
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
]
_FORGED = bytes([1]) + bytes(63)  # R = identity, S = 0
_POLICY = vxp.KeyBinding(aud="https://verifier.example", nonce="n-1")
_NOW = 1_780_000_000


def _ed_jwk(hex_x: str) -> dict[str, str]:
    return {"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(bytes.fromhex(hex_x))}


def _issuer_token(payload: dict[str, Any]) -> str:
    """A token ISSUER signed over ``payload`` as given (no disclosures)."""
    return (
        forge.jws(
            json.dumps({"alg": "ES256", "typ": "t"}).encode(), json.dumps(payload).encode(), ISSUER
        )
        + "~"
    )


def test_openssl_accepts_forgeries_under_small_order_keys() -> None:
    """§2, why the check exists: under each small-order key some message verifies R=O, S=0."""
    for hex_x in _SMALL_ORDER:
        try:
            public = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(hex_x))
        except ValueError:
            continue  # this encoding is refused outright by the library
        forged = 0
        for i in range(64):
            try:
                public.verify(_FORGED, f"message {i}".encode())
                forged += 1
            except InvalidSignature:
                pass
        assert forged, hex_x


@pytest.mark.parametrize("hex_x", _SMALL_ORDER + _NON_CANONICAL)
def test_small_order_and_non_canonical_ed25519_keys_are_refused(hex_x: str) -> None:
    """§2: a small-order or non-canonical Ed25519 key is key_invalid wherever it is taken."""
    with pytest.raises(vxp.VxpError) as info:
        vxp.key_thumbprint(_ed_jwk(hex_x))
    assert info.value.code in ("key_invalid", "key_unsupported")


def test_ordinary_ed25519_keys_still_resolve() -> None:
    """§2: the check refuses only the weak keys: ordinary Ed25519 keys sign and verify."""
    for i in range(50):
        seed = hashlib.sha256(f"seed {i}".encode()).digest()
        key = OKPKey.import_key(ed25519.Ed25519PrivateKey.from_private_bytes(seed))
        token = vxp.issue_sd_jwt({"iss": "i"}, key, typ="t").serialize()
        public = key.as_dict(private=False)
        verified = vxp.verify_sd_jwt(token, public, typ="t", now=0, algorithms=["EdDSA"])
        assert verified.kid == vxp.key_thumbprint(public)


def test_small_order_cnf_key_cannot_bind_a_presentation() -> None:
    """§2, §3.3: a small-order ``cnf.jwk`` is kb_cnf_invalid (the forged KB-JWT never counts)."""
    weak = _ed_jwk(_SMALL_ORDER[0])
    body = _issuer_token({"iss": "i", "_sd_alg": "sha-256", "cnf": {"jwk": weak}})
    kb_payload = {
        "aud": _POLICY.aud,
        "iat": _NOW,
        "nonce": _POLICY.nonce,
        "sd_hash": b64url_encode(hashlib.sha256(body.encode()).digest()),
    }
    signing_input = (
        b64url_encode(b'{"alg":"EdDSA","typ":"kb+jwt"}')
        + "."
        + b64url_encode(json.dumps(kb_payload).encode())
    )
    token = body + signing_input + "." + b64url_encode(_FORGED)
    with pytest.raises(vxp.VxpError) as info:
        vxp.verify_sd_jwt(
            token, ISSUER, typ="t", now=_NOW, key_binding=_POLICY, algorithms=["ES256", "EdDSA"]
        )
    assert info.value.code == "kb_cnf_invalid"


def test_small_order_log_and_witness_keys_are_refused() -> None:
    """§2, §4.3: a small-order log or witness key never verifies the forged R=O, S=0."""
    weak = _ed_jwk(_SMALL_ORDER[0])
    cp = vxp.checkpoints.Checkpoint("log/a", 5, b"\x42" * 32)
    kid = OKPKey.import_key(weak).thumbprint()
    forged = vxp.checkpoints.SignedCheckpoint(cp, kid, "EdDSA", _FORGED)
    with pytest.raises(vxp.VxpError, match="key_invalid"):
        vxp.checkpoints.verify_checkpoint(forged, weak)
    cosig = vxp.checkpoints.Cosignature(kid, "EdDSA", 1, _FORGED)
    with pytest.raises(vxp.VxpError, match="key_invalid"):
        vxp.checkpoints.verify_cosignatures(
            vxp.checkpoints.SignedCheckpoint(cp, kid, "EdDSA", _FORGED, (cosig,)), [weak], quorum=1
        )


# ---- §2 (ours): ES256 signatures are raw r || s; P-256 points lie on the curve


def _es256_parts(token: str) -> tuple[str, int, int]:
    jws = token.split("~")[0]
    signing_input, sig = jws.rsplit(".", 1)
    raw = vxp.codec.b64url_decode(sig, "sig")
    return signing_input, int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")


def test_der_signatures_are_refused_and_high_s_is_accepted() -> None:
    """§2: raw r||s only; both s and n - s verify (JOSE has no low-S rule)."""
    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    token = vxp.issue_sd_jwt({"iss": "i"}, ISSUER, typ="t").serialize()
    signing_input, r, s = _es256_parts(token)
    der = signing_input + "." + b64url_encode(encode_dss_signature(r, s)) + "~"
    with pytest.raises(vxp.VxpError, match="signature_invalid"):
        vxp.verify_sd_jwt(der, ISSUER, typ="t", now=_NOW)
    for bad_r, bad_s in ((0, s), (r, 0), (r, n), (n, s)):
        sig = bad_r.to_bytes(32, "big") + bad_s.to_bytes(32, "big")
        with pytest.raises(vxp.VxpError, match="signature_invalid"):
            vxp.verify_sd_jwt(
                signing_input + "." + b64url_encode(sig) + "~", ISSUER, typ="t", now=_NOW
            )
    flipped = r.to_bytes(32, "big") + (n - s).to_bytes(32, "big")
    other = signing_input + "." + b64url_encode(flipped) + "~"
    assert other != token
    assert vxp.verify_sd_jwt(other, ISSUER, typ="t", now=_NOW).claims == {"iss": "i"}


def test_p256_points_off_the_curve_are_refused() -> None:
    """§2: an invalid-curve point would leak a private key in ECDH and breaks ECDSA reasoning."""
    good = HOLDER.as_dict(private=False)
    y = int.from_bytes(vxp.codec.b64url_decode(good["y"], "y"), "big")
    off = {**good, "y": b64url_encode(((y + 1) % _P).to_bytes(32, "big"))}
    zero = {**good, "x": b64url_encode(bytes(32)), "y": b64url_encode(bytes(32))}
    for jwk in (off, zero):
        with pytest.raises(vxp.VxpError, match="key_invalid"):
            vxp.key_thumbprint(jwk)
    body = _issuer_token({"iss": "i", "cnf": {"jwk": off}})
    kb = forge.jws(b'{"alg":"ES256","typ":"kb+jwt"}', b"{}", HOLDER)
    with pytest.raises(vxp.VxpError) as info:
        vxp.verify_sd_jwt(body + kb, ISSUER, typ="t", now=_NOW, key_binding=_POLICY)
    assert info.value.code == "kb_cnf_invalid"
