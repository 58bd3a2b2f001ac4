"""One contract for every Parley state store: memory, SQLite and PostgreSQL alike (issue 23).

Each test runs against the three stores through the :class:`parley.stores.Store` interface only.
``Stores.open()`` gives another handle on the same state (another connection for SQLite
and PostgreSQL, which stands for another service replica; the same object for memory).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import parley
from parley.grants import SpendCap
from parley.stores import Lease, ProposalRecord, ReceiptRecord

NOW = 1_790_000_000
USD = "USD"


class Stores:
    """Opens handles on one state of one kind; closes them all at the end."""

    def __init__(self, kind: str, where: str) -> None:
        self.kind = kind
        self.where = where
        self.opened: list[Any] = []
        self._memory: parley.stores.Store | None = None

    def open(self, **limits: int) -> parley.stores.Store:
        """A handle on the shared state (``limits``: the store's size caps)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = parley.stores.MemoryStore(**limits)
            return self._memory
        if self.kind == "sqlite":
            store: Any = parley.stores.SQLiteStore(self.where, **limits)
        else:
            store = parley.stores.PostgresStore(self.where, **limits)
        self.opened.append(store)
        return store  # type: ignore[no-any-return]

    def close(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    if request.param == "postgresql":
        where = request.getfixturevalue("postgres_url")
    elif request.param == "sqlite":
        where = str(tmp_path / "state.sqlite")
    else:
        where = ""
    found = Stores(request.param, where)
    yield found
    found.close()


def proposal(pid: str, *, expires: int = NOW + 300, key: str | None = "k1") -> ProposalRecord:
    return ProposalRecord({"id": pid, "expires": expires, "hash": "h-" + pid}, key, "root")


def receipt(pid: str, *, at: int = NOW, undo_until: int | None = NOW + 900) -> ReceiptRecord:
    body: dict[str, Any] = {
        "id": "r_" + pid,
        "proposal": pid,
        "at": at,
        "undo": None if undo_until is None else {"until": undo_until},
    }
    return ReceiptRecord(body, "k1", "root", "h-" + pid)


def cap(block: str = "b1", most: int = 1000, currency: str = USD) -> SpendCap:
    return SpendCap(block, most, currency)


def lease(owner: str, until: int = NOW + 60) -> Lease:
    return Lease(owner, NOW, until, "k1", "root", "h")


# ---------------------------------------------------------------- proposals


def test_proposals_are_kept_until_their_grace_runs_out(stores: Stores) -> None:
    store = stores.open()
    store.add_proposal(proposal("p1", expires=NOW + 10), now=NOW)
    got = store.proposal("p1", now=NOW)
    assert got is not None
    assert got.as_json() == proposal("p1", expires=NOW + 10).as_json()
    assert stores.open().proposal("p1", now=NOW + 10 + 599) is not None  # expired, still known
    assert store.proposal("p1", now=NOW + 10 + 600) is None
    assert store.proposal("nope", now=NOW) is None


def test_a_full_pool_forgets_its_oldest_open_proposal_never_one_in_flight(stores: Stores) -> None:
    store = stores.open(max_proposals=2, max_anonymous=1)
    store.add_proposal(proposal("p1"), now=NOW)
    assert store.begin_commit("p1", [], 0, USD, now=NOW, lease=lease("A")) == "new"
    store.add_proposal(proposal("p2"), now=NOW)
    store.add_proposal(proposal("p3"), now=NOW)  # p2 goes, p1 is being committed
    assert store.proposal("p1", now=NOW) is not None
    assert store.proposal("p2", now=NOW) is None
    assert store.proposal("p3", now=NOW) is not None
    # the anonymous pool pushes out only its own
    store.add_proposal(proposal("a1", key=None), now=NOW)
    store.add_proposal(proposal("a2", key=None), now=NOW)
    assert store.proposal("a1", now=NOW) is None
    assert store.proposal("a2", now=NOW) is not None
    assert store.proposal("p3", now=NOW) is not None


def test_a_pool_full_of_commits_in_flight_refuses_with_limit(stores: Stores) -> None:
    store = stores.open(max_proposals=1)
    store.add_proposal(proposal("p1"), now=NOW)
    store.begin_commit("p1", [], 0, USD, now=NOW)
    with pytest.raises(parley.ParleyError) as caught:
        store.add_proposal(proposal("p2"), now=NOW)
    assert (caught.value.code, caught.value.reason) == ("limit", "store_full")


# ---------------------------------------------------------------- commit + spend


def test_commit_claims_reserves_and_finishes_once(stores: Stores) -> None:
    store, other = stores.open(), stores.open()
    store.add_proposal(proposal("p1"), now=NOW)
    assert store.begin_commit("p1", [cap()], 300, USD, now=NOW, lease=lease("A")) == "new"
    assert other.begin_commit("p1", [cap()], 300, USD, now=NOW) == "busy"
    assert other.spent(["b1"]) == {"b1": 300}
    assert other.spent(["b1"], excluding="p1") == {"b1": 0}
    assert other.lease("commit", "p1") == lease("A")
    assert store.finish_commit(receipt("p1"), now=NOW, owner="A") is True
    assert other.begin_commit("p1", [cap()], 300, USD, now=NOW) == "done"
    done = other.receipt_for("p1")
    assert done is not None
    assert (done.id, done.amount, done.blocks) == ("r_p1", 300, ("b1",))
    assert other.receipt("r_p1") == done
    assert other.proposal("p1", now=NOW) is None  # a committed proposal is forgotten
    assert other.lease("commit", "p1") is None
    assert other.spent(["b1", "b2"]) == {"b1": 300, "b2": 0}
    assert other.spent(["b1"], excluding="p1") == {"b1": 0}


def test_caps_and_currencies_are_checked_against_every_block(stores: Stores) -> None:
    store = stores.open()
    caps = [cap("b1", 1000), cap("b2", 500)]
    assert store.begin_commit("p1", caps, 400, USD, now=NOW) == "new"
    for bad_caps, amount, currency in (
        (caps, 200, USD),  # b2 would pass 500
        ([cap("b1", 1000, "EUR")], 1, USD),  # the cap is in another currency
    ):
        with pytest.raises(parley.ParleyError) as caught:
            store.begin_commit("p2", bad_caps, amount, currency, now=NOW)
        assert (caught.value.code, caught.value.reason) == ("consent_required", "spend_exceeded")
    assert store.spent(["b1", "b2"]) == {"b1": 400, "b2": 400}  # nothing half-applied
    assert store.lease("commit", "p2") is None
    assert store.begin_commit("p2", caps, 100, USD, now=NOW) == "new"
    assert store.spent(["b1", "b2"]) == {"b1": 500, "b2": 500}


def test_a_free_commit_reserves_nothing_and_creates_no_total(stores: Stores) -> None:
    store = stores.open()
    assert store.begin_commit("p1", [cap("b9")], 0, USD, now=NOW) == "new"
    assert store.finish_commit(receipt("p1"), now=NOW) is True
    assert store.spent(["b9"]) == {"b9": 0}
    done = store.receipt_for("p1")
    assert done is not None
    assert (done.amount, done.blocks) == (0, ())


def test_abort_releases_the_reservation_only_for_its_owner(stores: Stores) -> None:
    store, other = stores.open(), stores.open()
    store.begin_commit("p1", [cap()], 300, USD, now=NOW, lease=lease("A"))
    other.abort_commit("p1", owner="B")  # not B's: nothing happens
    assert store.spent(["b1"]) == {"b1": 300}
    store.abort_commit("p1", owner="A")
    assert other.spent(["b1"]) == {"b1": 0}
    assert other.lease("commit", "p1") is None
    assert other.begin_commit("p1", [cap()], 300, USD, now=NOW) == "new"
    other.abort_commit("p1")  # no owner given: always
    assert store.spent(["b1"]) == {"b1": 0}


def test_a_late_finisher_never_counts_zero(stores: Stores) -> None:
    store = stores.open()
    # released meanwhile, yet the effect took place: the receipt is stored and counted
    store.begin_commit("p1", [cap()], 300, USD, now=NOW, lease=lease("A"))
    store.abort_commit("p1")
    assert store.finish_commit(receipt("p1"), now=NOW, owner="A") is False
    assert store.spent(["b1"]) == {"b1": 0}  # the record given carried no amount
    late = ReceiptRecord(receipt("p2").receipt, "k1", "root", "h-p2", 200, ("b1",))
    store.begin_commit("p2", [cap()], 200, USD, now=NOW, lease=lease("A"))
    store.abort_commit("p2")
    assert store.finish_commit(late, now=NOW, owner="A") is False
    assert store.spent(["b1"]) == {"b1": 200}
    # reconciled meanwhile (another receipt at another time): that one stays, and the
    # effect that ran twice is counted twice
    store.begin_commit("p3", [cap()], 100, USD, now=NOW, lease=lease("A"))
    store.finish_commit(receipt("p3", at=NOW + 5), now=NOW)
    again = ReceiptRecord(receipt("p3").receipt, "k1", "root", "h-p3", 100, ("b1",))
    assert store.finish_commit(again, now=NOW, owner="A") is False
    kept = store.receipt_for("p3")
    assert kept is not None
    assert kept.receipt["at"] == NOW + 5
    assert store.spent(["b1"]) == {"b1": 400}


def test_take_over_is_a_compare_and_swap(stores: Stores) -> None:
    store, other = stores.open(), stores.open()
    store.begin_commit("p1", [cap()], 100, USD, now=NOW, lease=lease("A", NOW))
    stale = lease("A", NOW)
    assert other.take_over("commit", "p1", stale, lease("B")) is True
    assert store.take_over("commit", "p1", stale, lease("C")) is False  # B took it first
    assert store.lease("commit", "p1") == lease("B")
    assert store.finish_commit(receipt("p1"), now=NOW, owner="A") is False  # A lost it
    assert store.take_over("commit", "gone", stale, lease("C")) is False
    assert [s for s, _ in other.leases("commit")] == []


def test_receipts_inside_their_undo_window_are_never_forgotten(stores: Stores) -> None:
    store = stores.open(max_receipts=2)
    for pid in ("p1", "p2"):
        store.begin_commit(pid, [], 0, USD, now=NOW)
        store.finish_commit(receipt(pid), now=NOW)
    with pytest.raises(parley.ParleyError) as caught:
        store.begin_commit("p3", [], 0, USD, now=NOW)
    assert (caught.value.code, caught.value.reason) == ("limit", "store_full")
    # once the undo windows have closed, the oldest receipt makes room
    assert store.begin_commit("p3", [], 0, USD, now=NOW + 901) == "new"
    assert store.receipt("r_p1") is None
    assert store.receipt("r_p2") is not None


# ---------------------------------------------------------------- undo


def test_undo_claims_finishes_and_releases(stores: Stores) -> None:
    store, other = stores.open(), stores.open()
    store.begin_commit("p1", [cap()], 100, USD, now=NOW)
    store.finish_commit(receipt("p1"), now=NOW)
    assert store.begin_undo("r_p1", lease=lease("A")) == "new"
    assert other.begin_undo("r_p1") == "busy"
    assert other.lease("undo", "r_p1") == lease("A")
    assert other.leases("undo") == [("r_p1", lease("A"))]
    other.abort_undo("r_p1", owner="B")  # not B's
    assert store.lease("undo", "r_p1") == lease("A")
    store.abort_undo("r_p1", owner="A")
    assert store.lease("undo", "r_p1") is None
    assert other.begin_undo("r_p1", lease=lease("B")) == "new"
    reversal = {"id": "r_undo", "undoes": "r_p1"}
    assert other.finish_undo("r_p1", reversal, "k2", owner="B") is True
    assert store.begin_undo("r_p1") == "done"
    done = store.receipt("r_p1")
    assert done is not None
    assert (done.undo, done.undo_key) == (reversal, "k2")
    # a late finisher's reversal does not replace the recorded one
    assert store.finish_undo("r_p1", {"id": "other"}, "k3", owner="A") is False
    kept = store.receipt("r_p1")
    assert kept is not None
    assert kept.undo == reversal
    assert store.spent(["b1"]) == {"b1": 100}  # v1: an undo gives no spend back


def test_undo_of_a_receipt_that_is_gone_is_refused_not_claimed(stores: Stores) -> None:
    # review pg2 #2: a receipt pruned under a claim must not read "new" (the refund would
    # run with no receipt left to record its reversal)
    store, other = stores.open(max_receipts=1), stores.open(max_receipts=1)
    store.begin_commit("p1", [], 0, USD, now=NOW)
    store.finish_commit(receipt("p1"), now=NOW)
    assert other.begin_commit("p2", [], 0, USD, now=NOW + 901) == "new"  # prunes r_p1
    assert store.receipt("r_p1") is None
    assert store.begin_undo("r_p1", lease=lease("A")) == "gone"
    assert other.begin_undo("never-issued") == "gone"
    assert store.lease("undo", "r_p1") is None
    assert store.leases("undo") == []


# ---------------------------------------------------------------- auto replay memory


def test_auto_memory_claims_links_and_replays(stores: Stores) -> None:
    store, other = stores.open(), stores.open()
    assert store.begin_auto("k1", "f1", now=NOW, lease=lease("A")) == "new"
    assert other.begin_auto("k1", "f1", now=NOW) == "busy"
    store.link_auto("k1", "f1", "p9")
    claims = other.auto_claims()
    assert [(c.key, c.frame, c.lease, c.proposal) for c in claims] == [
        ("k1", "f1", lease("A"), "p9")
    ]
    reply = {"kind": "RECEIPT", "receipt": {"id": "r1"}}
    store.finish_auto("k1", "f1", reply, now=NOW)
    assert other.begin_auto("k1", "f1", now=NOW + 600) == reply  # through `until` inclusive
    assert other.auto_claims() == []
    assert other.begin_auto("k1", "f1", now=NOW + 601) == "new"  # forgotten after
    other.abort_auto("k1", "f1")
    assert store.begin_auto("k1", "f1", now=NOW + 601) == "new"
    store.abort_auto("k1", "f1")
    store.finish_auto("k1", "f2", reply, now=NOW)
    store.abort_auto("k1", "f2")  # a finished reply is not dropped by abort
    assert store.begin_auto("k1", "f2", now=NOW) == reply


def test_auto_memory_full_of_live_entries_refuses(stores: Stores) -> None:
    store = stores.open(max_replay=2)
    store.begin_auto("k", "a", now=NOW)
    store.finish_auto("k", "b", {"kind": "ANSWER"}, now=NOW)
    with pytest.raises(parley.ParleyError) as caught:
        store.begin_auto("k", "c", now=NOW)
    assert (caught.value.code, caught.value.reason) == ("limit", "store_full")
    assert store.begin_auto("k", "c", now=NOW + 700) == "new"  # expired ones make room


def test_ids_with_any_characters_round_trip(stores: Stores) -> None:
    store = stores.open()
    odd = ["nul\x00id", "back\\slash", "\\0", "émoji 🙂", "a\x1fb"]
    for n, frame in enumerate(odd):
        assert store.begin_auto("key\x00" + frame, frame, now=NOW, lease=lease(str(n))) == "new"
    assert [(c.key, c.frame) for c in store.auto_claims()] == [("key\x00" + f, f) for f in odd]
    assert store.begin_auto("key\x00nul", "nul", now=NOW) == "new"  # a distinct id
    for n, pid in enumerate(odd):
        assert store.begin_commit(pid, [cap(pid)], 1, USD, now=NOW, lease=lease(str(n))) == "new"
    assert [s for s, _ in store.leases("commit")] == odd
    assert store.spent(odd) == dict.fromkeys(odd, 1)


# ---------------------------------------------------------------- handles


def test_handles_are_bound_to_their_key_and_expire(stores: Stores) -> None:
    store, other = stores.open(), stores.open()
    store.handles.put("h_1", {"rows": [1, 2]}, key="k1", now=NOW, ttl=600)
    store.handles.put("h_anon", [3], key=None, now=NOW, ttl=600)
    assert other.handles.get("h_1", key="k1", now=NOW + 599) == {"rows": [1, 2]}
    assert other.handles.get("h_anon", key="k9", now=NOW) == [3]
    for handle, key in (("h_1", "k2"), ("h_1", None), ("h_none", "k1")):
        with pytest.raises(parley.ParleyError) as caught:
            other.handles.get(handle, key=key, now=NOW)
        assert caught.value.code == "not_found"
    with pytest.raises(parley.ParleyError) as expired:
        other.handles.get("h_1", key="k1", now=NOW + 600)
    assert expired.value.code == "expired"


# ---------------------------------------------------------------- concurrency, fixtures


def test_concurrent_commits_on_many_handles_never_pass_the_cap(stores: Stores) -> None:
    """64 threads, each with its own handle (connection), race for one cap of 10 commits."""
    handles = [stores.open() for _ in range(64)]
    results: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(64)

    def go(n: int) -> None:
        store = handles[n]
        start.wait()
        try:
            got = store.begin_commit(f"p{n}", [cap("b1", 1000)], 100, USD, now=NOW)
            store.finish_commit(receipt(f"p{n}"), now=NOW)
        except parley.ParleyError as exc:
            got = exc.reason or exc.code
        with lock:
            results.append(got)

    threads = [threading.Thread(target=go, args=(n,)) for n in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(set(results)) == ["new", "spend_exceeded"]
    assert results.count("new") == 10
    assert handles[0].spent(["b1"]) == {"b1": 1000}


def test_one_proposal_raced_by_many_handles_is_claimed_once(stores: Stores) -> None:
    """32 replicas commit the same proposal at once: one claim, the others busy or done."""
    handles = [stores.open() for _ in range(32)]
    results: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(32)

    def go(n: int) -> None:
        store = handles[n]
        start.wait()
        got = store.begin_commit("p1", [cap()], 100, USD, now=NOW, lease=lease(str(n)))
        if got == "new":
            store.finish_commit(receipt("p1"), now=NOW, owner=str(n))
        with lock:
            results.append(got)

    threads = [threading.Thread(target=go, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert results.count("new") == 1
    assert set(results) <= {"new", "busy", "done"}
    assert handles[0].spent(["b1"]) == {"b1": 100}


def test_load_state_fills_any_store(stores: Stores) -> None:
    store = stores.open()
    state: dict[str, Any] = {
        "proposals": [proposal("p1").as_json()],
        "spent": {"b1": 250},
        "receipts": [
            ReceiptRecord(receipt("p0").receipt, "k1", "root", "h", 50, ("b1",)).as_json()
        ],
        "inflight": [{"proposal": "p1", "amount": 25, "blocks": ["b1"], "lease": {"owner": "A"}}],
        "replay": [{"key": "k1", "id": "f1", "reply": None, "lease": {"owner": "A"}}],
        "handles": [{"handle": "h_x", "key": "k1", "value": [1], "expires": NOW + 60}],
    }
    parley.stores.load_state(store, state, now=NOW)
    assert store.spent(["b1"]) == {"b1": 325}
    assert [s for s, _ in store.leases("commit")] == ["p1"]
    assert [c.frame for c in store.auto_claims()] == ["f1"]
    assert store.handles.get("h_x", key="k1", now=NOW) == [1]
    assert store.receipt("r_p0") is not None


StoreFactory = Callable[..., parley.stores.Store]
