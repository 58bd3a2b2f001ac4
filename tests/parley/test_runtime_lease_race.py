"""A commit or undo slower than its lease runs once and is counted once (review F2).

Two :class:`parley.Service` objects with their own connections to one SQLite file stand
for two service processes. The owner's commit (undo) callable is held on an event while
the other service retries or recovers; nothing here is timed: the test waits for the
owner's lease to be renewed in the store (bounded), then asks the question.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import parley

from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID, grant

pytestmark = pytest.mark.slow  # real threads waiting on real lease renewals (1 to 3 s)

LEASE = 1  # seconds: the heartbeat renews every third of it


class Shop:
    """One service 'process' on the shared file; its effects go to a shared ledger."""

    def __init__(self, db: Path, owner: str, ledger: list[tuple[str, str]], *, slow: bool):
        self.entered, self.release = threading.Event(), threading.Event()
        if not slow:
            self.release.set()
        self.svc = parley.Service(
            SERVICE_ID,
            name="shop",
            trusted=[PRINCIPAL.public],
            store=parley.stores.SQLiteStore(str(db)),
            commit_lease=LEASE,
            owner=owner,
        )
        lock = threading.Lock()

        @self.svc.intent("shop.order", risk="low")
        def order(params: Any, ctx: Any) -> list[dict[str, Any]]:
            effects = [{"op": "charge", "target": "card"}]
            return [parley.offer("coffee", effects, cost=(1000, "USD"), undo=3600)]

        def effect(kind: str, key: str) -> None:
            self.entered.set()
            assert self.release.wait(30)
            with lock:
                ledger.append((kind, key))

        @order.on_commit
        def commit(proposal: Any, ctx: Any) -> Any:
            effect("commit", ctx.idempotency_key)
            return {"charged": 1000}

        @order.on_undo
        def undo(receipt: Any, ctx: Any) -> Any:
            effect("undo", ctx.idempotency_key)
            return {"refunded": 1000}

        def seen(kind: str, key: str) -> parley.service.Outcome:
            with lock:
                return (
                    parley.service.happened()
                    if (kind, key) in ledger
                    else parley.service.not_happened()
                )

        order.on_reconcile(lambda p, ctx: seen("commit", ctx.idempotency_key))
        order.on_reconcile_undo(lambda r, ctx: seen("undo", ctx.idempotency_key))


def _renewed(store: parley.stores.SQLiteStore, kind: Any, subject: str, past: int) -> None:
    """Wait (at most 10 s) until the lease on ``subject`` runs past ``past``."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lease = store.lease(kind, subject)
        if lease is not None and lease.until > past:
            return
        time.sleep(0.05)


def _run(target: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.setdefault("reply", target()))
    thread.start()
    return thread, out


def _setup(tmp_path: Path) -> tuple[Shop, Shop, list[tuple[str, str]], str, parley.Agent]:
    ledger: list[tuple[str, str]] = []
    db = tmp_path / "shared.sqlite"
    a = Shop(db, "hostA:1:aaaa", ledger, slow=True)
    b = Shop(db, "hostB:1:bbbb", ledger, slow=False)
    token = grant(extra=[{"spend": {"max": 1500, "currency": "USD"}}], nonce="spend")
    return a, b, ledger, token, parley.Agent(AGENT, [token], service=SERVICE_ID)


def test_a_commit_slower_than_its_lease_keeps_it_and_runs_once(tmp_path: Path) -> None:
    a, b, ledger, token, agent = _setup(tmp_path)
    t0 = int(time.time())
    [reply] = a.svc.handle(agent.intent("shop.order", {}), now=t0)
    proposal = reply["proposals"][0]
    thread, out = _run(lambda: a.svc.handle(agent.commit(proposal), now=t0))
    assert a.entered.wait(30)
    store = parley.stores.SQLiteStore(str(tmp_path / "shared.sqlite"))
    _renewed(store, "commit", proposal["id"], t0 + LEASE + 1)
    # later than the lease first taken, but the owner is alive and renewing it
    retry = b.svc.handle(agent.commit(proposal), now=t0 + LEASE + 1)[-1]
    a.release.set()
    thread.join(30)
    assert retry["kind"] == "ERROR", retry
    assert (retry["code"], retry["reason"]) == ("conflict", "busy")
    assert out["reply"][-1]["kind"] == "RECEIPT"
    assert ledger == [("commit", proposal["id"])]
    block = parley.decode_grant(token).block_ids[-1]
    assert store.spent([block]) == {block: 1000}
    done = store.receipt_for(proposal["id"])
    assert done is not None
    assert done.amount == 1000
    assert store.leases("commit") == []


