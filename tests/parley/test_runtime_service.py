"""The sans-IO service runtime: every enforcement rule and the seed's runtime findings."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

from .runtime_harness import AGENT, INTRUDER, OTHER_PRINCIPAL, PRINCIPAL, grant, load_shop

SHOP = load_shop()
NOW = 1_790_000_000


class Rig:
    """The example shop with a settable clock, and helpers to build signed frames."""

    def __init__(self, **store_options: Any) -> None:
        self.now = NOW
        self.store = parley.stores.MemoryStore(**store_options)
        self.service = SHOP.build_service(
            trusted=[PRINCIPAL.public, OTHER_PRINCIPAL.public],
            store=self.store,
            clock=lambda: self.now,
        )
        self.count = 0

    def fid(self) -> str:
        self.count += 1
        return f"f{self.count}"

    def send(self, frame: dict[str, Any] | bytes, now: int | None = None) -> dict[str, Any]:
        replies = self.service.handle(frame, now=self.now if now is None else now)
        return replies[-1]

    def proof(self, key: parley.Key, verb: str, target: str, ts: int | None = None) -> Any:
        return parley.sign_proof(
            key, aud="shop.example", verb=verb, target=target, ts=self.now if ts is None else ts
        )

    def intent(
        self,
        params: dict[str, Any],
        *,
        key: parley.Key | None = AGENT,
        grants: list[str] | None = None,
        capability: str = "shop.order",
        auto: bool = False,
        fid: str | None = None,
        ts: int | None = None,
    ) -> dict[str, Any]:
        frame: dict[str, Any] = {
            "parley": 1,
            "id": fid or self.fid(),
            "verb": "INTENT",
            "capability": capability,
            "params": params,
        }
        if auto:
            frame["auto"] = True
        if key is not None:
            target = parley.grants.proof_target(
                "INTENT", capability=capability, auto=auto, frame_id=frame["id"]
            )
            frame["proof"] = self.proof(key, "INTENT", target, ts)
            if grants:
                frame["grants"] = grants
        return frame

    def commit(
        self,
        proposal: dict[str, Any],
        *,
        key: parley.Key = AGENT,
        grants: list[str] | None = None,
        hash_: str | None = None,
    ) -> dict[str, Any]:
        digest = proposal["hash"] if hash_ is None else hash_
        return {
            "parley": 1,
            "id": self.fid(),
            "verb": "COMMIT",
            "proposal": proposal["id"],
            "hash": digest,
            "grants": grants if grants is not None else [grant(key, now=NOW)],
            "proof": self.proof(key, "COMMIT", digest),
        }

    def undo(self, receipt: str, *, key: parley.Key = AGENT, grants: list[str] | None = None):
        return {
            "parley": 1,
            "id": self.fid(),
            "verb": "UNDO",
            "receipt": receipt,
            "grants": grants if grants is not None else [grant(key, now=NOW)],
            "proof": self.proof(key, "UNDO", receipt),
        }

    def proposals(self, params: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
        got = self.send(self.intent(params or {"item": "latte"}, **kw))
        assert got["kind"] == "PROPOSALS", got
        result: list[dict[str, Any]] = got["proposals"]
        return result


# ------------------------------------------------------------------ frames


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "not_json"),
        (b"[1,2]", "not_object"),
        (b'{"parley":2,"id":"1","verb":"HELLO"}', "bad_version"),
        (b'{"parley":1,"verb":"HELLO"}', "bad_id"),
        (b'{"parley":1,"id":"","verb":"HELLO"}', "bad_id"),
        (b'{"parley":1,"id":"1"}', "bad_envelope"),
        (b'{"parley":1,"id":"1","id":"2","verb":"HELLO"}', "duplicate_key"),
        (b'{"parley":1,"id":"1","verb":"HELLO","x":NaN}', "not_json"),
        (b"\xff\xfe", "not_utf8"),
        (b'{"parley":1,"id":"1","verb":"DANCE"}', "unknown_verb"),
        (b'{"parley":1,"id":"1","verb":"HELLO","x":' + b"[" * 100 + b"]" * 100 + b"}", "too_deep"),
        (b" " * (parley.wire.MAX_FRAME + 1), "too_large"),
    ],
)
def test_malformed_frames_become_bad_frame_errors(data: bytes, reason: str) -> None:
    reply = Rig().send(data)
    assert reply["kind"] == "ERROR"
    assert reply["code"] == "bad_frame"
    assert reply["reason"] == reason


def test_unknown_fields_are_ignored_and_re_names_the_request() -> None:
    reply = Rig().send(b'{"parley":1,"id":"q1","verb":"HELLO","future":{"x":1}}')
    assert reply["kind"] == "BRIEF"
    assert reply["re"] == "q1"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_no_input_makes_handle_raise(data: bytes) -> None:
    replies = Rig().service.handle(data, now=NOW)
    assert replies[-1]["kind"] in ("ERROR", "BRIEF")


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "verb",
                "capability",
                "params",
                "proof",
                "grants",
                "budget",
                "auto",
                "proposal",
                "hash",
                "receipt",
                "handle",
            ]
        ),
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=8)
        | st.lists(st.integers(), max_size=3)
        | st.dictionaries(st.text(max_size=3), st.integers()),
    )
)
def test_any_request_shape_gets_one_final_reply(fields: dict[str, Any]) -> None:
    frame = {"parley": 1, "id": "x", **fields}
    replies = Rig().service.handle(frame, now=NOW)
    assert replies[-1]["kind"] != "EVENT"
    assert replies[-1]["re"] == "x"
    json.dumps(replies)


def test_frame_limit_is_checked_before_parsing() -> None:
    big = json.dumps({"parley": 1, "id": "1", "verb": "HELLO", "pad": "x" * parley.wire.MAX_FRAME})
    assert Rig().send(big.encode())["reason"] == "too_large"


# ------------------------------------------------------------------ params, capabilities


def test_params_are_checked_with_fixes() -> None:
    rig = Rig()
    reply = rig.send(rig.intent({"item": "latte", "qty": "2"}))
    assert reply["code"] == "invalid_params"
    assert reply["fix"] == [{"say": "send int", "params": {"qty": 2}}]
    reply = rig.send(rig.intent({"item": "latte", "ship": "drone"}))
    assert reply["fix"][0] == {"say": "use pickup", "params": {"ship": "pickup"}}
    reply = rig.send(rig.intent({"item": "latte", "colour": "red"}))
    assert reply["reason"] == "unknown_param"
    assert reply["fix"] == [{"say": "drop `colour`", "params": {"colour": None}}]
    assert rig.send(rig.intent({}))["reason"] == "missing_param"


def test_capability_errors_and_suggestions() -> None:
    rig = Rig()
    reply = rig.send(rig.intent({}, capability="shop.ordr"))
    assert reply["code"] == "unknown_capability"
    assert "shop.order" in reply["message"]
    reply = rig.send(rig.intent({}, capability="shop.search"))
    assert reply["code"] == "unknown_capability"
    assert reply["reason"] == "wrong_kind"


def test_suggestions_are_not_computed_for_huge_names() -> None:
    rig = Rig()
    frame = {"parley": 1, "id": "1", "verb": "ASK", "capability": "shop.ord" * 100_000}
    reply = rig.send(frame)
    assert reply["code"] == "unknown_capability"
    assert "did you mean" not in reply["message"]
    assert len(reply["message"]) < 200


def test_clarify_options_are_merge_patches() -> None:
    rig = Rig()
    reply = rig.send(rig.intent({"item": "blend"}))
    assert reply["kind"] == "CLARIFY"
    patched = parley.service.merge_patch({"item": "blend"}, reply["options"][1]["params"])
    assert rig.send(rig.intent(patched))["kind"] == "PROPOSALS"


# ------------------------------------------------------------------ COMMIT


def test_commit_then_replay_returns_the_original_receipt() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    first = rig.send(rig.commit(proposal))
    assert first["kind"] == "RECEIPT"
    assert "replay" not in first
    again = rig.send(rig.commit(proposal))
    assert again["replay"] is True
    assert again["receipt"] == first["receipt"]
    orders = rig.send(
        {
            "parley": 1,
            "id": "o",
            "verb": "ASK",
            "capability": "shop.orders",
            "proof": rig.proof(AGENT, "ASK", "shop.orders"),
            "grants": [grant(now=NOW)],
        }
    )
    assert len(orders["data"]["orders"]) == 1


def test_commit_needs_the_exact_hash_and_never_echoes_it() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    wrong = parley.wire.b64url_encode(bytes(32))
    reply = rig.send(rig.commit(proposal, hash_=wrong))
    assert reply["code"] == "conflict"
    assert proposal["hash"] not in json.dumps(reply)
    assert wrong not in reply["message"]


def test_expired_proposal() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    rig.now = proposal["expires"]
    frame = rig.commit(proposal, grants=[grant(now=rig.now)])
    assert rig.send(frame)["code"] == "expired"


def test_anonymous_intent_proposals_are_never_committable() -> None:
    rig = Rig()
    proposal = rig.proposals(key=None)[0]
    reply = rig.send(rig.commit(proposal))
    assert reply["code"] == "forbidden"
    assert reply["reason"] == "anonymous_proposal"
    reply = rig.send(rig.commit(proposal, key=INTRUDER))
    assert reply["code"] == "forbidden"


def test_only_the_intent_key_may_commit() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    reply = rig.send(rig.commit(proposal, key=INTRUDER))
    assert reply["code"] == "not_found"
    assert rig.send(rig.commit(proposal))["kind"] == "RECEIPT"


def test_replayed_commit_by_another_key_leaks_nothing() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    receipt = rig.send(rig.commit(proposal))["receipt"]
    for hash_ in (proposal["hash"], parley.wire.b64url_encode(bytes(32))):
        reply = rig.send(rig.commit(proposal, key=INTRUDER, hash_=hash_))
        assert reply["code"] == "not_found"
        text = json.dumps(reply)
        assert receipt["id"] not in text
        assert proposal["hash"] not in text
    # the original key with a wrong hash gets a conflict without the hash either
    reply = rig.send(rig.commit(proposal, hash_=parley.wire.b64url_encode(bytes(32))))
    assert reply["code"] == "conflict"
    assert proposal["hash"] not in json.dumps(reply)


def test_grant_must_be_rooted_in_the_proposals_principal() -> None:
    rig = Rig()
    mine = grant(now=NOW)
    other = grant(principal=OTHER_PRINCIPAL, now=NOW, nonce="o")
    proposal = rig.proposals(grants=[mine])[0]
    reply = rig.send(rig.commit(proposal, grants=[other]))
    assert reply["code"] == "forbidden"
    assert reply["reason"] == "principal_mismatch"
    reply = rig.send(rig.commit(proposal, grants=[other, mine]))
    assert reply["kind"] == "RECEIPT"


def test_consent_required_carries_the_consent_request() -> None:
    rig = Rig()
    proposal = rig.proposals({"to": "a@example.com", "usd": 50}, capability="shop.gift_card")[0]
    reply = rig.send(rig.commit(proposal))
    assert reply["code"] == "consent_required"
    assert reply["consent"]["hash"] == proposal["hash"]
    assert reply["consent"]["principal"] == PRINCIPAL.public
    consent = parley.mint_consent_grant(PRINCIPAL, reply["consent"], AGENT.public, iat=NOW)
    done = rig.send(rig.commit(proposal, grants=[grant(now=NOW), consent]))
    assert done["kind"] == "RECEIPT"


def test_commit_needs_grant_and_proof() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    frame = rig.commit(proposal)
    assert rig.send({**frame, "grants": []})["code"] == "unauthorized"
    assert rig.send({k: v for k, v in frame.items() if k != "proof"})["code"] == "unauthorized"
    stale = {**frame, "proof": rig.proof(AGENT, "COMMIT", proposal["hash"], ts=NOW - 301)}
    assert rig.send(stale)["reason"] == "proof_expired"


def test_a_crashing_commit_leaves_nothing_behind() -> None:
    rig = Rig()
    cap = rig.service.capabilities["shop.order"]
    original = cap.commit
    spend = grant(now=NOW, extra=[{"spend": {"max": 1000, "currency": "USD"}}], nonce="s")
    blocks = parley.decode_grant(spend).block_ids
    proposal = rig.proposals(grants=[spend])[0]

    def boom(proposal: dict[str, Any], ctx: parley.Context) -> Any:
        raise RuntimeError("database password is hunter2")

    cap.commit = boom
    reply = rig.send(rig.commit(proposal, grants=[spend]))
    assert reply["code"] == "internal"
    assert "hunter2" not in json.dumps(reply)
    assert rig.store.spent(blocks) == dict.fromkeys(blocks, 0)
    assert rig.store.sizes()["inflight"] == 0
    cap.commit = original
    assert rig.send(rig.commit(proposal, grants=[spend]))["kind"] == "RECEIPT"
    assert rig.store.spent(blocks)[blocks[0]] == proposal["cost"]["amount"]


def test_retried_commit_is_not_refused_by_its_own_reservation() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    cap = proposal["cost"]["amount"]
    spend = grant(now=NOW, extra=[{"spend": {"max": cap, "currency": "USD"}}], nonce="s")
    proposal = rig.proposals(grants=[spend])[0]
    shop_cap = rig.service.capabilities["shop.order"]
    original = shop_cap.commit
    inner: list[dict[str, Any]] = []

    def retry_during(p: dict[str, Any], ctx: parley.Context) -> Any:
        inner.append(rig.send(rig.commit(proposal, grants=[spend])))
        assert original is not None
        return original(p, ctx)

    shop_cap.commit = retry_during
    first = rig.send(rig.commit(proposal, grants=[spend]))
    assert first["kind"] == "RECEIPT"
    assert inner[0]["code"] == "conflict"
    assert inner[0]["retry"] == 1
    after = rig.send(rig.commit(proposal, grants=[spend]))
    assert after["kind"] == "RECEIPT"
    assert after["replay"] is True


# ------------------------------------------------------------------ UNDO


def test_undo_window_principal_and_replay() -> None:
    rig = Rig()
    proposal = rig.proposals()[0]
    receipt = rig.send(rig.commit(proposal))["receipt"]
    other = grant(INTRUDER, OTHER_PRINCIPAL, now=NOW, nonce="x")
    reply = rig.send(rig.undo(receipt["id"], key=INTRUDER, grants=[other]))
    # another principal's key learns nothing, not even that the receipt exists
    assert (reply["code"], reply["reason"]) == ("not_found", "unknown_receipt")
    assert reply["message"] == rig.send(rig.undo("r_none", key=INTRUDER, grants=[other]))["message"]
    # the committing key under another principal's grant is told why
    mixed = rig.send(rig.undo(receipt["id"], grants=[grant(AGENT, OTHER_PRINCIPAL, now=NOW)]))
    assert (mixed["code"], mixed["reason"]) == ("forbidden", "principal_mismatch")
    undone = rig.send(rig.undo(receipt["id"]))
    assert undone["receipt"]["undoes"] == receipt["id"]
    again = rig.send(rig.undo(receipt["id"]))
    assert again["replay"] is True
    assert again["receipt"] == undone["receipt"]
    # another holder under the same principal gets no copy of the reversal
    sibling = grant(INTRUDER, PRINCIPAL, now=NOW, nonce="sib")
    reply = rig.send(rig.undo(receipt["id"], key=INTRUDER, grants=[sibling]))
    assert reply["code"] == "conflict"
    assert undone["receipt"]["id"] not in json.dumps(reply)


def test_undo_after_the_window_and_of_irreversible_actions() -> None:
    rig = Rig()
    receipt = rig.send(rig.commit(rig.proposals()[0]))["receipt"]
    rig.now = receipt["undo"]["until"]
    reply = rig.send(rig.undo(receipt["id"], grants=[grant(now=rig.now)]))
    assert reply["code"] == "expired"
    assert reply["reason"] == "undo_expired"
    rig.now = NOW
    gift = rig.proposals({"to": "a@example.com", "usd": 1}, capability="shop.gift_card")[0]
    consent = rig.send(rig.commit(gift))["consent"]
    token = parley.mint_consent_grant(PRINCIPAL, consent, AGENT.public, iat=NOW)
    done = rig.send(rig.commit(gift, grants=[token]))["receipt"]
    assert rig.send(rig.undo(done["id"]))["reason"] == "irreversible"
    assert rig.send(rig.undo("r_nothing"))["code"] == "not_found"


# ------------------------------------------------------------------ auto-commit


def test_auto_commit_inside_policy_and_fallback_outside() -> None:
    rig = Rig()
    reply = rig.send(
        rig.intent({"item": "latte", "ship": "pickup"}, auto=True, grants=[grant(now=NOW)])
    )
    assert reply["kind"] == "RECEIPT"
    assert reply["auto"] is True
    big = rig.send(rig.intent({"item": "latte", "qty": 9}, auto=True, grants=[grant(now=NOW)]))
    assert big["kind"] == "PROPOSALS", "over the per cap: proposals, not a receipt"
    anon = rig.send(rig.intent({"item": "latte"}, auto=True))
    assert anon["kind"] == "PROPOSALS"


def test_auto_replay_memory_outlives_proof_validity() -> None:
    rig = Rig()
    # A proof dated 300 s ahead is valid from NOW to NOW + 600.
    frame = rig.intent(
        {"item": "latte", "ship": "pickup"},
        auto=True,
        grants=[grant(now=NOW)],
        fid="auto-1",
        ts=NOW + 300,
    )
    first = rig.send(frame)
    assert first["kind"] == "RECEIPT"
    late = rig.send(frame, now=NOW + 599)
    assert late["kind"] == "RECEIPT"
    assert late["replay"] is True
    assert late["receipt"] == first["receipt"]
    assert rig.store.sizes()["receipts"] == 1, "committed once"
    # a changed body under the same (key, id) still gets the original answer
    changed = dict(frame, params={"item": "mocha", "ship": "pickup"})
    assert rig.send(changed, now=NOW + 10)["receipt"] == first["receipt"]


# ------------------------------------------------------------------ EXPAND, budgets


def test_handles_are_bound_to_the_requesting_key() -> None:
    rig = Rig()
    frame = {
        "parley": 1,
        "id": "a",
        "verb": "ASK",
        "capability": "shop.search",
        "params": {},
        "budget": 150,
        "proof": rig.proof(AGENT, "ASK", "shop.search"),
    }
    reply = rig.send(frame)
    handle = reply["more"][0]["handle"]
    stolen = {
        "parley": 1,
        "id": "b",
        "verb": "EXPAND",
        "handle": handle,
        "proof": rig.proof(INTRUDER, "EXPAND", handle),
    }
    assert rig.send(stolen)["code"] == "not_found"
    assert (
        rig.send({"parley": 1, "id": "c", "verb": "EXPAND", "handle": handle})["code"]
        == "not_found"
    )
    mine = {
        "parley": 1,
        "id": "d",
        "verb": "EXPAND",
        "handle": handle,
        "budget": 100000,
        "proof": rig.proof(AGENT, "EXPAND", handle),
    }
    got = rig.send(mine)
    assert got["kind"] == "ANSWER"
    assert len(got["data"]["items"]) == reply["more"][0]["remaining"]
    rig.now += 601
    late = dict(mine, proof=rig.proof(AGENT, "EXPAND", handle))
    assert rig.send(late)["code"] in ("expired", "not_found")


def test_brief_fits_small_budgets() -> None:
    reply = Rig().send({"parley": 1, "id": "h", "verb": "HELLO", "budget": 30})
    assert reply["kind"] == "BRIEF"
    assert reply["more"][0]["path"] == "capabilities"
    assert (
        Rig().send({"parley": 1, "id": "h", "verb": "HELLO", "budget": "x"})["code"] == "bad_frame"
    )


# ------------------------------------------------------------------ bounded state


def test_state_maps_are_bounded() -> None:
    rig = Rig(max_proposals=4, max_replay=2)
    vouched = [grant(now=rig.now)]  # only granted INTENTs fill the committable pool
    first = rig.proposals(grants=vouched)
    rig.proposals(grants=vouched)
    # Full of open proposals: the oldest are forgotten (refusing would let anyone with a
    # fresh key shut INTENT off for everybody); a forgotten one is simply not found.
    assert rig.send(rig.intent({"item": "latte"}, grants=vouched))["kind"] == "PROPOSALS"
    assert rig.store.sizes()["proposals"] == 4
    assert rig.send(rig.commit(first[0]))["code"] == "not_found"
    rig.now += 600 + 700  # past expiry and grace: old proposals are forgotten
    assert rig.send(rig.intent({"item": "latte"}, ts=rig.now))["kind"] == "PROPOSALS"
    g = grant(now=rig.now)
    for n in range(2):
        got = rig.send(
            rig.intent({"item": "latte", "qty": 50}, auto=True, grants=[g], fid=f"r{n}", ts=rig.now)
        )
        assert got["kind"] in ("PROPOSALS", "ERROR")
    full = rig.send(rig.intent({"item": "latte"}, auto=True, grants=[g], fid="r9", ts=rig.now))
    assert full["code"] == "limit", "live replay memory is never dropped to make room"


# ------------------------------------------------------------------ concurrency


def test_concurrent_commits_from_threads_never_pass_the_spend_cap() -> None:
    rig = Rig()
    spend = grant(now=NOW, extra=[{"spend": {"max": 1000, "currency": "USD"}}], nonce="race")
    block = parley.decode_grant(spend).block_ids[0]
    proposals = [
        rig.proposals({"item": "espresso", "ship": "pickup"}, grants=[spend])[0] for _ in range(64)
    ]
    frames = [rig.commit(p, grants=[spend]) for p in proposals]
    replies: list[dict[str, Any]] = []
    barrier = threading.Barrier(64)

    def go(frame: dict[str, Any]) -> None:
        barrier.wait()
        replies.append(rig.send(frame))

    threads = [threading.Thread(target=go, args=(f,)) for f in frames]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in replies if r["kind"] == "RECEIPT"]
    price = proposals[0]["cost"]["amount"]
    assert len(ok) == 1000 // price
    assert all(r["code"] == "consent_required" for r in replies if r["kind"] == "ERROR")
    assert rig.store.spent([block])[block] == len(ok) * price <= 1000
