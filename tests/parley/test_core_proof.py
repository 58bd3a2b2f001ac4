"""Proof of possession (SPEC.md section 6.5).

A proof signs ``{aud, verb, target, ts}`` with the holder's key; it binds the service,
the verb and the target, passes only within the window, and fails on any change.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

AGENT = parley.key_from_seed(b"\x02" * 32)
NOW = 1790000000
IDENTITY = bytes([1]) + bytes(31)


TOP = Path(__file__).resolve().parents[2]
REF = TOP / "vectors" / "third_party" / "parley"


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


def _proof(**kw: Any) -> dict[str, Any]:
    args = {"aud": "shop.example", "verb": "COMMIT", "target": "h", "ts": NOW} | kw
    return parley.sign_proof(AGENT, **args)


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


# -------------------------------- forged keys, ambiguous targets


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


FORGED = _b64(IDENTITY + bytes(32))  # R = identity, S = 0: "valid" for every message


def _key_text(raw: bytes) -> str:
    return "ed25519:" + _b64(raw)


WEAK = _key_text(IDENTITY)


def test_forged_proof_under_a_small_order_key_is_refused() -> None:
    proof = {"key": WEAK, "ts": NOW, "sig": FORGED}
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(proof, aud="shop.example", verb="ASK", target="shop.x", now=NOW)
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "bad_proof_signature")


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