def test_a_commit_finishing_after_its_claim_was_released_still_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, ledger, token, agent = _setup(tmp_path)
    t0 = int(time.time())
    [reply] = a.svc.handle(agent.intent("shop.order", {}), now=t0)
    proposal = reply["proposals"][0]
    thread, out = _run(lambda: a.svc.handle(agent.commit(proposal), now=t0))
    assert a.entered.wait(30)
    # far past any renewal (a paused owner, a skewed clock): B settles it as not happened
    outcome: list[dict[str, str]] = []
    for _ in range(50):  # a renewal racing the take-over makes it answer busy: again
        outcome = b.svc.recover(now=t0 + 1000)
        if outcome and outcome[0]["outcome"] != "busy":
            break
    assert outcome == [{"kind": "commit", "id": proposal["id"], "outcome": "released"}]
    store = parley.stores.SQLiteStore(str(tmp_path / "shared.sqlite"))
    block = parley.decode_grant(token).block_ids[-1]
    assert store.spent([block]) == {block: 0}
    with caplog.at_level(logging.WARNING, logger="parley"):
        a.release.set()
        thread.join(30)
    assert out["reply"][-1]["kind"] == "RECEIPT"
    assert ledger == [("commit", proposal["id"])]
    done = store.receipt_for(proposal["id"])
    assert done is not None
    assert done.amount == 1000  # never 0: the effect took place
    assert store.spent([block]) == {block: 1000}
    assert "after its claim was taken over" in caplog.text  # flagged for the operator
    # the 1,500 cap holds: a second 1,000 is refused before anything runs
    [again] = a.svc.handle(agent.intent("shop.order", {}), now=t0 + 2)
    refused = a.svc.handle(agent.commit(again["proposals"][0]), now=t0 + 2)[-1]
    assert (refused["kind"], refused["code"]) == ("ERROR", "consent_required"), refused
    assert "spend" in refused["message"]
    assert len(ledger) == 1


def test_an_undo_slower_than_its_lease_keeps_it_and_runs_once(tmp_path: Path) -> None:
    a, b, ledger, _token, agent = _setup(tmp_path)
    t0 = int(time.time())
    a.release.set()
    [reply] = a.svc.handle(agent.intent("shop.order", {}), now=t0)
    receipt = a.svc.handle(agent.commit(reply["proposals"][0]), now=t0)[-1]["receipt"]
    a.release.clear()
    a.entered.clear()
    thread, out = _run(lambda: a.svc.handle(agent.undo(receipt["id"]), now=t0))
    assert a.entered.wait(30)
    store = parley.stores.SQLiteStore(str(tmp_path / "shared.sqlite"))
    _renewed(store, "undo", receipt["id"], t0 + LEASE + 1)
    retry = b.svc.handle(agent.undo(receipt["id"]), now=t0 + LEASE + 1)[-1]
    a.release.set()
    thread.join(30)
    assert (retry["kind"], retry.get("reason")) == ("ERROR", "busy"), retry
    assert out["reply"][-1]["receipt"]["undoes"] == receipt["id"]
    assert ledger == [("commit", receipt["proposal"]), ("undo", receipt["id"])]
    assert store.leases("undo") == []


class _PrunedUnderTheClaim(parley.stores.SQLiteStore):
    """This replica's store; another replica prunes the receipt just before the claim."""

    def __init__(self, path: str, prune: Any) -> None:
        super().__init__(path)
        self._prune = prune

    def begin_undo(self, receipt_id: str, *, lease: parley.stores.Lease | None = None) -> Any:
        self._prune()
        return super().begin_undo(receipt_id, lease=lease)


def test_an_undo_whose_receipt_is_pruned_meanwhile_refunds_nothing(tmp_path: Path) -> None:
    # review pg2 #2: the other replica, its clock past the undo window, prunes the receipt
    # between this replica's checks and its claim; the claim must not read "new"
    ledger: list[tuple[str, str]] = []
    db = tmp_path / "shared.sqlite"
    shop = Shop(db, "hostA:1:aaaa", ledger, slow=False)
    token = grant(extra=[{"spend": {"max": 1500, "currency": "USD"}}], nonce="spend")
    agent = parley.Agent(AGENT, [token], service=SERVICE_ID)
    t0 = int(time.time())
    [reply] = shop.svc.handle(agent.intent("shop.order", {}), now=t0)
    receipt = shop.svc.handle(agent.commit(reply["proposals"][0]), now=t0)[-1]["receipt"]
    ahead = parley.stores.SQLiteStore(str(db), max_receipts=1)
    pruning = _PrunedUnderTheClaim(
        str(db), lambda: ahead.begin_commit("p_ahead", [], 0, "USD", now=t0 + 3601)
    )
    shop.svc.store.close()  # type: ignore[attr-defined]
    shop.svc.store = pruning
    try:
        answer = shop.svc.handle(agent.undo(receipt["id"]), now=t0 + 1)[-1]
        assert (answer["kind"], answer.get("reason")) == ("ERROR", "unknown_receipt"), answer
        assert ledger == [("commit", receipt["proposal"])]  # no refund ran
        assert ahead.receipt(receipt["id"]) is None
        assert ahead.leases("undo") == []
    finally:
        pruning.close()
        ahead.close()
