"""Grant tokens, minting and delegation (SPEC.md sections 6.2 and 6.3).

A token is ``pg1.`` and base64url of the canonical JSON of its blocks, with exactly one
spelling; a delegation appends a block signed by the holder and can only narrow.
:func:`parley.inspect_grant` describes a grant without trusting it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

from .caveat_strategies import _caveats

A = parley.key_from_seed(b"\x02" * 32)
P = parley.key_from_seed(b"\x01" * 32)
HASH = "3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU"
NOW = 1790000000
S = parley.key_from_seed(b"\x03" * 32)
SS = parley.key_from_seed(b"\x04" * 32)
X = parley.key_from_seed(b"\x09" * 32)
SAFE = 2**53 - 1


def ctx(**kw: Any) -> parley.GrantContext:
    base: dict[str, Any] = {
        "service": "shop.example",
        "verb": "COMMIT",
        "capability": "shop.order",
        "now": NOW,
        "proposal": parley.ProposalFacts(HASH, parley.grants.Cost(1250, "USD"), "low"),
    }
    base.update(kw)
    return parley.GrantContext(**base)


def check(tokens: Any, holder: parley.Key = A, **kw: Any) -> parley.GrantCheck:
    return parley.verify_grant(tokens, trusted=[P.public], proof_key=holder.public, ctx=ctx(**kw))


def mint(caveats: list[Any], sub: parley.Key = A, nonce: str = "n") -> str:
    return parley.mint_grant(P, sub.public, caveats, iat=NOW, nonce=nonce)


def test_mint_and_verify_root() -> None:
    token = mint([{"svc": ["shop.example"]}, {"per": {"max": 5000, "currency": "USD"}}])
    assert token.startswith("pg1.")
    grant = parley.decode_grant(token)
    result = check(token)
    assert result.ok
    assert result.code is None
    assert result.reason is None
    assert result.grant == grant.id == grant.block_ids[0] == result.blocks[0]
    assert result.principal == P.public
    assert result.holder == A.public
    assert parley.grants.block_id(grant.blocks[0].sig) == grant.id
    assert grant.token == token


def test_mint_nonce_defaults_to_random() -> None:
    one = parley.mint_grant(P, A.public, [], iat=NOW)
    two = parley.mint_grant(P, A.public, [], iat=NOW)
    assert parley.decode_grant(one).id != parley.decode_grant(two).id


def test_delegation_depth_three_and_holder() -> None:
    root = mint([{"can": ["shop.*"]}])
    one = parley.delegate(root, A, S.public, [{"can": ["shop.order"]}], iat=NOW)
    two = parley.delegate(one, S, SS.public, [{"risk": "low"}], iat=NOW)
    three = parley.delegate(two, SS, X.public, [], iat=NOW)
    for token, holder in ((root, A), (one, S), (two, SS), (three, X)):
        assert check(token, holder).ok
        assert not check(token, P).ok
    blocks = parley.decode_grant(three).block_ids
    assert check(three, X).blocks == blocks
    assert len(blocks) == 4
    assert check(one, S, capability="shop.refund").code == "forbidden"


def test_only_the_holder_can_delegate() -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.delegate(mint([]), S, X.public, [], iat=NOW)
    assert caught.value.reason == "holder_mismatch"


@pytest.mark.parametrize(
    ("parent", "child"),
    [
        ({"exp": NOW + 10}, {"exp": NOW + 11}),
        ({"nbf": NOW}, {"nbf": NOW - 1}),
        ({"per": {"max": 10, "currency": "USD"}}, {"per": {"max": 11, "currency": "USD"}}),
        ({"spend": {"max": 10, "currency": "USD"}}, {"spend": {"max": 11, "currency": "USD"}}),
        ({"risk": "low"}, {"risk": "medium"}),
        ({"svc": ["a"]}, {"svc": ["a", "b"]}),
        ({"verbs": ["ASK"]}, {"verbs": ["COMMIT"]}),
        ({"can": ["shop.order"]}, {"can": ["shop.*"]}),
        ({"can": ["shop.o*"]}, {"can": ["shop.*"]}),
        ({"can": ["shop.*"]}, {"can": ["*"]}),
    ],
)
def test_delegate_refuses_wider(parent: dict[str, Any], child: dict[str, Any]) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.delegate(mint([parent]), A, S.public, [child], iat=NOW)
    assert caught.value.reason == "caveat_wider"
    assert "narrow" in caught.value.message


@pytest.mark.parametrize(
    ("parent", "child"),
    [
        ({"can": ["shop.*"]}, {"can": ["shop.order", "shop.o*", "shop.*"]}),
        ({"can": ["*"]}, {"can": ["anything"]}),
        ({"risk": "high"}, {"risk": "high"}),
        ({"per": {"max": 10, "currency": "USD"}}, {"per": {"max": 99, "currency": "EUR"}}),
        ({"svc": ["a", "b"]}, {"svc": ["b"]}),
        ({"exp": NOW + 10}, {"nbf": NOW}),
    ],
)
def test_delegate_allows_narrower_or_unrelated(
    parent: dict[str, Any], child: dict[str, Any]
) -> None:
    parley.delegate(mint([parent]), A, S.public, [child], iat=NOW)


def test_effective_caveats_and_inspect() -> None:
    root = mint([{"svc": ["a", "b"]}, {"exp": NOW + 100}, {"can": ["shop.*", "bank.*"]}])
    child = parley.delegate(
        root, A, S.public, [{"svc": ["b"]}, {"exp": NOW + 50}, {"can": ["shop.order"]}], iat=NOW
    )
    info = parley.inspect_grant(child)
    assert info["caveats"] == [{"svc": ["b"]}, {"can": ["shop.order"]}, {"exp": NOW + 50}]
    assert info["signatures"] is True
    assert info["depth"] == 2
    assert info["holder"] == S.public
    assert info["malformed"] == []


def test_inspect_shows_tampering_and_malformed() -> None:
    blocks = json.loads(parley.wire.b64url_decode(mint([])[4:]))
    blocks[0]["p"]["caveats"] = [{"risk": "toString"}]
    token = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
    info = parley.inspect_grant(token)
    assert info["signatures"] is False
    assert info["malformed"] == [{"risk": "toString"}]


DEPTH2 = parley.delegate(
    mint([{"svc": ["shop.example"]}, {"spend": {"max": 9000, "currency": "USD"}}], nonce="p"),
    A,
    S.public,
    [{"can": ["shop.*"]}, {"exp": NOW + 60}],
    iat=NOW,
)


@settings(max_examples=250)
@given(st.data())
def test_any_single_character_change_to_a_token_is_rejected(data: st.DataObject) -> None:
    assert check(DEPTH2, S).ok
    index = data.draw(st.integers(0, len(DEPTH2) - 1))
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/"
    char = data.draw(st.sampled_from(alphabet).filter(lambda c: c != DEPTH2[index]))
    mutated = DEPTH2[:index] + char + DEPTH2[index + 1 :]
    result = check(mutated, S)
    assert not result.ok
    assert result.code == "unauthorized"


@settings(max_examples=200)
@given(st.data())
def test_any_single_byte_change_to_the_blocks_is_rejected(data: st.DataObject) -> None:
    raw = bytearray(parley.wire.b64url_decode(DEPTH2[4:]))
    index = data.draw(st.integers(0, len(raw) - 1))
    raw[index] = data.draw(st.integers(0, 255).filter(lambda b: b != raw[index]))
    result = check("pg1." + parley.wire.b64url_encode(bytes(raw)), S)
    assert not result.ok
    assert result.code == "unauthorized"


# -------------------------------- hand-built Grant objects


@pytest.mark.parametrize(
    "grant",
    [
        parley.grants.Grant(()),
        parley.grants.Grant((parley.grants.Block({}, "x"),)),
        parley.grants.Grant(
            (parley.grants.Block({"sub": 1, "caveats": 3, "iat": 1, "iss": 2}, 5),)
        ),  # type: ignore[arg-type]
        parley.grants.Grant(("x",)),  # type: ignore[arg-type]
        parley.grants.Grant(None),  # type: ignore[arg-type]
        parley.grants.Grant((parley.grants.Block([1], "s"),)),  # type: ignore[arg-type]
    ],
)
def test_hand_built_grant_objects_raise_only_parley_error(grant: parley.grants.Grant) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.delegate(grant, A, X.public, [], iat=NOW)
    assert caught.value.reason == "bad_token"
    with pytest.raises(parley.ParleyError):
        parley.inspect_grant(grant)


def test_hand_built_grant_is_checked_like_its_token() -> None:
    token = parley.mint_grant(P, A.public, [{"risk": "low"}], iat=NOW, nonce="n")
    grant = parley.decode_grant(token)
    assert parley.inspect_grant(grant) == parley.inspect_grant(token)
    # a forged holder in a hand-built block does not let another key delegate
    payload = dict(grant.blocks[0].payload, sub=X.public)
    forged = parley.grants.Grant((parley.grants.Block(payload, grant.blocks[0].sig),))
    child = parley.delegate(forged, X, A.public, [], iat=NOW)
    ctx = parley.GrantContext("s", "ASK", "c", NOW)
    check = parley.verify_grant([child], trusted=[P.public], proof_key=A.public, ctx=ctx)
    assert (check.ok, check.reason) == (False, "bad_signature")


# -------------------------------- one spelling


def _signed(key: parley.Key, payload: dict[str, Any]) -> dict[str, Any]:
    """Sign like a lenient signer: unsafe integers and floats are written, not refused."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {"p": payload, "s": key.sign(text.encode())}


def _token(blocks: list[dict[str, Any]]) -> str:
    text = json.dumps(blocks, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "pg1." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@settings(max_examples=150)
@given(st.lists(_caveats, max_size=3), st.sampled_from([" ", "\n", ""]), st.booleans())
def test_decoded_payload_text_is_the_canonical_text(
    caveats: list[Any], space: str, reorder: bool
) -> None:
    payload = {"iss": P.public, "sub": A.public, "caveats": caveats, "iat": NOW, "nonce": "n"}
    try:
        signed = parley.canonical(payload).encode()
    except parley.ParleyError:
        return  # a float or huge integer: covered by the lenient-signer tests
    token = _token([_signed(P, payload)])
    grant = parley.decode_grant(token)
    assert grant.blocks[0].signed == signed
    text = base64.urlsafe_b64decode(token[4:] + "==").decode()
    respelled = text.replace('{"p":', '{"p":' + space, 1)
    if reorder:
        respelled = respelled.replace('"iat":', '"iat" :', 1)
    if respelled != text:
        again = "pg1." + base64.urlsafe_b64encode(respelled.encode()).decode().rstrip("=")
        with pytest.raises(parley.ParleyError) as caught:
            parley.decode_grant(again)
        assert caught.value.reason == "bad_token"
