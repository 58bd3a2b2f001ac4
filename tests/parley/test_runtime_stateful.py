"""A state machine over the runtime: two agents, two principals, replays and races.

Whatever the order of INTENTs, COMMITs, replays, UNDOs and clock moves, a proposal runs at
most once, only the key of its INTENT commits it, a replay never reaches another key,
spend never passes the cap, and every reply names its request.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import parley

from .runtime_harness import AGENT, INTRUDER, OTHER_PRINCIPAL, PRINCIPAL, load_shop

SHOP = load_shop()
NOW = 1_790_000_000
CAP = 1500
KEYS = {"agent": AGENT, "intruder": INTRUDER}
PRINCIPALS = {"agent": PRINCIPAL, "intruder": OTHER_PRINCIPAL}


def _grant(who: str) -> str:
    caveats = [
        {"svc": ["shop.example"]},
        {"spend": {"max": CAP, "currency": "USD"}},
        {"exp": NOW + 10_000},
    ]
    return parley.mint_grant(PRINCIPALS[who], KEYS[who].public, caveats, iat=NOW, nonce=who)


GRANTS = {who: _grant(who) for who in KEYS}
BLOCKS = {who: parley.decode_grant(GRANTS[who]).block_ids[0] for who in KEYS}


class Runtime(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = NOW
        self.store = parley.stores.MemoryStore(max_proposals=50)
        self.service = SHOP.build_service(
            trusted=[PRINCIPAL.public, OTHER_PRINCIPAL.public], store=self.store
        )
        self.proposals: list[tuple[str, dict[str, Any]]] = []
        self.receipts: dict[str, tuple[str, dict[str, Any]]] = {}  # proposal id -> (who, r)
        self.executed: dict[str, int] = {}
        self.count = 0
        cap = self.service.capabilities["shop.order"]
        inner = cap.commit
        assert inner is not None

        def counting(proposal: dict[str, Any], ctx: parley.Context) -> Any:
            self.executed[proposal["id"]] = self.executed.get(proposal["id"], 0) + 1
            return inner(proposal, ctx)

        cap.commit = counting

    def send(self, frame: dict[str, Any]) -> dict[str, Any]:
        replies = self.service.handle(json.dumps(frame).encode(), now=self.now)
        assert all(r["re"] == frame["id"] for r in replies)
        return replies[-1]

    def fid(self) -> str:
        self.count += 1
        return f"f{self.count}"

    def proof(self, who: str, verb: str, target: str) -> dict[str, Any]:
        key = KEYS[who]
        return parley.sign_proof(key, aud="shop.example", verb=verb, target=target, ts=self.now)

    @rule(who=st.sampled_from(["agent", "intruder"]), qty=st.integers(1, 3), auto=st.booleans())
    def intent(self, who: str, qty: int, auto: bool) -> None:
        fid = self.fid()
        target = parley.grants.proof_target(
            "INTENT", capability="shop.order", auto=auto, frame_id=fid
        )
        frame = {
            "parley": 1,
            "id": fid,
            "verb": "INTENT",
            "capability": "shop.order",
            "params": {"item": "espresso", "qty": qty, "ship": "pickup"},
            "auto": auto,
            "grants": [GRANTS[who]],
            "proof": self.proof(who, "INTENT", target),
        }
        reply = self.send(frame)
        if reply["kind"] == "PROPOSALS":
            self.proposals.extend((who, p) for p in reply["proposals"])
        elif reply["kind"] == "RECEIPT":
            receipt = reply["receipt"]
            self.receipts[receipt["proposal"]] = (who, receipt)

    @rule(data=st.data(), who=st.sampled_from(["agent", "intruder"]))
    def commit(self, data: st.DataObject, who: str) -> None:
        if not self.proposals:
            return
        owner, proposal = data.draw(st.sampled_from(self.proposals))
        frame = {
            "parley": 1,
            "id": self.fid(),
            "verb": "COMMIT",
            "proposal": proposal["id"],
            "hash": proposal["hash"],
            "grants": [GRANTS[who]],
            "proof": self.proof(who, "COMMIT", proposal["hash"]),
        }
        reply = self.send(frame)
        if reply["kind"] == "RECEIPT":
            assert who == owner, "only the INTENT's key commits"
            earlier = self.receipts.get(proposal["id"])
            if earlier is not None:
                assert reply.get("replay") is True
                assert reply["receipt"] == earlier[1]
            self.receipts[proposal["id"]] = (who, reply["receipt"])
        elif who != owner:
            assert proposal["hash"] not in json.dumps(reply)

    @rule(data=st.data(), who=st.sampled_from(["agent", "intruder"]))
    def undo(self, data: st.DataObject, who: str) -> None:
        if not self.receipts:
            return
        owner, receipt = data.draw(st.sampled_from(sorted(self.receipts.values(), key=str)))
        frame = {
            "parley": 1,
            "id": self.fid(),
            "verb": "UNDO",
            "receipt": receipt["id"],
            "grants": [GRANTS[who]],
            "proof": self.proof(who, "UNDO", receipt["id"]),
        }
        reply = self.send(frame)
        if reply["kind"] == "RECEIPT":
            assert who == owner, "undo only under the committing principal"

    @rule(seconds=st.sampled_from([1, 60, 700, 2000]))
    def tick(self, seconds: int) -> None:
        self.now += seconds

    @invariant()
    def each_proposal_ran_at_most_once(self) -> None:
        assert all(n == 1 for n in self.executed.values())

    @invariant()
    def spend_stays_under_the_cap(self) -> None:
        for who, block in BLOCKS.items():
            spent = self.store.spent([block])[block]
            assert spent <= CAP, who
            counted = sum(
                r["cost"]["amount"] for owner, r in self.receipts.values() if owner == who
            )
            assert spent == counted


Runtime.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestRuntime = Runtime.TestCase
