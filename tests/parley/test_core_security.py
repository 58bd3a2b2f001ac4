"""Regression tests for the security findings of the Parley design notes that touch the
authorization core (the others concern the runtime and bridges and are tested there).

Findings covered here: concurrent commits passing a spend cap (high); a bridge asked to
sign consent for another service's proposal (high); a retried commit refused by its own
spend (medium); ``risk: "toString"`` failing open (low); grant selection ignoring the
proposal's principal (low); ``checkGrant`` throwing on a null caveat (low); plus the
review's earlier fixes in this area: the consent grant broader than one proposal, string
caveats passing by substring, and replayable auto-commit proofs.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import parley

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
OP = parley.key_from_seed(b"\x05" * 32)
PROPOSAL: dict[str, Any] = {
    "id": "p_1",
    "capability": "shop.order",
    "summary": "Order 2 coffees",
    "effects": [{"op": "charge", "target": "card", "to": 1250}],
    "cost": {"amount": 1250, "currency": "USD"},
    "risk": "low",
    "undo": {"window": 600},
    "expires": NOW + 600,
}
HASH = parley.proposal_hash(PROPOSAL)


def _ctx(**kw: Any) -> parley.GrantContext:
    base: dict[str, Any] = {
        "service": "shop.example",
        "verb": "COMMIT",
        "capability": "shop.order",
        "now": NOW,
        "proposal": parley.ProposalFacts.from_json({**PROPOSAL, "hash": HASH}),
    }
    return parley.GrantContext(**(base | kw))


def _check(token: str | list[str], **kw: Any) -> parley.GrantCheck:
    trusted = [P.public, OP.public]
    return parley.verify_grant(token, trusted=trusted, proof_key=A.public, ctx=_ctx(**kw))


def test_concurrent_commits_never_exceed_the_spend_cap() -> None:
    token = parley.mint_grant(P, A.public, [{"spend": {"max": 10000, "currency": "USD"}}], iat=NOW)
    ledger = parley.stores.MemorySpendLedger()
    committed: list[str] = []
    refusals: list[str | None] = []
    start = threading.Barrier(24)

    def commit(n: int) -> None:
        key = f"p_{n}"
        start.wait()
        check = _check(token)
        spent = ledger.totals([c.block for c in check.spend_caps], excluding=key)
        again = _check(token, spent=spent)  # the caller's check may race; reserve decides
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
    first = _check(token)
    assert ledger.reserve("p_1", first.spend_caps, 1250, "USD") is True
    ledger.commit("p_1")
    blocks = [c.block for c in first.spend_caps]
    # The retry sees the totals without its own commit, so the grant still authorizes it
    retry = _check(token, spent=ledger.totals(blocks, excluding="p_1"))
    assert retry.ok
    assert ledger.reserve("p_1", retry.spend_caps, 1250, "USD") is False  # not counted twice
    # ... while any other proposal is now over the cap.
    other = _check(token, spent=ledger.totals(blocks, excluding="p_2"))
    assert other.code == "consent_required"


def test_consent_for_another_services_proposal_is_refused() -> None:
    evil = parley.consent_request(PROPOSAL, service="bank.example", principal=P.public)
    with pytest.raises(parley.ParleyError) as caught:
        parley.grants.consent_for_shown(PROPOSAL, service="shop.example", request=evil)
    assert (caught.value.code, caught.value.reason) == ("conflict", "consent_mismatch")
    other = {**PROPOSAL, "summary": "Transfer 5000 USD", "id": "p_2"}
    swapped = parley.consent_request(other, service="shop.example", principal=P.public)
    friendly = {**swapped, "summary": PROPOSAL["summary"]}
    with pytest.raises(parley.ParleyError):
        parley.grants.consent_for_shown(PROPOSAL, service="shop.example", request=friendly)


def test_risk_tostring_fails_closed() -> None:
    for value in ("toString", "constructor", "__proto__", "valueOf", "LOW", ""):
        token = parley.mint_grant(P, A.public, [], iat=NOW)
        blocks = [b.as_json() for b in parley.decode_grant(token).blocks]
        blocks[0]["p"]["caveats"] = [{"risk": value}]
        blocks[0]["s"] = P.sign(parley.canonical(blocks[0]["p"]).encode())
        forged = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
        result = _check(forged)
        assert (result.code, result.reason) == ("forbidden", "caveat_malformed"), value


@pytest.mark.parametrize("caveat", [None, [], "risk", 0, {"svc": None}, {"exp": None}])
def test_null_and_odd_caveats_never_raise(caveat: Any) -> None:
    payload = {"iss": P.public, "sub": A.public, "caveats": [caveat], "iat": NOW, "nonce": "n"}
    blocks = [{"p": payload, "s": P.sign(parley.canonical(payload).encode())}]
    token = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
    result = _check(token, verb="ASK", proposal=None)
    assert (result.code, result.reason) == ("forbidden", "caveat_malformed")
    assert result.need == (caveat,)


def test_grant_selection_respects_the_principal_of_the_operation() -> None:
    mine = parley.mint_grant(P, A.public, [], iat=NOW, nonce="mine")
    theirs = parley.mint_grant(OP, A.public, [], iat=NOW, nonce="theirs")
    result = _check([theirs, mine], verb="UNDO", proposal=None, principal=P.public)
    assert result.ok
    assert result.index == 1
    assert result.principal == P.public
    denied = _check([theirs], verb="UNDO", proposal=None, principal=P.public)
    assert (denied.code, denied.reason) == ("forbidden", "principal_mismatch")


def test_consent_grant_authorizes_one_commit_and_nothing_else() -> None:
    consent = parley.consent_request(PROPOSAL, service="shop.example", principal=P.public)
    token = parley.mint_consent_grant(P, consent, A.public, iat=NOW)
    caveats = parley.decode_grant(token).blocks[0].raw_caveats
    assert [next(iter(c)) for c in caveats] == ["svc", "verbs", "can", "only", "exp"]
    assert _check(token).ok
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
        assert _check(token, **change).code == "forbidden", change


def test_string_caveat_is_not_a_substring_match() -> None:
    for caveat in ({"svc": "shop.example"}, {"can": "shop.order"}, {"verbs": "COMMIT"}):
        payload = {"iss": P.public, "sub": A.public, "caveats": [caveat], "iat": NOW, "nonce": "n"}
        blocks = [{"p": payload, "s": P.sign(parley.canonical(payload).encode())}]
        token = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
        assert _check(token).reason == "caveat_malformed"


def test_consent_grant_needs_the_named_principal() -> None:
    consent = parley.consent_request(PROPOSAL, service="shop.example", principal=P.public)
    with pytest.raises(parley.ParleyError) as caught:
        parley.mint_consent_grant(A, consent, A.public, iat=NOW)
    assert caught.value.reason == "principal_mismatch"
