"""Grants (SPEC.md 6.2-6.4): mint, delegate, tokens, inspect, verify_grant and its properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
S = parley.key_from_seed(b"\x03" * 32)
SS = parley.key_from_seed(b"\x04" * 32)
X = parley.key_from_seed(b"\x09" * 32)
HASH = "3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU"
OTHER = "PqsYTM44f4k6sArmFNbQ1vxLHgmkxlCyiYOcqKjy8Iw"
TOP = Path(__file__).resolve().parents[2]


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


# ----------------------------------------------------------------- multi-grant precedence


def test_multi_grant_precedence() -> None:
    ok = mint([], nonce="ok")
    forbidden = mint([{"svc": ["other"]}], nonce="f")
    soft = mint([{"risk": "low"}], nonce="s")
    untrusted = parley.mint_grant(X, A.public, [], iat=NOW, nonce="x")
    risky = {"proposal": parley.ProposalFacts(HASH, None, "high")}
    assert check([forbidden, ok]).index == 1
    assert check([untrusted, forbidden], **risky).code == "forbidden"
    result = check([forbidden, soft, untrusted], **risky)
    assert (result.code, result.index) == ("consent_required", 1)
    assert check([untrusted, "pg1.x"]).reason == "untrusted_issuer"
    assert check([]).reason == "no_grant"
    assert check("not a list but one token").reason == "bad_token"


def test_raise_for_failure() -> None:
    check(mint([])).raise_for_failure()
    with pytest.raises(parley.ParleyError) as caught:
        check(mint([{"svc": ["x"]}])).raise_for_failure()
    assert (caught.value.code, caught.value.reason) == ("forbidden", "caveat_failed")


def test_context_validation() -> None:
    with pytest.raises(parley.ParleyError):
        parley.GrantContext("s", "COMMIT", "c", NOW, proposal={"hash": "h"})  # type: ignore[arg-type]
    with pytest.raises(parley.ParleyError):
        parley.GrantContext("s", "ASK", "c", "now")  # type: ignore[arg-type]
    with pytest.raises(parley.ParleyError):
        parley.GrantContext("s", "ASK", "c", NOW, spent={"b": -1})
    with pytest.raises(parley.ParleyError):
        parley.ProposalFacts.from_json(
            {"hash": "h", "cost": {"amount": 1.5, "currency": "USD"}, "risk": "low"}
        )
    with pytest.raises(parley.ParleyError):
        parley.ProposalFacts.from_json({"hash": "h", "cost": None, "risk": "toString"})


# ----------------------------------------------------------------- properties

RANDOM_TOKEN_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(lambda s: "pg1." + s, st.text(alphabet="ABCDEFabcdef0123456789-_=", max_size=60)),
    st.builds(
        lambda v: "pg1." + parley.wire.b64url_encode(json.dumps(v).encode()),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["p", "s", "iss", "sub", "caveats", "iat", "nonce", "prev"]),
                    inner,
                    max_size=5,
                )
            ),
            max_leaves=12,
        ),
    ),
    st.integers(),
    st.none(),
)


@settings(max_examples=300)
@given(st.lists(RANDOM_TOKEN_TEXT, max_size=3))
def test_verify_grant_never_raises_on_junk(tokens: list[Any]) -> None:
    result = check(tokens)
    assert result.ok is False
    assert result.code in ("unauthorized", "forbidden", "consent_required")


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


CAVEATS = st.one_of(
    st.builds(
        lambda v: {"svc": v}, st.lists(st.sampled_from(["shop.example", "a", "b"]), max_size=2)
    ),
    st.builds(
        lambda v: {"verbs": v},
        st.lists(st.sampled_from(["ASK", "INTENT", "COMMIT", "UNDO"]), max_size=3),
    ),
    st.builds(
        lambda v: {"can": v},
        st.lists(st.sampled_from(["*", "shop.*", "shop.o*", "shop.order", "bank.*"]), max_size=2),
    ),
    st.builds(lambda v: {"exp": NOW + v}, st.integers(-3, 3)),
    st.builds(lambda v: {"nbf": NOW + v}, st.integers(-3, 3)),
    st.builds(
        lambda m, c: {"per": {"max": m, "currency": c}},
        st.integers(0, 3000),
        st.sampled_from(["USD", "EUR"]),
    ),
    st.builds(
        lambda m, c: {"spend": {"max": m, "currency": c}},
        st.integers(0, 3000),
        st.sampled_from(["USD", "EUR"]),
    ),
    st.builds(lambda v: {"risk": v}, st.sampled_from(["low", "medium", "high"])),
    st.builds(lambda v: {"only": v}, st.sampled_from([HASH, OTHER])),
)
CONTEXTS = st.builds(
    lambda svc, verb, cap, dt, amount, cur, risk, h, spent: ctx(
        service=svc,
        verb=verb,
        capability=cap,
        now=NOW + dt,
        proposal=parley.ProposalFacts(
            h, None if amount is None else parley.grants.Cost(amount, cur), risk
        )
        if verb == "COMMIT"
        else None,
        spent=spent,
    ),
    st.sampled_from(["shop.example", "a", "b"]),
    st.sampled_from(["ASK", "INTENT", "COMMIT", "UNDO"]),
    st.sampled_from(["shop.order", "shop.search", "bank.pay"]),
    st.integers(-4, 4),
    st.none() | st.integers(0, 3500),
    st.sampled_from(["USD", "EUR"]),
    st.sampled_from(["low", "medium", "high"]),
    st.sampled_from([HASH, OTHER]),
    st.just({}),
)


def _raw_delegate(token: str, signer: parley.Key, sub: parley.Key, caveats: list[Any]) -> str:
    """Append a block without delegate()'s narrowing check (an attacker's own tool)."""
    grant = parley.decode_grant(token)
    payload = {"prev": grant.blocks[-1].id, "sub": sub.public, "caveats": caveats, "iat": NOW}
    block = {"p": payload, "s": signer.sign(parley.canonical(payload).encode())}
    blocks = [b.as_json() for b in grant.blocks] + [block]
    return "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())


@settings(max_examples=300)
@given(st.lists(CAVEATS, max_size=3), st.lists(CAVEATS, max_size=3), CONTEXTS)
def test_delegation_never_authorizes_more_than_its_parent(
    parent_caveats: list[Any], child_caveats: list[Any], context: parley.GrantContext
) -> None:
    parent = mint(parent_caveats, nonce="prop")
    child = _raw_delegate(parent, A, S, child_caveats)
    parent_result = parley.verify_grant(parent, trusted=[P.public], proof_key=A.public, ctx=context)
    child_result = parley.verify_grant(child, trusted=[P.public], proof_key=S.public, ctx=context)
    if child_result.ok:
        assert parent_result.ok
    if parent_result.code == "forbidden":
        assert child_result.code == "forbidden"


def test_upstream_format_grants_file_matches_verify_suite() -> None:
    data = json.loads(
        (TOP / "vectors/parley/upstream-format/grants.json").read_text(encoding="utf-8")
    )
    assert len(data["cases"]) >= 26
    codes = {c["expect"].get("code") for c in data["cases"]}
    assert codes == {None, "unauthorized", "forbidden", "consent_required"}


def test_commit_without_proposal_fails_commit_caveats_hard() -> None:
    capped = mint([{"per": {"max": 10, "currency": "USD"}}], nonce="np")
    result = parley.verify_grant(
        capped,
        trusted=[P.public],
        proof_key=A.public,
        ctx=parley.GrantContext("shop.example", "COMMIT", "shop.order", NOW),
    )
    assert (result.code, result.reason) == ("forbidden", "caveat_failed")
    free = parley.verify_grant(
        mint([{"svc": ["shop.example"]}], nonce="nf"),
        trusted=[P.public],
        proof_key=A.public,
        ctx=parley.GrantContext("shop.example", "COMMIT", "shop.order", NOW),
    )
    assert free.ok
