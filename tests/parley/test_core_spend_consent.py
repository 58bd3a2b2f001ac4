"""Consent (SPEC.md section 6.6) and spend accounting: the ledger reserves, commits and
releases atomically under threads, concurrent or split commits never pass a ``spend`` cap,
and a consent grant authorizes one proposal of one service for its named principal only.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

from .orders import commit_check, order

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


PROPOSAL = order(effects=[], risk="high", undo=None)


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


# -------------------------------- splitting a spend, pinning the principal


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
    proposal = order(effects=[], cost=None, risk="high", undo=None)
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


# -------------------------------- security findings: spend caps under concurrency, consent scope


OP = parley.key_from_seed(b"\x05" * 32)
ORDER = order()


def test_concurrent_commits_never_exceed_the_spend_cap() -> None:
    token = parley.mint_grant(P, A.public, [{"spend": {"max": 10000, "currency": "USD"}}], iat=NOW)
    ledger = parley.stores.MemorySpendLedger()
    committed: list[str] = []
    refusals: list[str | None] = []
    start = threading.Barrier(24)

    def commit(n: int) -> None:
        key = f"p_{n}"
        start.wait()
        check = commit_check(token)
        spent = ledger.totals([c.block for c in check.spend_caps], excluding=key)
        again = commit_check(token, spent=spent)  # the caller's check may race; reserve decides
        if not again.ok:
            return
        try:
            ledger.reserve(key, again.spend_caps, 1250, "USD")
        except parley.ParleyError as exc:
            refusals.append(exc.reason)
            return
        ledger.commit(key)
        committed.append(key)

    threads = [threading.Thread(target=commit, args=(n,)) for n in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    grant_id = parley.decode_grant(token).id
    assert len(committed) == 8  # 8 x 1250 = 10000
    assert set(refusals) <= {"spend_exceeded"}
    assert ledger.totals([grant_id]) == {grant_id: 10000}


def test_retried_commit_is_not_refused_by_its_own_spend() -> None:
    token = parley.mint_grant(P, A.public, [{"spend": {"max": 1250, "currency": "USD"}}], iat=NOW)
    ledger = parley.stores.MemorySpendLedger()
    first = commit_check(token)
    assert ledger.reserve("p_1", first.spend_caps, 1250, "USD") is True
    ledger.commit("p_1")
    blocks = [c.block for c in first.spend_caps]
    # The retry sees the totals without its own commit, so the grant still authorizes it
    retry = commit_check(token, spent=ledger.totals(blocks, excluding="p_1"))
    assert retry.ok
    assert ledger.reserve("p_1", retry.spend_caps, 1250, "USD") is False  # not counted twice
    # ... while any other proposal is now over the cap.
    other = commit_check(token, spent=ledger.totals(blocks, excluding="p_2"))
    assert other.code == "consent_required"


def test_consent_for_another_services_proposal_is_refused() -> None:
    evil = parley.consent_request(ORDER, service="bank.example", principal=P.public)
    with pytest.raises(parley.ParleyError) as caught:
        parley.grants.consent_for_shown(ORDER, service="shop.example", request=evil)
    assert (caught.value.code, caught.value.reason) == ("conflict", "consent_mismatch")
    other = {**ORDER, "summary": "Transfer 5000 USD", "id": "p_2"}
    swapped = parley.consent_request(other, service="shop.example", principal=P.public)
    friendly = {**swapped, "summary": ORDER["summary"]}
    with pytest.raises(parley.ParleyError):
        parley.grants.consent_for_shown(ORDER, service="shop.example", request=friendly)


def test_consent_grant_authorizes_one_commit_and_nothing_else() -> None:
    consent = parley.consent_request(ORDER, service="shop.example", principal=P.public)
    token = parley.mint_consent_grant(P, consent, A.public, iat=NOW)
    caveats = parley.decode_grant(token).blocks[0].raw_caveats
    assert [next(iter(c)) for c in caveats] == ["svc", "verbs", "can", "only", "exp"]
    assert commit_check(token).ok
    refusals = [
        {"verb": "UNDO", "proposal": None},
        {"verb": "ASK", "proposal": None},
        {"verb": "INTENT", "proposal": None},
        {"service": "bank.example"},
        {"capability": "shop.refund"},
        {"proposal": parley.ProposalFacts("other-hash", None, "low")},
        {"now": NOW + 600},
    ]
    for change in refusals:
        assert commit_check(token, **change).code == "forbidden", change


def test_consent_grant_needs_the_named_principal() -> None:
    consent = parley.consent_request(ORDER, service="shop.example", principal=P.public)
    with pytest.raises(parley.ParleyError) as caught:
        parley.mint_consent_grant(A, consent, A.public, iat=NOW)
    assert caught.value.reason == "principal_mismatch"
