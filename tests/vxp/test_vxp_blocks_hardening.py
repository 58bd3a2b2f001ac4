"""Regression tests from an adversarial review of the SD-JWT, JWS, key and Merkle-log blocks."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc.jwk import ECKey, OKPKey

import vxp
from vxp._codec import parse_json
from vxp._jws import check_algorithms, parse_compact
from vxp._keys import resolve_key

TYP = "t+sd-jwt"
NOW = 1_780_000_000
ISSUER = ECKey.generate_key("P-256")
HOLDER = ECKey.generate_key("P-256")
POLICY = vxp.KeyBinding(aud="https://verifier.example", nonce="n-1")


def _b64(data: bytes) -> str:
    return vxp.codec.b64url_encode(data)


def _jws(header: bytes, payload: bytes, key: Any) -> str:
    signing_input = _b64(header) + "." + _b64(payload)
    return signing_input + "." + _b64(resolve_key(key).sign(signing_input.encode()))


def _issuer_token(payload: dict[str, Any], disclosures: Sequence[str] = ()) -> str:
    header = json.dumps({"alg": "ES256", "typ": TYP}).encode()
    jws = _jws(header, json.dumps(payload).encode(), ISSUER)
    return jws + "~" + "".join(d + "~" for d in disclosures)


# ---------------------------------------------------------------------------- SQLite log

_REWRITES = (
    "INSERT OR REPLACE INTO vxp_log_entries (idx, data) VALUES (1, x'ff')",
    "REPLACE INTO vxp_log_entries (idx, data) VALUES (0, x'ff')",
    "INSERT OR REPLACE INTO vxp_log_nodes (level, idx, hash) VALUES (0, 1, x'ff')",
    "INSERT OR REPLACE INTO vxp_log_nodes (level, idx, hash) VALUES (1, 0, x'ff')",
    "REPLACE INTO vxp_log_meta (key, value) VALUES ('origin', 'evil/log')",
    "INSERT OR IGNORE INTO vxp_log_entries (idx, data) VALUES (2, x'ff')",
    "INSERT INTO vxp_log_entries (idx, data) VALUES (9, x'ff')",
    "INSERT INTO vxp_log_entries (data) VALUES (x'ff')",
    "INSERT INTO vxp_log_nodes (level, idx, hash) VALUES (0, 9, x'ff')",
    "INSERT INTO vxp_log_nodes (level, idx, hash) VALUES (5, 3, x'ff')",
    "UPDATE OR REPLACE vxp_log_entries SET idx = 0 WHERE idx = 1",
)


@pytest.mark.parametrize("sql", _REWRITES)
def test_sqlite_log_refuses_replace_and_out_of_place_inserts(tmp_path: Path, sql: str) -> None:
    """INSERT OR REPLACE deletes without firing DELETE triggers: it used to rewrite history."""
    path = tmp_path / "log.db"
    log = vxp.MerkleLog("test/log", vxp.stores.SqliteLogStore(path, "test/log"))
    log.extend([b"a", b"b", b"c", b"d"])
    root, entries = log.root(), [log.entry(i) for i in range(4)]
    raw = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError):
        raw.execute(sql)
    raw.close()
    log.close()
    again = vxp.MerkleLog("test/log", vxp.stores.SqliteLogStore(path, "test/log"))
    assert again.size == 4
    assert again.root() == root
    assert [again.entry(i) for i in range(4)] == entries
    assert again.append(b"e") == 4  # the legitimate append path still works
    assert again.root() == vxp.merkle.tree_hash([vxp.merkle.leaf_hash(x) for x in [*entries, b"e"]])
    again.close()


def test_sqlite_log_created_before_the_triggers_gets_them_on_open(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    vxp.stores.SqliteLogStore(path, "o").close()
    raw = sqlite3.connect(path, isolation_level=None)
    for name in ("entries_append_only", "nodes_append_only", "meta_insert_once"):
        raw.execute(f"DROP TRIGGER vxp_log_{name}")
    raw.close()
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(path, "o"))
    log.extend([b"a", b"b"])
    raw = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError):
        raw.execute("INSERT OR REPLACE INTO vxp_log_entries (idx, data) VALUES (0, x'ff')")
    raw.close()
    assert log.entry(0) == b"a"
    log.close()


def test_merkle_log_origin_must_match_its_sqlite_store(tmp_path: Path) -> None:
    store = vxp.stores.SqliteLogStore(tmp_path / "log.db", "log/a")
    with pytest.raises(vxp.VxpError) as info:
        vxp.MerkleLog("log/b", store)
    assert info.value.code == "log_origin_mismatch"
    store.close()
    with pytest.raises(vxp.VxpError) as info:
        vxp.stores.SqliteLogStore(tmp_path / "log.db", "log/b")
    assert info.value.code == "log_origin_mismatch"


def test_sqlite_size_is_the_next_free_index(tmp_path: Path) -> None:
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(tmp_path / "log.db", "o"))
    assert log.size == 0
    log.extend([bytes([i]) for i in range(37)])
    assert log.size == 37
    log.close()


# ---------------------------------------------------------------------------- Ed25519 keys

_P = 2**255 - 19
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
    (_P).to_bytes(32, "little").hex(),  # y = p, i.e. 0
    (_P + 1).to_bytes(32, "little").hex(),  # y = p + 1, i.e. 1
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
]
_FORGED = bytes([1]) + bytes(63)  # R = identity, S = 0


def _ed_jwk(hex_x: str) -> dict[str, str]:
    return {"kty": "OKP", "crv": "Ed25519", "x": _b64(bytes.fromhex(hex_x))}


def test_openssl_accepts_forgeries_under_small_order_keys() -> None:
    """Why the check exists: under each small-order key some message verifies R=O, S=0."""
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
    with pytest.raises(vxp.VxpError) as info:
        resolve_key(_ed_jwk(hex_x))
    assert info.value.code in ("key_invalid", "key_unsupported")


def test_ordinary_ed25519_keys_still_resolve() -> None:
    for i in range(50):
        seed = hashlib.sha256(f"seed {i}".encode()).digest()
        key = OKPKey.import_key(ed25519.Ed25519PrivateKey.from_private_bytes(seed))
        resolved = resolve_key(key.as_dict(private=False))
        assert resolved.signature_valid(b"m", resolve_key(key).sign(b"m"))


def test_small_order_cnf_key_cannot_bind_a_presentation() -> None:
    weak = _ed_jwk(_SMALL_ORDER[0])
    body = _issuer_token({"iss": "i", "_sd_alg": "sha-256", "cnf": {"jwk": weak}})
    kb_payload = {
        "aud": POLICY.aud,
        "iat": NOW,
        "nonce": POLICY.nonce,
        "sd_hash": _b64(hashlib.sha256(body.encode()).digest()),
    }
    signing_input = (
        _b64(b'{"alg":"EdDSA","typ":"kb+jwt"}') + "." + _b64(json.dumps(kb_payload).encode())
    )
    token = body + signing_input + "." + _b64(_FORGED)
    with pytest.raises(vxp.VxpError) as info:
        vxp.verify_sd_jwt(
            token, ISSUER, typ=TYP, now=NOW, key_binding=POLICY, algorithms=["ES256", "EdDSA"]
        )
    assert info.value.code == "kb_cnf_invalid"


def test_small_order_log_and_witness_keys_are_refused() -> None:
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


# ---------------------------------------------------------------------------- leaks


@pytest.mark.parametrize(
    "jwk",
    [
        {"kty": "EC", "crv": "P-256", "x": ["a"], "y": "b"},
        {"kty": "EC", "crv": {"n": 1}, "x": "a", "y": "b"},
        {"kty": ["OKP"], "crv": "Ed25519", "x": "a"},
    ],
)
def test_unhashable_jwk_members_raise_vxp_error(jwk: dict[str, Any]) -> None:
    with pytest.raises(vxp.VxpError):
        resolve_key(jwk)


@pytest.mark.parametrize("algorithms", [[["ES256"]], [{"a": 1}], [1], ["ES256", None]])
def test_unhashable_or_non_text_algorithms_raise_vxp_error(algorithms: Any) -> None:
    with pytest.raises(vxp.VxpError) as info:
        check_algorithms(algorithms)
    assert info.value.code == "algorithms_invalid"


@pytest.mark.parametrize("token", [None, 42, b"a.b.c", ["a", "b", "c"]])
def test_parse_compact_refuses_non_text(token: Any) -> None:
    with pytest.raises(vxp.VxpError, match="malformed_jwt"):
        parse_compact(token, "JWT")


def test_kb_iat_too_large_for_a_double_is_refused_not_leaked() -> None:
    body = vxp.present_sd_jwt(
        vxp.issue_sd_jwt({"iss": "i"}, ISSUER, typ=TYP, holder_key=HOLDER), disclose=[]
    )
    sd_hash = _b64(hashlib.sha256(body.encode()).digest())
    for iat in (b"1" + b"0" * 400, b"-1" + b"0" * 400):
        payload = (
            b'{"aud": "https://verifier.example", "nonce": "n-1", "iat": '
            + iat
            + b', "sd_hash": "'
            + sd_hash.encode()
            + b'"}'
        )
        token = body + _jws(b'{"alg":"ES256","typ":"kb+jwt"}', payload, HOLDER)
        with pytest.raises(vxp.VxpError) as info:
            vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, key_binding=POLICY)
        assert info.value.code == "kb_iat_invalid"


def test_huge_clock_and_window_parameters_raise_vxp_error() -> None:
    token = vxp.issue_sd_jwt({"iss": "i", "exp": NOW + 1.5}, ISSUER, typ=TYP).serialize()
    with pytest.raises(vxp.VxpError, match="now_invalid"):
        vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=10**400)
    with pytest.raises(vxp.VxpError, match="leeway_invalid"):
        vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, leeway=10**400)
    for name in ("max_age", "leeway"):
        with pytest.raises(vxp.VxpError, match="key_binding_invalid"):
            vxp.KeyBinding(aud="a", nonce="n", **{name: 10**400})
    assert vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW, leeway=2**32).claims["iss"] == "i"


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1E309", b"123456789e999"])
def test_json_numbers_beyond_a_double_are_refused(number: bytes) -> None:
    """Python reads 1e400 as inf: an exp that never expires."""
    with pytest.raises(vxp.VxpError, match="malformed_json"):
        parse_json(b'{"exp": ' + number + b"}", "payload")
    token = _jws(b'{"alg":"ES256"}', b'{"iss": "i", "exp": ' + number + b"}", ISSUER) + "~"
    with pytest.raises(vxp.VxpError, match="malformed_jwt"):
        vxp.verify_sd_jwt(token, ISSUER, typ=None, now=NOW)


def test_finite_floats_still_parse() -> None:
    assert parse_json(b'{"a": 1.5e300, "b": -0.0, "c": 5e-324}', "x") == {
        "a": 1.5e300,
        "b": -0.0,
        "c": 5e-324,
    }


def test_disclosure_digest_refuses_unknown_algorithm() -> None:
    d = vxp.sdjwt.Disclosure.create("salt", "name", "value")
    with pytest.raises(vxp.VxpError, match="sd_alg_unsupported"):
        d.digest("sha-512")


# ---------------------------------------------------------------------------- checkpoints


def test_empty_tree_checkpoint_has_the_empty_root() -> None:
    assert vxp.checkpoints.Checkpoint("o", 0, vxp.merkle.EMPTY_ROOT).tree_size == 0
    with pytest.raises(vxp.VxpError, match="checkpoint_invalid"):
        vxp.checkpoints.Checkpoint("o", 0, b"\x00" * 32)
    with pytest.raises(vxp.VxpError, match="checkpoint_invalid"):
        vxp.checkpoints.Checkpoint.from_json(
            {"origin": "o", "tree_size": 0, "root": vxp.codec.encode_hash(b"1" * 32)}
        )


# ---------------------------------------------------------------------------- fuzz


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


@settings(max_examples=150, deadline=None)
@given(
    payload=st.dictionaries(st.sampled_from(["_sd", "a", "b", "...", "cnf", "exp"]), _json),
    items=st.lists(st.lists(_json, min_size=0, max_size=4), max_size=4),
    refs=st.lists(st.tuples(st.sampled_from(["_sd", "array", "nested"]), st.integers(0, 5))),
)
def test_crafted_signed_payloads_raise_only_vxp_error(
    payload: dict[str, Any], items: list[list[Any]], refs: list[tuple[str, int]]
) -> None:
    """An issuer-signed payload of any shape, with digests of real disclosures wired in."""
    disclosures = [_b64(json.dumps(item).encode()) for item in items]
    digests = [_b64(hashlib.sha256(d.encode()).digest()) for d in disclosures]
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
    token = _issuer_token(payload, disclosures)
    try:
        result = vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW)
    except vxp.VxpError:
        return
    # accepted: every disclosure was used once and no placeholder survives processing
    assert len(result.disclosures) == len(disclosures)
    assert not _has_placeholder(result.claims, top=True)


def _has_placeholder(value: Any, top: bool = False) -> bool:
    if isinstance(value, dict):
        if "_sd" in value or "..." in value or (top and "_sd_alg" in value):
            return True
        return any(_has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_placeholder(v) for v in value)
    return False


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(-2, 2**70),
    size=st.integers(-2, 2**70),
    size2=st.integers(-2, 2**70),
    proof=st.lists(st.binary(min_size=31, max_size=33), max_size=70),
)
def test_merkle_verifiers_raise_only_vxp_error(
    index: int, size: int, size2: int, proof: list[bytes]
) -> None:
    for call in (
        lambda: vxp.merkle.verify_inclusion(b"\x00" * 32, index, size, proof, b"\x01" * 32),
        lambda: vxp.merkle.verify_consistency(size, size2, b"\x00" * 32, b"\x01" * 32, proof),
    ):
        with pytest.raises(vxp.VxpError):
            call()


# ---------------------------------------------------------------------------- ES256 encodings


def _es256_parts(token: str) -> tuple[str, int, int]:
    jws = token.split("~")[0]
    signing_input, sig = jws.rsplit(".", 1)
    raw = vxp.codec.b64url_decode(sig, "sig")
    return signing_input, int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")


def test_der_signatures_are_refused_and_high_s_is_accepted() -> None:
    """Documented behaviour: raw r||s only; both s and n - s verify (JOSE has no low-S rule)."""
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    token = vxp.issue_sd_jwt({"iss": "i"}, ISSUER, typ=TYP).serialize()
    signing_input, r, s = _es256_parts(token)
    der = signing_input + "." + _b64(encode_dss_signature(r, s)) + "~"
    with pytest.raises(vxp.VxpError, match="signature_invalid"):
        vxp.verify_sd_jwt(der, ISSUER, typ=TYP, now=NOW)
    for bad_r, bad_s in ((0, s), (r, 0), (r, n), (n, s)):
        sig = bad_r.to_bytes(32, "big") + bad_s.to_bytes(32, "big")
        with pytest.raises(vxp.VxpError, match="signature_invalid"):
            vxp.verify_sd_jwt(signing_input + "." + _b64(sig) + "~", ISSUER, typ=TYP, now=NOW)
    flipped = r.to_bytes(32, "big") + (n - s).to_bytes(32, "big")
    other = signing_input + "." + _b64(flipped) + "~"
    assert other != token
    assert vxp.verify_sd_jwt(other, ISSUER, typ=TYP, now=NOW).claims == {"iss": "i"}


def test_cli_decode_prints_lone_surrogates_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vxp._cli import main

    disclosure = _b64(b'["salt", "name", "\\ud800"]')
    payload = {"iss": "i", "_sd": [_b64(hashlib.sha256(disclosure.encode()).digest())]}
    (tmp_path / "token").write_text(_issuer_token(payload, [disclosure]))
    assert main(["sd-jwt-decode", str(tmp_path / "token")]) == 0
    assert json.loads(capsys.readouterr().out)["disclosures"][0]["value"] == "\ud800"


@pytest.mark.parametrize("data", [3, "abc", None, [1, 2], 1.5])
def test_leaf_hash_refuses_non_bytes(data: Any) -> None:
    """bytes(3) is three zero bytes: leaf_hash(3) used to hash b"\\0\\0\\0" silently."""
    with pytest.raises(vxp.VxpError, match="merkle_argument_invalid"):
        vxp.merkle.leaf_hash(data)


def test_leaf_hash_accepts_bytes_like() -> None:
    want = vxp.merkle.leaf_hash(b"abc")
    assert (
        vxp.merkle.leaf_hash(bytearray(b"abc")) == vxp.merkle.leaf_hash(memoryview(b"abc")) == want
    )


@pytest.mark.parametrize(("left", "right"), [("a", b"b"), (b"a", None), (3, 4)])
def test_node_hash_refuses_non_bytes(left: Any, right: Any) -> None:
    with pytest.raises(vxp.VxpError, match="merkle_argument_invalid"):
        vxp.merkle.node_hash(left, right)


def test_mark_disclosable_refuses_claims_too_deep_to_copy() -> None:
    claims: dict[str, Any] = {}
    node = claims
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(vxp.VxpError, match="claims_too_deep"):
        vxp.sdjwt.mark_disclosable(claims, [["a"]])


def test_a_store_that_lost_its_hashes_reports_corruption(tmp_path: Path) -> None:
    """Someone with the file drops the triggers and deletes hashes: fail with log_corrupt."""
    path = tmp_path / "log.db"
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(path, "o"))
    log.extend([bytes([i]) for i in range(6)])
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("DROP TRIGGER vxp_log_nodes_no_delete")
    raw.execute("DELETE FROM vxp_log_nodes")
    raw.close()
    for call in (log.root, lambda: log.inclusion_proof(3), lambda: log.consistency_proof(2)):
        with pytest.raises(vxp.VxpError, match="log_corrupt"):
            call()
    log.close()


def test_p256_points_off_the_curve_are_refused() -> None:
    """An invalid-curve point would leak a private key in ECDH and breaks ECDSA reasoning."""
    good = resolve_key(HOLDER).public_jwk
    y = int.from_bytes(vxp.codec.b64url_decode(good["y"], "y"), "big")
    off = {
        **good,
        "y": _b64(((y + 1) % (2**256 - 2**224 + 2**192 + 2**96 - 1)).to_bytes(32, "big")),
    }
    zero = {**good, "x": _b64(bytes(32)), "y": _b64(bytes(32))}
    for jwk in (off, zero):
        with pytest.raises(vxp.VxpError, match="key_invalid"):
            resolve_key(jwk)
    body = _issuer_token({"iss": "i", "cnf": {"jwk": off}})
    kb = _jws(b'{"alg":"ES256","typ":"kb+jwt"}', b"{}", HOLDER)
    with pytest.raises(vxp.VxpError) as info:
        vxp.verify_sd_jwt(body + kb, ISSUER, typ=TYP, now=NOW, key_binding=POLICY)
    assert info.value.code == "kb_cnf_invalid"
