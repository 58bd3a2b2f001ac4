"""Spend ledger (reserve/commit/release under threads) and consent objects (SPEC.md 6.6)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
CAPS = [parley.grants.SpendCap("root", 5000, "USD"), parley.grants.SpendCap("child", 3000, "USD")]


def test_ledger_is_a_spend_ledger() -> None:
    assert isinstance(parley.stores.MemorySpendLedger(), parley.stores.SpendLedger)


@settings(max_examples=25)
@given(st.lists(st.integers(0, 1500), min_size=1, max_size=24), st.integers(0, 6000))
def test_concurrent_reservations_never_exceed_the_cap(amounts: list[int], cap: int) -> None:
    ledger = parley.stores.MemorySpendLedger()
    caps = [parley.grants.SpendCap("b", cap, "USD")]
    won: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(amounts))

    def run(n: int, amount: int) -> None:
        barrier.wait()
        try:
            ledger.reserve(f"k{n}", caps, amount, "USD")
        except parley.ParleyError:
            return
        ledger.commit(f"k{n}")
        with lock:
            won.append(amount)

    threads = [threading.Thread(target=run, args=(n, a)) for n, a in enumerate(amounts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(won) <= cap
    assert ledger.totals(["b"]) == {"b": sum(won)}


def test_reserve_checks_every_cap_and_is_all_or_nothing() -> None:
    ledger = parley.stores.MemorySpendLedger()
    assert ledger.reserve("p1", CAPS, 2500, "USD")
    with pytest.raises(parley.ParleyError) as caught:
        ledger.reserve("p2", CAPS, 600, "USD")  # root would fit (3100), child would not (3100)
    assert (caught.value.code, caught.value.reason) == ("consent_required", "spend_exceeded")
    assert ledger.totals(["root", "child"]) == {"root": 2500, "child": 2500}


def test_release_and_commit_rules() -> None:
    ledger = parley.stores.MemorySpendLedger()
    ledger.reserve("p1", CAPS, 3000, "USD")
    assert ledger.release("p1") is True
    assert ledger.release("p1") is False
    ledger.reserve("p2", CAPS, 3000, "USD")
    ledger.commit("p2")
    ledger.commit("p2")  # idempotent
    assert ledger.release("p2") is False  # committed spend is never given back
    assert ledger.totals(["child"]) == {"child": 3000}
    assert ledger.totals(["child"], excluding="p2") == {"child": 0}
    with pytest.raises(parley.ParleyError):
        ledger.commit("never-reserved")


@pytest.mark.parametrize(("key", "amount"), [("", 1), ("k", -1), ("k", 1.5), (None, 1)])
def test_reserve_refuses_bad_input_without_change(key: Any, amount: Any) -> None:
    ledger = parley.stores.MemorySpendLedger()
    with pytest.raises(parley.ParleyError):
        ledger.reserve(key, CAPS, amount, "USD")
    assert ledger.totals(["root"]) == {"root": 0}


PROPOSAL: dict[str, Any] = {
    "id": "p_1",
    "capability": "shop.order",
    "summary": "Order 2 coffees",
    "effects": [],
    "cost": {"amount": 1250, "currency": "USD"},
    "risk": "high",
    "undo": None,
    "expires": NOW + 600,
}


def test_consent_round_trip() -> None:
    consent = parley.consent_request(PROPOSAL, service="shop.example", principal=P.public)
    assert consent == {
        "proposal": "p_1",
        "hash": parley.proposal_hash(PROPOSAL),
        "service": "shop.example",
        "capability": "shop.order",
        "principal": P.public,
        "summary": "Order 2 coffees",
        "expires": NOW + 600,
    }
    shown = parley.grants.consent_for_shown(PROPOSAL, service="shop.example", request=consent)
    assert shown == consent
    token = parley.mint_consent_grant(P, shown, A.public, iat=NOW)
    result = parley.verify_grant(
        token,
        trusted=[P.public],
        proof_key=A.public,
        ctx=parley.GrantContext(
            "shop.example",
            "COMMIT",
            "shop.order",
            NOW,
            parley.ProposalFacts.from_json({**PROPOSAL, "hash": consent["hash"]}),
        ),
    )
    assert result.ok


@pytest.mark.parametrize(
    "bad",
    [None, [], {"id": "p"}, {**PROPOSAL, "expires": "soon"}, {**PROPOSAL, "hash": "wrong"}],
)
def test_consent_request_refuses_bad_proposals(bad: Any) -> None:
    with pytest.raises(parley.ParleyError):
        parley.consent_request(bad, service="shop.example", principal=P.public)


@pytest.mark.parametrize("request_", [None, {}, {"proposal": "p_1"}, "consent"])
def test_consent_for_shown_refuses_malformed_requests(request_: Any) -> None:
    with pytest.raises(parley.ParleyError):
        parley.grants.consent_for_shown(PROPOSAL, service="shop.example", request=request_)


# ------------------------------------------------------------------ spend splitting


def test_two_proposals_under_the_cap_cannot_exceed_it_together() -> None:
    token = parley.mint_grant(
        P, A.public, [{"spend": {"max": 10000, "currency": "USD"}}], iat=NOW, nonce="n"
    )
    ledger = parley.stores.MemorySpendLedger()
    outcomes = []
    for key, digest in (("p_1", "h1"), ("p_2", "h2")):
        blocks = parley.decode_grant(token).block_ids
        facts = parley.ProposalFacts(digest, parley.grants.Cost(6000, "USD"), "low")
        ctx = parley.GrantContext(
            "s", "COMMIT", "c", NOW, proposal=facts, spent=ledger.totals(blocks, excluding=key)
        )
        check = parley.verify_grant([token], trusted=[P.public], proof_key=A.public, ctx=ctx)
        if not check.ok:
            outcomes.append(check.code)
            continue
        assert ledger.reserve(key, list(check.spend_caps), 6000, "USD")
        ledger.commit(key)
        outcomes.append("ok")
    assert outcomes == ["ok", "consent_required"]
    # the retry of the first is not refused by its own spend, and is not counted twice
    blocks = parley.decode_grant(token).block_ids
    facts = parley.ProposalFacts("h1", parley.grants.Cost(6000, "USD"), "low")
    ctx = parley.GrantContext(
        "s", "COMMIT", "c", NOW, proposal=facts, spent=ledger.totals(blocks, excluding="p_1")
    )
    check = parley.verify_grant([token], trusted=[P.public], proof_key=A.public, ctx=ctx)
    assert check.ok
    assert ledger.reserve("p_1", list(check.spend_caps), 6000, "USD") is False
    assert ledger.totals(blocks) == {blocks[0]: 6000}


def test_consent_for_shown_can_pin_the_principal() -> None:
    proposal = {
        "id": "p_1",
        "capability": "shop.order",
        "summary": "Order 2 coffees",
        "effects": [],
        "cost": None,
        "risk": "high",
        "undo": None,
        "expires": NOW + 600,
    }
    other = parley.key_from_seed(b"\x05" * 32).public
    request = parley.consent_request(proposal, service="shop.example", principal=other)
    with pytest.raises(parley.ParleyError) as caught:
        parley.grants.consent_for_shown(
            proposal, service="shop.example", request=request, principals=[P.public]
        )
    assert (caught.value.code, caught.value.reason) == ("conflict", "consent_mismatch")
    ok = parley.grants.consent_for_shown(
        proposal, service="shop.example", request=request, principals={P.public, other}
    )
    assert ok["principal"] == other
    assert parley.grants.consent_for_shown(proposal, service="shop.example", request=request) == ok
    with pytest.raises(parley.ParleyError):
        parley.grants.consent_for_shown(
            proposal,
            service="shop.example",
            request=request,
            principals=other,  # type: ignore[arg-type]
        )
