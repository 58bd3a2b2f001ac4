"""Keys (SPEC.md 6.1) and proof of possession (6.5)."""

from __future__ import annotations

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
