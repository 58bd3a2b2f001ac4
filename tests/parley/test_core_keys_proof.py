"""Keys (SPEC.md 6.1) and proof of possession (6.5)."""

from __future__ import annotations

import base64
import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

TOP = Path(__file__).resolve().parents[2]
REF = TOP / "vectors" / "third_party" / "parley"
NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
X = parley.key_from_seed(b"\x09" * 32)
PRIME = 2**255 - 19
SMALL_ORDER_Y = (
    0,
    1,
    PRIME - 1,
    2707385501144840649318225287225658788936804267575313519463743609750303402022,
    55188659117513257062467267217118295137698188065244968500265048394206261417927,
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _key_text(raw: bytes) -> str:
    return "ed25519:" + _b64(raw)


IDENTITY = bytes([1]) + bytes(31)
WEAK = _key_text(IDENTITY)
FORGED = _b64(IDENTITY + bytes(32))  # R = identity, S = 0: "valid" for every message


def _weak_encodings() -> list[bytes]:
    out = []
    for y in SMALL_ORDER_Y:
        for sign in (0, 1):
            out.append((y | (sign << 255)).to_bytes(32, "little"))
    for y in (PRIME, PRIME + 1, 2**255 - 1):  # non-canonical spellings (y >= p)
        out.append(y.to_bytes(32, "little"))
    return out


AGENT = parley.key_from_seed(b"\x02" * 32)


def test_reference_keys() -> None:
    for case in json.loads((REF / "keys.json").read_text(encoding="utf-8")):
        key = parley.key_from_seed(parley.wire.b64url_decode(case["seed"]))
        assert key.public == case["public"]


def test_reference_proofs_sign_byte_equal_and_verify() -> None:
    for case in json.loads((REF / "proof.json").read_text(encoding="utf-8")):
        key = parley.key_from_seed(parley.wire.b64url_decode(case["seed"]))
        proof = parley.sign_proof(
            key, aud=case["aud"], verb=case["verb"], target=case["target"], ts=case["ts"]
        )
        assert proof == {"key": case["key"], "ts": case["ts"], "sig": case["sig"]}
        got = parley.verify_proof(
            proof, aud=case["aud"], verb=case["verb"], target=case["target"], now=case["ts"]
        )
        assert got == case["key"]


def test_private_key_never_shows() -> None:
    seed = bytes(range(32))
    key = parley.key_from_seed(seed)
    texts = [repr(key), str(key), f"{key}", repr([key]), repr({"k": key})]
    secret_forms = (seed.hex(), parley.wire.b64url_encode(seed), repr(seed))
    for text in texts:
        assert key.public in text
        assert not any(form in text for form in secret_forms)
    exposed = [n for n in dir(key) if not n.startswith("_") and n not in ("public", "sign")]
    assert exposed == ["from_seed", "generate"], "no public way to read the private half"
    with pytest.raises(parley.ParleyError) as caught:
        pickle.dumps(key)
    assert parley.wire.b64url_encode(seed) not in str(caught.value)
    with pytest.raises(parley.ParleyError):
        copy.deepcopy(key)


@pytest.mark.parametrize("seed", [b"", b"\x01" * 31, b"\x01" * 33, "x" * 32, None])
def test_bad_seed(seed: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.key_from_seed(seed)
    assert caught.value.reason == "bad_key"


def test_generated_keys_differ_and_sign() -> None:
    one, two = parley.generate_key(), parley.generate_key()
    assert one.public != two.public
    sig = one.sign(b"m")
    assert parley.keys.verify_signature(one.public, b"m", sig)
    assert not parley.keys.verify_signature(two.public, b"m", sig)


@pytest.mark.parametrize(
    ("public", "sig"),
    [
        (None, "x"),
        ("ed25519:", "x" * 86),
        ("ed25519:" + "A" * 42, "x" * 86),
        ("ED25519:" + AGENT.public[8:], AGENT.sign(b"m")),
        (AGENT.public, None),
        (AGENT.public, AGENT.sign(b"m") + "="),
        (AGENT.public, AGENT.sign(b"m")[:-1]),
        (AGENT.public, "!" * 86),
    ],
)
def test_verify_signature_is_fail_closed(public: Any, sig: Any) -> None:
    assert parley.keys.verify_signature(public, b"m", sig) is False


@pytest.mark.parametrize(
    "text", ["ed25519:abc", "x25519:" + "A" * 43, 7, "ed25519:" + "A" * 43 + "="]
)
def test_parse_public_key_refuses(text: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.parse_public_key(text)
    assert caught.value.reason == "bad_key"


# ----------------------------------------------------------------- proofs


def _proof(**kw: Any) -> dict[str, Any]:
    args = {"aud": "shop.example", "verb": "COMMIT", "target": "h", "ts": NOW} | kw
    return parley.sign_proof(AGENT, **args)


def test_target_table() -> None:
    assert parley.grants.proof_target("COMMIT", proposal_hash="h") == "h"
    assert parley.grants.proof_target("UNDO", receipt="r_1") == "r_1"
    assert parley.grants.proof_target("ASK", capability="c") == "c"
    assert parley.grants.proof_target("INTENT", capability="c") == "c"
    assert (
        parley.grants.proof_target("INTENT", capability="c", auto=True, frame_id="f") == "auto:c:f"
    )
    assert parley.grants.proof_target("EXPAND", handle="h_1") == "h_1"
    for verb in ("HELLO", "commit", ""):
        with pytest.raises(parley.ParleyError):
            parley.grants.proof_target(verb, capability="c", proposal_hash="h")


def test_auto_proofs_differ_per_frame() -> None:
    # An auto INTENT proof cannot be replayed as another frame's (finding: replayable auto).
    one = parley.grants.proof_target("INTENT", capability="c", auto=True, frame_id="f1")
    two = parley.grants.proof_target("INTENT", capability="c", auto=True, frame_id="f2")
    plain = parley.grants.proof_target("INTENT", capability="c")
    assert len({one, two, plain}) == 3


@pytest.mark.parametrize("delta", [-300, 0, 300])
def test_window_edges_pass(delta: int) -> None:
    key = parley.verify_proof(
        _proof(), aud="shop.example", verb="COMMIT", target="h", now=NOW + delta
    )
    assert key == AGENT.public


@pytest.mark.parametrize("delta", [-301, 301, 10**6])
def test_outside_window_fails(delta: int) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(
            _proof(), aud="shop.example", verb="COMMIT", target="h", now=NOW + delta
        )
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "proof_expired")


@pytest.mark.parametrize(
    "change",
    [{"aud": "evil.example"}, {"verb": "UNDO"}, {"target": "other"}],
)
def test_proof_binds_aud_verb_target(change: dict[str, str]) -> None:
    expected = {"aud": "shop.example", "verb": "COMMIT", "target": "h"} | change
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(_proof(), now=NOW, **expected)
    assert caught.value.reason == "bad_proof_signature"


@settings(max_examples=200)
@given(st.data())
def test_any_single_byte_change_to_a_proof_is_rejected(data: st.DataObject) -> None:
    proof = _proof()
    text = json.dumps(proof, separators=(",", ":"))
    raw = bytearray(text.encode())
    index = data.draw(st.integers(0, len(raw) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != raw[index]))
    raw[index] = byte
    try:
        mutated = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return  # not even JSON: rejected before the proof is looked at
    if mutated == proof:
        return  # e.g. a change inside JSON syntax that parses to the same object
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(mutated, aud="shop.example", verb="COMMIT", target="h", now=NOW)
    assert caught.value.code == "unauthorized"


@pytest.mark.parametrize(
    "proof",
    [None, [], "p", {}, {"key": 1, "ts": NOW, "sig": "x"}, {"key": "k", "ts": NOW, "sig": "x"}],
)
def test_malformed_proofs_are_unauthorized(proof: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(proof, aud="a", verb="ASK", target="c", now=NOW)
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "bad_proof")


# ------------------------------------------------------------------ keys (6.1): small-order and
# non-canonical keys, malleable signatures, a private key kept out of logs


def test_identity_key_forgery_is_refused_by_verify_signature() -> None:
    for message in (b"", b"any message at all", parley.canonical({"aud": "a", "ts": 1}).encode()):
        assert parley.keys.verify_signature(WEAK, message, FORGED) is False


@pytest.mark.parametrize("raw", _weak_encodings(), ids=lambda r: r.hex()[:8] + r.hex()[-2:])
def test_small_order_and_non_canonical_keys_are_refused(raw: bytes) -> None:
    text = _key_text(raw)
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.parse_public_key(text)
    assert caught.value.reason == "bad_key"
    assert parley.keys.verify_signature(text, b"m", FORGED) is False
    with pytest.raises(parley.ParleyError):
        parley.mint_grant(P, text, [], iat=NOW, nonce="n")


def test_forged_proof_under_a_small_order_key_is_refused() -> None:
    proof = {"key": WEAK, "ts": NOW, "sig": FORGED}
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(proof, aud="shop.example", verb="ASK", target="shop.x", now=NOW)
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "bad_proof_signature")


def test_stranger_cannot_extend_a_grant_held_by_a_small_order_key() -> None:
    # A careless (or malicious) holder delegated to the identity point. Under OpenSSL's
    # equation anyone could then append a block for themselves; the block must not verify.
    root_payload = {"iss": P.public, "sub": WEAK, "caveats": [], "iat": NOW, "nonce": "n"}
    root = {"p": root_payload, "s": P.sign(parley.canonical(root_payload).encode())}
    forged = {
        "p": {
            "prev": parley.grants.block_id(root["s"]),
            "sub": X.public,
            "caveats": [],
            "iat": NOW,
        },
        "s": FORGED,
    }
    token = "pg1." + _b64(parley.canonical([root, forged]).encode())
    ctx = parley.GrantContext("shop.example", "ASK", "shop.x", NOW)
    check = parley.verify_grant([token], trusted=[P.public], proof_key=X.public, ctx=ctx)
    assert (check.ok, check.code, check.reason) == (False, "unauthorized", "bad_signature")
    assert parley.inspect_grant(token)["signatures"] is False


def test_honest_keys_still_verify() -> None:
    for byte in range(1, 40):
        key = parley.key_from_seed(bytes([byte]) * 32)
        assert parley.keys.parse_public_key(key.public)
        assert parley.keys.verify_signature(key.public, b"m", key.sign(b"m"))


def test_signatures_are_not_malleable() -> None:
    # S + L verifies under a lax verifier; the backend must refuse it (and keep refusing).
    order = 2**252 + 27742317777372353535851937790883648493
    sig = base64.urlsafe_b64decode(A.sign(b"m") + "==")
    s = int.from_bytes(sig[32:], "little") + order
    assert s < 2**256
    mauled = _b64(sig[:32] + s.to_bytes(32, "little"))
    assert parley.keys.verify_signature(A.public, b"m", mauled) is False


def test_private_key_stays_out_of_logs_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    seed = bytes(range(7, 39))
    key = parley.key_from_seed(seed)
    secrets = (seed.hex(), _b64(seed), repr(seed))
    logging.getLogger("review").warning("key %s %r %s", key, key, [key])
    errors = []
    for call in (
        lambda: parley.sign_proof(key, aud="a", verb="ASK", target="t", ts=2**60),
        lambda: parley.mint_grant(key, key.public, [{"risk": "x"}], iat=NOW),
        lambda: parley.delegate("pg1.x", key, key.public, [], iat=NOW),
        lambda: key.sign("text"),  # type: ignore[arg-type]
    ):
        with pytest.raises(parley.ParleyError) as caught:
            call()
        errors.append(f"{caught.value!s} {caught.value!r} {caught.value.args}")
    for text in (caplog.text, *errors):
        assert not any(form in text for form in secrets)


# ------------------------------------------------------------------ proof targets


def test_auto_targets_are_unambiguous() -> None:
    # 'auto:a:b:c' would be capability 'a' frame 'b:c' and capability 'a:b' frame 'c'.
    assert (
        parley.grants.proof_target("INTENT", capability="a", auto=True, frame_id="b:c")
        == "auto:a:b:c"
    )
    with pytest.raises(parley.ParleyError) as caught:
        parley.grants.proof_target("INTENT", capability="a:b", auto=True, frame_id="c")
    assert caught.value.reason == "bad_target"
    # a plain INTENT on a capability spelled like an auto target would share its proof
    with pytest.raises(parley.ParleyError):
        parley.grants.proof_target("INTENT", capability="auto:a:b")
    assert parley.grants.proof_target("ASK", capability="auto:a:b") == "auto:a:b"  # verb differs
